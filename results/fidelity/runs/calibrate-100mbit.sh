#!/bin/bash
srun --mpi=pmi2 "/work/main/src/wavepipe" calibrate --min-bytes 64KiB --max-bytes 4MiB --repeat 5 --out "/work/vc/grid/runs/calibrated-100mbit.cfg"
