# mpi5-env.sh -- sourced (sh or bash): MPI programs built against Debian 12's
# MPICH 4.0.2 run on MPICH 5 (PyPI, installed by scripts/install-deps) over
# libfabric's tcp provider, so that their traffic between the nodes of the
# test cluster crosses the veth links (and `vcluster.sh shape` slows it).
# Why, and what was measured: "MPI transport" in vcluster.sh.
#
# Sets, for the calling shell and (through sbatch/srun) the jobs it starts:
#   LD_LIBRARY_PATH       $WP_MPICH5/lib first: its libmpich.so.12 is a link to
#                         MPICH 5's libmpi.so.12 (same ABI), placed there so that
#                         the library's RUNPATH $ORIGIN/mpich finds its own
#                         libfabric and UCX rather than Debian's UCX 1.13
#   MPIR_CVAR_CH4_NETMOD  ofi (the default, ucx, uses shared memory between the
#                         namespaces, as Debian's MPICH does)
#   FI_PROVIDER           tcp
#   FI_TCP_IFACE          eth0, the node's veth (libfabric would also list lo)
# Ranks of one node still talk through MPICH's shared memory. Returns 1, with
# a message, when MPICH 5 is not installed. WP_MPICH5 moves it from
# /opt/wavepipe/mpich5 (as for install-deps).
WP_MPICH5=${WP_MPICH5:-/opt/wavepipe/mpich5}
if [ ! -e "$WP_MPICH5/lib/libmpich.so.12" ]; then
    echo "mpi5-env.sh: no MPICH 5 at $WP_MPICH5 (no lib/libmpich.so.12): run scripts/install-deps" >&2
    return 1
fi
case ":${LD_LIBRARY_PATH:-}:" in
*":$WP_MPICH5/lib:"*) ;;
*) LD_LIBRARY_PATH=$WP_MPICH5/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
export WP_MPICH5 LD_LIBRARY_PATH
export MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp FI_TCP_IFACE=eth0
# Messages up to 8 MiB go eagerly, larger ones by rendezvous. A rendezvous
# above 64 KiB (tried first: an eager MPI_Isend of 768 KiB over the tcp
# provider returned only after 1 to 9 ms at 1 Gbit/s, holding the sending
# rank) serialises the two directions of a link: in emulated 1F1B on 8
# ranks over 2 nodes at 100 Mbit/s a gradient sent while an activation
# crossed the other way took 0.70 s instead of 0.37 s, so 1F1B, ZB-H1 and
# Hanayo ran 23-27 % over the simulator (which lets the directions overlap,
# as full-duplex links do) and no faster than GPipe. Measured A/B in one
# session on that grid (results/fidelity/transport-ab/, activations of
# 0.75 and 4.1 MiB): rendezvous mean |error| 9.3 %, max 26.9 %; eager
# 3.4 %, max 16.2 % (GPipe of BERT-48 at 1 Gbit/s, where eager sends of
# 4 MiB back to back hold the sender). With every size eager (-1), a 15 MB
# message of a 16-rank job spun its sender in libfabric's send at 87 % of a
# core for seconds and starved its node until Slurm declared it failed:
# hence the 8 MiB bound, above the pipelines' activations. Not settled at
# 16 ranks on 4 nodes: there the grid with this setting
# (results/fidelity/) ran further over the simulator than the previous
# grid with rendezvous (GPT-2-small-deep at 1 Gbit/s: hanayo +54 % against
# +6 %, interleaved +40 % against +18 %), plausibly because an eager send
# spins its sender, which 16 ranks on 2 cores cannot afford; the two grids
# were run in different sessions. A value set before sourcing this file
# wins.
export MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD=${MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD:-8388608}
