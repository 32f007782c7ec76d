#!/bin/bash
srun --mpi=pmi2 "/work/main/src/wavepipe" run --compute emulated --layers "/work/main/results/adaptive/tables/gpt2-small-deep.cfg" --schedule 1f1b --micro-batches 16 \
    --global-batch 16 --steps 80 --changes "/work/main/results/adaptive/runs/bandwidth-steps/changes.txt" --changes-hook "/work/main/tests/cluster/scenario-hook.sh" \
    --results "/work/main/results/adaptive/runs/bandwidth-steps/static.csv" 
