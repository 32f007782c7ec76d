#!/usr/bin/env bash
# The site packaging of packaging/: the Spack recipe compiles, loads against
# a stand-in of Spack's API (tests/packaging/spack_stub.py; Spack is not on
# PyPI) and passes configure only options that ./configure --help lists; the
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
recipe="$WP_SRCDIR/packaging/spack/package.py"
python3 -c 'import sys, py_compile; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    "$recipe" "$out/package.pyc" > "$out/py_compile.txt" 2>&1
expect_status 0 $? "the Spack recipe compiles (python3 py_compile)"
python3 "$WP_SRCDIR/tests/packaging/spack_stub.py" "$recipe" > "$out/spack.txt" 2>&1
expect_status 0 $? "the Spack recipe loads, and its configure_args run for ~cuda and +cuda specs"
for dep in mpi hwloc@2.5: pmix@4: libconfig@1.5: blas nccl help2man; do
    if grep -qx "directive depends_on $dep" "$out/spack.txt"; then pass "Spack: depends_on $dep"
    else fail "Spack: no depends_on $dep"; fi
done
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
