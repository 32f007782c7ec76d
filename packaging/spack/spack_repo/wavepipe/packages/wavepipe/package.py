# wavepipe for Spack sites: an AutotoolsPackage with a cuda variant (and
# cuda_arch, from CudaPackage); the MPI, the BLAS and Slurm are the site's
# (packages.yaml: providers and externals). This file is the one package of
# the package repository packaging/spack/spack_repo/wavepipe (package API
# v2: `spack repo add packaging/spack/spack_repo/wavepipe`). No release is
# published yet: build a checkout or an unpacked `make dist` tarball with
# `spack develop` in an environment (packaging/README.md).
import os

from spack.package import *

# Spack 1.x (package API v2) keeps the build-system classes in the builtin
# package repository; Spack 0.23 and older export them from spack.package,
# and have no spack_repo module at all.
try:
    from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ModuleNotFoundError as e:
    if e.name not in ("spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
        raise
    from spack.package import AutotoolsPackage, CudaPackage


class Wavepipe(AutotoolsPackage, CudaPackage):
    """Plans, runs and measures pipeline- and hybrid-parallel training of large
    models on GPU clusters run by Slurm: cluster discovery (hwloc, PMIx, MPI),
    network calibration, planning (DAPPLE, AutoDDL, Ada-Grouper), pipeline
    schedules and their simulator, GPT-2 training over MPI or NCCL, and
    scaling campaigns through sbatch."""

    version("0.1.0")

    # a checkout has no configure (autogen.sh) and no man pages (help2man)
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("m4", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("help2man", type="build")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("mpi")
    depends_on("hwloc@2.5:")
    depends_on("pmix@4:")
    depends_on("libconfig@1.5:")
    depends_on("blas")
    # NCCL built for the same GPUs: one dependency per value of cuda_arch,
    # since a bare depends_on("nccl") leaves nccl's own cuda_arch unset (and
    # nccl refuses cuda_arch=none)
    for arch in CudaPackage.cuda_arch_values:
        depends_on("nccl +cuda cuda_arch=%s" % arch, when="+cuda cuda_arch=%s" % arch)
    del arch

    conflicts("cuda_arch=none", when="+cuda", msg="wavepipe +cuda needs cuda_arch (e.g. cuda_arch=80,90)")

    # the BLAS providers whose pkg-config module gives cblas.h (--with-cblas)
    cblas_modules = {"openblas": "openblas", "flexiblas": "flexiblas"}

    def autoreconf(self, spec, prefix):
        if not os.path.exists(self.configure_abs_path):
            Executable("./autogen.sh")()

    def configure_args(self):
        spec = self.spec
        blas = spec["blas"].name
        if blas not in self.cblas_modules:
            raise InstallError(
                "wavepipe links a CBLAS through pkg-config: blas=%s is not one of %s"
                % (blas, ", ".join(sorted(self.cblas_modules)))
            )
        args = [
            "CC=%s" % spec["mpi"].mpicc,
            "CXX=%s" % spec["mpi"].mpicxx,
            "--with-cblas=%s" % self.cblas_modules[blas],
        ]
        if spec.satisfies("+cuda"):
            archs = spec.variants["cuda_arch"].value
            gencode = " ".join("-gencode arch=compute_%s,code=sm_%s" % (a, a) for a in archs)
            args += ["--with-cuda=%s" % spec["cuda"].prefix, "NVCC_ARCH=%s" % gencode]
        else:
            args.append("--without-cuda")
        return args

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed(self):
        wavepipe = Executable(self.prefix.bin.wavepipe)
        wavepipe("--version")
        share = join_path(self.prefix.share, "wavepipe")
        wavepipe("plan", "--layers", join_path(share, "profiles", "dapple-v100", "bert-48-pbs-2.txt"),
                 "--global-batch", "64", "--cluster", join_path(share, "topology", "dapple-config-a.cfg"))
