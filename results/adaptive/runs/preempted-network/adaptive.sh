#!/bin/bash
srun --mpi=pmi2 "/work/wt-scen/src/wavepipe" run --compute emulated --layers "/work/wt-scen/results/adaptive/tables/gpt2-small-deep.cfg" --schedule 1f1b --micro-batches 16 \
    --global-batch 16 --steps 60 --slowdown-file "/work/wt-scen/results/adaptive/runs/preempted-network/adaptive.slowdown" --results "/work/wt-scen/results/adaptive/runs/preempted-network/adaptive.csv" --adapt k --adapt-every 5 --adapt-candidates 2:1,4:1 --adapt-log "/work/wt-scen/results/adaptive/runs/preempted-network/adaptive.adapt.csv"
