#!/bin/bash
srun --mpi=pmi2 "/work/main/src/wavepipe" calibrate --min-bytes 64KiB --max-bytes 4MiB --repeat 5 --dilate 4 --scale-bytes 4     --out "/work/main/results/fidelity/ranking/runs/calibrated-1gbit-F4S4.cfg"
