"""A stand-in for Spack's package API, enough to load the wavepipe recipe
(packaging/spack/spack_repo/wavepipe/packages/wavepipe/package.py) outside
Spack for tests/packaging.sh. It emulates where either generation of Spack
keeps the build-system classes:

  1.x   package API v2: AutotoolsPackage and CudaPackage only in
        spack_repo.builtin.build_systems.autotools / .cuda (the builtin
        package repository); spack.package has the directives but not them
  0.23  spack.package exports them, and there is no spack_repo module

It records the recipe's directives, works out which depends_on and
conflicts hold for a few specs (their `when` conditions evaluated against
the spec: +v, ~v and v=a,b constraints, a multi-valued variant satisfying
v=a when a is among its values), and runs configure_args() for them,
printing the arguments one a line so the test can check them against
./configure --help.

usage: spack_stub.py 1.x|0.23 PACKAGE.py
"""
import importlib.util
import sys
import types

directives = []

# the GPU architectures a stand-in CudaPackage offers (Spack's list is longer
# and changes with CUDA releases; the recipe must cover whatever it holds)
CUDA_ARCH_VALUES = ("60", "70", "75", "80", "86", "89", "90", "90a", "100", "120")


def _directive(kind):
    def record(*args, **kwargs):
        directives.append((kind, args, kwargs))
    return record


class InstallError(Exception):
    pass


class AutotoolsPackage:
    def __init__(self, spec):
        self.spec = spec
        self.configure_abs_path = "configure"


class CudaPackage:
    cuda_arch_values = CUDA_ARCH_VALUES


def run_after(phase):
    return lambda f: f


def on_package_attributes(**attrs):
    return lambda f: f


class Executable:
    def __init__(self, path):
        self.path = path

    def __call__(self, *args):
        raise AssertionError("the stub runs no programs")


def join_path(*parts):
    return "/".join(parts)


class _Dep:
    def __init__(self, name, prefix):
        self.name, self.prefix = name, prefix
        self.mpicc, self.mpicxx = prefix + "/bin/mpicc", prefix + "/bin/mpicxx"


class _Variant:
    def __init__(self, value):
        self.value = value


class Spec:
    """+cuda or ~cuda, a BLAS provider, cuda_arch values."""

    def __init__(self, cuda, blas, cuda_arch=("none",)):
        self.cuda, self.blas = cuda, blas
        self.variants = {"cuda_arch": _Variant(tuple(cuda_arch))}

    def __str__(self):
        s = "+cuda cuda_arch=%s" % ",".join(self.variants["cuda_arch"].value) if self.cuda else "~cuda"
        return "%s ^%s" % (s, self.blas)

    def satisfies(self, constraint):
        """Whether every +v, ~v and v=a,b of CONSTRAINT holds (the stub knows
        the variants cuda and cuda_arch only)."""
        for token in constraint.split():
            if token in ("+cuda", "~cuda"):
                if (token == "+cuda") != self.cuda:
                    return False
            elif token.startswith("cuda_arch="):
                have = self.variants["cuda_arch"].value
                if not all(v in have for v in token.split("=", 1)[1].split(",")):
                    return False
            else:
                raise AssertionError("the stub knows no constraint %r" % token)
        return True

    def __getitem__(self, name):
        provider = {"blas": self.blas, "mpi": "mpich", "cuda": "cuda"}.get(name, name)
        return _Dep(provider, "/opt/spack/" + provider)


def _install_stub(spack_version):
    """Puts modules spack and spack.package (and, for 1.x, spack_repo.builtin.
    build_systems.autotools and .cuda) in sys.modules; the build-system classes
    are made afresh, named after the module that defines them in that Spack."""
    for name in [m for m in sys.modules if m == "spack" or m.startswith(("spack.", "spack_repo"))]:
        del sys.modules[name]
    spack = types.ModuleType("spack")
    pkg = types.ModuleType("spack.package")
    for kind in ("version", "variant", "depends_on", "conflicts", "requires", "provides", "patch",
                 "license", "maintainers", "resource"):
        setattr(pkg, kind, _directive(kind))
    for name, obj in (("InstallError", InstallError), ("run_after", run_after),
                      ("on_package_attributes", on_package_attributes), ("Executable", Executable),
                      ("join_path", join_path)):
        setattr(pkg, name, obj)
    home = "spack_repo.builtin.build_systems" if spack_version == "1.x" else "spack.build_systems"
    classes = {sub: type(cls.__name__, (cls,), {"__module__": "%s.%s" % (home, sub)})
               for sub, cls in (("autotools", AutotoolsPackage), ("cuda", CudaPackage))}
    if spack_version == "0.23":
        pkg.AutotoolsPackage, pkg.CudaPackage = classes["autotools"], classes["cuda"]
    pkg.__all__ = [n for n in vars(pkg) if not n.startswith("_")]
    spack.package = pkg
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = pkg
    if spack_version == "1.x":
        parent = None
        for name in ("spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
            mod = types.ModuleType(name)
            mod.__path__ = []  # a package, so that its submodules import
            sys.modules[name] = mod
            if parent is not None:
                setattr(parent, name.rsplit(".", 1)[1], mod)
            parent = mod
        for sub, cls in classes.items():
            mod = types.ModuleType(cls.__module__)
            setattr(mod, cls.__name__, cls)
            sys.modules[mod.__name__] = mod
            setattr(parent, sub, mod)


def holding(kind, spec):
    """The KIND directives whose when= holds for SPEC, as 'first argument'
    strings; a conflict only where SPEC also satisfies the conflicting
    constraint itself."""
    return [str(args[0]) for k, args, kw in directives
            if k == kind and spec.satisfies(kw.get("when", ""))
            and (kind != "conflicts" or spec.satisfies(args[0]))]


def main(spack_version, path):
    sys.dont_write_bytecode = True  # no __pycache__ beside the recipe
    _install_stub(spack_version)
    spec = importlib.util.spec_from_file_location("wavepipe_recipe", path)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    cls = recipe.Wavepipe
    print("spack %s" % spack_version)
    for base in cls.__bases__:
        print("base %s from %s" % (base.__name__, base.__module__))
    for kind, args, kwargs in directives:
        when = " when %s" % kwargs["when"] if "when" in kwargs else ""
        print("directive %s %s%s" % (kind, " ".join(str(a) for a in args), when))
    cases = (Spec(False, "openblas"), Spec(False, "flexiblas"), Spec(True, "openblas", ("80", "90")),
             Spec(True, "openblas", ("86",)), Spec(True, "openblas"))
    for case in cases:
        for dep in holding("depends_on", case):
            print("case %s: needs %s" % (case, dep))
        for conflict in holding("conflicts", case):
            print("case %s: conflict %s" % (case, conflict))
        if not case.cuda or case.variants["cuda_arch"].value != ("none",):
            for arg in cls(case).configure_args():
                print("arg %s" % arg)
    # every GPU architecture the spec can name gets an NCCL built for it
    for arch in CudaPackage.cuda_arch_values:
        want = "nccl +cuda cuda_arch=%s" % arch
        if want in holding("depends_on", Spec(True, "openblas", (arch,))):
            print("nccl follows cuda_arch=%s" % arch)
        else:
            print("nccl does not follow cuda_arch=%s" % arch)
    try:
        cls(Spec(False, "netlib-lapack")).configure_args()
        print("error: a BLAS without a known CBLAS module was accepted")
        return 1
    except InstallError as e:
        print("refused %s" % e)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("1.x", "0.23"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
