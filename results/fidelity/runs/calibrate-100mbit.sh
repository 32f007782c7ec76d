#!/bin/bash
srun --mpi=pmi2 "/work/vc/bin/wavepipe" calibrate --min-bytes 64KiB --max-bytes 4MiB --repeat 5 --out "/work/vc/fid100/runs/calibrated-100mbit.cfg"
