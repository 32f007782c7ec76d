"""A stand-in for Spack's package API, enough to load packaging/spack/package.py
outside Spack (tests/packaging.sh): it records the recipe's directives and
runs its configure_args() for a few specs, printing the arguments one a line
so the test can check them against ./configure --help.

usage: spack_stub.py PACKAGE.py
"""
import importlib.util
import sys
import types

directives = []


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
    pass


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

    def satisfies(self, constraint):
        if constraint == "+cuda":
            return self.cuda
        if constraint == "~cuda":
            return not self.cuda
        raise AssertionError("the stub knows no constraint %r" % constraint)

    def __getitem__(self, name):
        provider = {"blas": self.blas, "mpi": "mpich", "cuda": "cuda"}.get(name, name)
        return _Dep(provider, "/opt/spack/" + provider)


def _install_stub():
    spack = types.ModuleType("spack")
    pkg = types.ModuleType("spack.package")
    for kind in ("version", "variant", "depends_on", "conflicts", "requires", "provides", "patch",
                 "license", "maintainers", "resource"):
        setattr(pkg, kind, _directive(kind))
    for name, obj in (("AutotoolsPackage", AutotoolsPackage), ("CudaPackage", CudaPackage),
                      ("InstallError", InstallError), ("run_after", run_after),
                      ("on_package_attributes", on_package_attributes), ("Executable", Executable),
                      ("join_path", join_path)):
        setattr(pkg, name, obj)
    pkg.__all__ = [n for n in vars(pkg) if not n.startswith("_")]
    spack.package = pkg
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = pkg


def main(path):
    sys.dont_write_bytecode = True  # no __pycache__ beside the recipe
    _install_stub()
    spec = importlib.util.spec_from_file_location("wavepipe_recipe", path)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    cls = recipe.Wavepipe
    for kind, args, _ in directives:
        print("directive %s %s" % (kind, " ".join(str(a) for a in args)))
    for case in (Spec(False, "openblas"), Spec(False, "flexiblas"), Spec(True, "openblas", ("80", "90"))):
        for arg in cls(case).configure_args():
            print("arg %s" % arg)
    try:
        cls(Spec(False, "netlib-lapack")).configure_args()
        print("error: a BLAS without a known CBLAS module was accepted")
        return 1
    except InstallError as e:
        print("refused %s" % e)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
