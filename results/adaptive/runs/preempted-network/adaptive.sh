#!/bin/bash
srun --mpi=pmi2 "/work/main/src/wavepipe" run --compute emulated --layers "/work/main/results/adaptive/tables/gpt2-small-deep.cfg" --schedule 1f1b --micro-batches 16 \
    --global-batch 16 --steps 60 --changes "/work/main/results/adaptive/runs/preempted-network/changes.txt" --changes-hook "/work/main/tests/cluster/scenario-hook.sh" \
    --results "/work/main/results/adaptive/runs/preempted-network/adaptive.csv" --adapt both --adapt-every 5 --adapt-candidates 2:1,4:1 --adapt-log "/work/main/results/adaptive/runs/preempted-network/adaptive.adapt.csv"
