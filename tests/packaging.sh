#!/usr/bin/env bash
# The site packaging of packaging/: the Spack package repository has the
# layout of Spack 1.x (package API v2); its recipe compiles, loads against a
# stand-in of Spack's API (tests/packaging/spack_stub.py; Spack is not on
# PyPI) where Spack 1.x and where 0.23 keep the build systems, asks for an
# NCCL built for each cuda_arch asked of it, and passes configure only
# options that ./configure --help lists; packaging/README.md adds that
# repository and runs `spack develop` in an environment; the
# EasyBuild easyconfigs pass EasyBuild's own style check and a dry run that
# resolves every dependency against EasyBuild's easyconfigs (offline, Lmod
# as the modules tool), and their configure options exist too. Skipped (77)
# when EasyBuild is not installed (scripts/install-deps installs it).
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
configure="$WP_SRCDIR/configure"
"$configure" --help > "$out/configure-help.txt"
expect_status 0 $? "./configure --help"

# configure_knows ARG: whether ./configure --help lists the option or variable ARG
configure_knows() {
    local opt=${1%%=*}
    case $opt in
        --without-*) opt=--with-${opt#--without-} ;;
        --disable-*) opt=--enable-${opt#--disable-} ;;
        --*) ;;
        *) grep -qE "^  $opt( |$)" "$out/configure-help.txt"; return ;;
    esac
    grep -qE -- "^  $opt(\[?=| |$)" "$out/configure-help.txt"
}

# ---- Spack -----------------------------------------------------------------------
# The package repository, in the layout of Spack's package API v2 (Spack 1.x):
# spack_repo/<namespace>/repo.yaml naming that namespace and an api v2.x,
# packages/wavepipe/package.py beside it
repo="$WP_SRCDIR/packaging/spack/spack_repo/wavepipe"
recipe="$repo/packages/wavepipe/package.py"
if [ -f "$repo/repo.yaml" ] && [ -f "$recipe" ]; then
    pass "Spack: packaging/spack/spack_repo/wavepipe has repo.yaml and packages/wavepipe/package.py"
else
    fail "Spack: no repo.yaml or packages/wavepipe/package.py in $repo"
fi
if grep -qE '^  api: v2\.[0-9]+$' "$repo/repo.yaml"; then pass "Spack: repo.yaml declares package API v2"
else fail "Spack: repo.yaml declares no package API v2.x"; sed 's/^/    | /' "$repo/repo.yaml"; fi
namespace=$(sed -n 's/^  namespace: *//p' "$repo/repo.yaml")
if [ "$namespace" = "$(basename "$repo")" ] && [ "$(basename "$(dirname "$repo")")" = spack_repo ]; then
    pass "Spack: the namespace '$namespace' is the directory under spack_repo/"
else
    fail "Spack: namespace '$namespace' does not match $repo (Spack 1.x wants spack_repo/<namespace>)"
fi
python3 -c 'import sys, py_compile; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    "$recipe" "$out/package.pyc" > "$out/py_compile.txt" 2>&1
expect_status 0 $? "the Spack recipe compiles (python3 py_compile)"
# the recipe loads where Spack 1.x keeps the build systems (the builtin
# repository's spack_repo.builtin.build_systems) and where 0.23 does (spack.package)
python3 "$WP_SRCDIR/tests/packaging/spack_stub.py" 1.x "$recipe" > "$out/spack.txt" 2>&1
expect_status 0 $? "the Spack recipe loads as Spack 1.x sees it, and its configure_args run for ~cuda and +cuda specs"
python3 "$WP_SRCDIR/tests/packaging/spack_stub.py" 0.23 "$recipe" > "$out/spack-0.23.txt" 2>&1
expect_status 0 $? "the Spack recipe loads as Spack 0.23 sees it"
expect_contains "$out/spack.txt" "base AutotoolsPackage from spack_repo.builtin.build_systems.autotools" \
    "Spack 1.x: AutotoolsPackage from spack_repo.builtin.build_systems"
expect_contains "$out/spack.txt" "base CudaPackage from spack_repo.builtin.build_systems.cuda" \
    "Spack 1.x: CudaPackage from spack_repo.builtin.build_systems"
expect_contains "$out/spack-0.23.txt" "base AutotoolsPackage from spack.build_systems.autotools" \
    "Spack 0.23: AutotoolsPackage from spack.package"
if diff <(grep -v '^spack \|^base ' "$out/spack.txt") <(grep -v '^spack \|^base ' "$out/spack-0.23.txt") \
    > "$out/spack-versions.diff"; then
    pass "Spack: the recipe declares and passes the same under 1.x and 0.23"
else
    fail "Spack: the recipe differs between 1.x and 0.23"; sed 's/^/    | /' "$out/spack-versions.diff" | head -20
fi
for dep in mpi hwloc@2.5: pmix@4: libconfig@1.5: blas help2man; do
    if grep -qx "directive depends_on $dep" "$out/spack.txt"; then pass "Spack: depends_on $dep"
    else fail "Spack: no depends_on $dep"; fi
done
# NCCL follows cuda_arch: +cuda cuda_arch=80,90 needs an NCCL built for both
nccl_of() { sed -n "s/^case $1: needs \(nccl.*\)/\1/p" "$out/spack.txt" | sort | tr '\n' ';'; }
got=$(nccl_of '+cuda cuda_arch=80,90 ^openblas')
if [ "$got" = "nccl +cuda cuda_arch=80;nccl +cuda cuda_arch=90;" ]; then
    pass "Spack +cuda cuda_arch=80,90 depends on nccl +cuda cuda_arch=80 and cuda_arch=90"
else fail "Spack +cuda cuda_arch=80,90: the nccl dependencies are '${got}'"; fi
got=$(nccl_of '+cuda cuda_arch=86 ^openblas')
if [ "$got" = "nccl +cuda cuda_arch=86;" ]; then pass "Spack +cuda cuda_arch=86 depends on nccl +cuda cuda_arch=86 only"
else fail "Spack +cuda cuda_arch=86: the nccl dependencies are '${got}'"; fi
got=$(nccl_of '~cuda ^openblas')
if [ -z "$got" ]; then pass "Spack ~cuda has no nccl dependency"
else fail "Spack ~cuda depends on '$got'"; fi
arches=$(grep -c '^nccl follows cuda_arch=' "$out/spack.txt")
if [ "$arches" -gt 0 ] && ! grep -q '^nccl does not follow' "$out/spack.txt"; then
    pass "Spack: every one of the $arches cuda_arch values asks for an NCCL built for it"
else
    fail "Spack: nccl does not follow cuda_arch:$(sed -n 's/^nccl does not follow//p' "$out/spack.txt" | tr '\n' ' ')"
fi
expect_contains "$out/spack.txt" "case +cuda cuda_arch=none ^openblas: conflict cuda_arch=none" \
    "Spack refuses +cuda without cuda_arch"
if grep -q '^case +cuda cuda_arch=80,90 ^openblas: conflict' "$out/spack.txt"; then
    fail "Spack: +cuda cuda_arch=80,90 meets a conflict"
else pass "Spack: +cuda cuda_arch=80,90 meets no conflict"; fi
expect_contains "$out/spack.txt" "arg --with-cuda=" "Spack +cuda passes --with-cuda=PREFIX"
expect_contains "$out/spack.txt" "arg NVCC_ARCH=-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90" \
    "Spack cuda_arch=80,90 becomes NVCC_ARCH"
expect_contains "$out/spack.txt" "arg --without-cuda" "Spack ~cuda passes --without-cuda"
expect_contains "$out/spack.txt" "refused wavepipe links a CBLAS" "Spack refuses a BLAS without a known CBLAS module"
unknown=
while read -r arg; do
    configure_knows "$arg" || unknown="$unknown ${arg%%=*}"
done < <(sed -n 's/^arg //p' "$out/spack.txt" | sort -u)
if [ -z "$unknown" ] && grep -q '^arg ' "$out/spack.txt"; then
    pass "every option and variable the Spack recipe passes is in ./configure --help"
else
    fail "the Spack recipe passes what ./configure does not know:${unknown:- (no arguments at all)}"
fi
# packaging/README.md: the repository it adds is this one, and `spack develop`
# runs in an environment (it refuses to run outside one)
readme="$WP_SRCDIR/packaging/README.md"
added=$(sed -n 's/^ *spack repo add \([^ ]*\).*/\1/p' "$readme" | head -n 1)
if [ -n "$added" ] && [ -f "$WP_SRCDIR/$added/repo.yaml" ] && [ "$WP_SRCDIR/$added" -ef "$repo" ]; then
    pass "packaging/README.md: spack repo add $added"
else
    fail "packaging/README.md adds no repository or another one ('$added')"
fi
if awk '/spack env activate /{env=1} /^ *spack develop /{n++; if (!env) bad=1} END{exit !(n > 0 && !bad)}' "$readme"; then
    pass "packaging/README.md activates an environment before spack develop"
else
    fail "packaging/README.md runs spack develop without an environment (or not at all)"
fi

# ---- EasyBuild ---------------------------------------------------------------------
easybuild=${WP_EASYBUILD:-/opt/wavepipe/easybuild}
if [ ! -x "$easybuild/bin/eb" ]; then
    echo "SKIP: EasyBuild not installed in $easybuild (scripts/install-deps installs it; WP_EASYBUILD moves it)"
    finish && exit 77
    exit 1
fi
: "${LMOD_CMD:=/usr/share/lmod/lmod/libexec/lmod}"
if [ ! -x "$LMOD_CMD" ]; then
    echo "SKIP: no Lmod at $LMOD_CMD, the modules tool EasyBuild needs (Debian package 'lmod'; scripts/install-deps)"
    finish && exit 77
    exit 1
fi
# EasyBuild's own Python; its state under the scratch directory, never ~/.local;
# CI runs as root, which EasyBuild refuses unless told
export EB_PYTHON="$easybuild/bin/python" LMOD_CMD EASYBUILD_MODULES_TOOL=Lmod EASYBUILD_PREFIX="$out/eb"
eb=("$easybuild/bin/eb" --allow-use-as-root-and-accept-consequences)
"${eb[@]}" --version > "$out/eb-version.txt" 2>&1
expect_status 0 $? "eb --version: $(grep -o 'EasyBuild [0-9.]*' "$out/eb-version.txt" | head -n 1)"
for ec in "$WP_SRCDIR"/packaging/easybuild/*.eb; do
    base=$(basename "$ec" .eb)
    "${eb[@]}" --check-style "$ec" > "$out/$base.style.txt" 2>&1
    expect_status 0 $? "eb --check-style $base"
    expect_contains "$out/$base.style.txt" "[PASS] $ec" "$base passes EasyBuild's style check"
    "${eb[@]}" --dry-run --robot "$ec" > "$out/$base.dry.txt" 2>&1
    expect_status 0 $? "eb --dry-run --robot $base (every dependency resolved)"
    expect_contains "$out/$base.dry.txt" "(module: wavepipe/${base#wavepipe-})" "the dry run would build $base"
    unknown=
    for arg in $(python3 -c '
import sys
ns = {"SOURCE_TAR_GZ": "", "SYSTEM": {}}
exec(open(sys.argv[1]).read(), ns)
for o in ns.get("configopts", "").split():
    if o.startswith("--"):
        print(o)' "$ec"); do
        configure_knows "$arg" || unknown="$unknown $arg"
    done
    if [ -z "$unknown" ]; then pass "$base: every configure option is in ./configure --help"
    else fail "$base passes configure options it does not know:$unknown"; fi
done
expect_contains "$WP_SRCDIR/packaging/easybuild/wavepipe-0.1.0-foss-2025b-CUDA-12.9.1.eb" "--with-cuda=" \
    "the CUDA easyconfig builds --with-cuda"

finish
