#!/bin/bash
srun --mpi=pmi2 "/work/main/src/wavepipe" calibrate --min-bytes 64KiB --max-bytes 4MiB --repeat 5 --out "/work/main/results/fidelity/ranking/runs/calibrated-1gbit.cfg"
