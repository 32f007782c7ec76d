#!/usr/bin/env bash
# The simulator against a measured run, small enough for CI: bench/fidelity.sh
# on the virtual Slurm cluster with one case of its grid -- 8 ranks on 3
# nodes (3+3+2), links shaped to 1 Gbit/s, the GPT-2-small-class layer table
# (analytic, 62 blocks), 1f1b and GPipe, compute emulated, MPI (MPICH 5)
# over the veth links. The network is calibrated on that cluster first; each
# predicted iteration (wavepipe simulate --layers --cluster CALIBRATED) must
# lie within 15 % of the measured median iteration: loose enough for a loaded
# CI machine, tight enough to catch a runtime that holds its ranks or a
# simulator that drops a cost (both were 5-300 % off before their fixes).
# Then a dilated case (time-warped emulation): 16 ranks on 4 nodes, 1f1b and
# interleaved, run --dilate 4 --scale-bytes 4 on links shaped 16 times
# slower, each within 10 %.
# The full grid is `make fidelity` (results/fidelity/). Skips (77) only where
# network namespaces cannot be made.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

vc="$(cd "$(dirname "$0")" && pwd)/cluster/vcluster.sh"
tolerance=0.15
dilate_f=4 dilate_s=4 dilated_kinds="1f1b interleaved" dilated_tolerance=0.10
vcluster_require "$vc"
builddir=${WP_BUILDDIR:-$(pwd)}
out="$(cd "$builddir" && pwd)/tests/fidelity.slurm_fidelity"
rm -rf "$out"

# fidelity.sh takes the cluster lock, brings the cluster up and down itself;
# run once more when a case misses the tolerance (make -j2 check runs
# another test beside this one on the same 2 cores), the second run counts
# fidelity_cases OUT SHAPES KINDS TOLERANCE LIMIT_S: bench/fidelity.sh at
# 1 Gbit/s on the GPT-2-small-class table into OUT (its log OUT.log), once
# more when a case misses TOLERANCE; rc its exit status
fidelity_cases() {
    local dir=$1 shapes=$2 kinds=$3 tol=$4 limit=$5 attempt
    for attempt in 1 2; do
        rm -rf "$dir.cwd" && mkdir -p "$dir.cwd" && cd "$dir.cwd" || return 1
        FIDELITY_RATES=1gbit FIDELITY_SHAPES="$shapes" FIDELITY_TABLES=gpt2-small-deep FIDELITY_KINDS="$kinds" \
            FIDELITY_STEPS=4 timeout -k 10 "$limit" bash "$WP_SRCDIR/bench/fidelity.sh" "$WAVEPIPE" "$WP_SRCDIR" \
            "$dir" > "$dir.log" 2>&1
        rc=$?
        cd - > /dev/null || return 1
        [ "$rc" -eq 0 ] || break
        awk -F, -v t="$tol" 'NR > 1 { e = $10 < 0 ? -$10 : $10; if (e > t) bad = 1 } END { exit bad }' \
            "$dir/fidelity.csv" && break
        [ "$attempt" -eq 1 ] && echo "    a case missed by more than $tol (a busy machine?): once more"
    done
}
fidelity_cases "$out" 8:3 "1f1b gpipe" "$tolerance" 900
expect_status 0 "$rc" "bench/fidelity.sh ran the 8-rank, 3-node case at 1 Gbit/s"
[ "$rc" -eq 0 ] || sed 's/^/    | /' "$out.log" | tail -n 25
grep -E '^(fidelity: MPI|    fit|case|1gbit/|[0-9]+ cases)' "$out.log" | sed 's/^/    /'

expect_contains "$out.log" "MPICH Version: 5" "the runs used MPICH 5 (MPI over the links)"
# nothing written where it was started (an awk '>' once wrote the watchdog's limit into a file there)
[ -z "$(ls -A "$out.cwd" 2>/dev/null)" ]
expect_status 0 $? "bench/fidelity.sh left nothing in its working directory"
# the same grid predicted again from what it measured: no cluster, no runs, the same rows
cp "$out/fidelity.csv" "$out/fidelity.csv.measured"
FIDELITY_REUSE=1 FIDELITY_RATES=1gbit FIDELITY_SHAPES=8:3 FIDELITY_TABLES=gpt2-small-deep FIDELITY_KINDS="1f1b gpipe" \
    timeout 60 bash "$WP_SRCDIR/bench/fidelity.sh" "$WAVEPIPE" "$WP_SRCDIR" "$out" > "$out.reuse.log" 2>&1
expect_status 0 $? "FIDELITY_REUSE=1 predicts the grid again without a cluster"
cmp -s "$out/fidelity.csv" "$out/fidelity.csv.measured"
expect_status 0 $? "and gives the same rows (same simulator, same measurements)"
expect_contains "$out/fidelity.txt" "reused: the measurements of an earlier run" "its table says the rows were reused"
FIDELITY_MAX_RUN_S=soon bash "$WP_SRCDIR/bench/fidelity.sh" "$WAVEPIPE" "$WP_SRCDIR" "$out" > "$out.bad.log" 2>&1
expect_status 2 $? "FIDELITY_MAX_RUN_S=soon is refused"
expect_contains "$out.bad.log" "FIDELITY_MAX_RUN_S='soon': a whole number of seconds" "with one clear sentence"
grep -q '^fit inter-node' "$out/logs/calibrate-1gbit.out" 2>/dev/null
expect_status 0 $? "the network was calibrated on the cluster (an inter-node fit)"
csv=$out/fidelity.csv
head -n 1 "$csv" 2>/dev/null |
    grep -qx 'case,rate,table,ranks,nodes,kind,micro_batches,predicted_s,measured_s,error,compute,mpi,dilation,byte_scale,host_busy'
expect_status 0 $? "fidelity.csv has its header"
for kind in 1f1b gpipe; do
    row=$(grep "^1gbit/gpt2-small-deep/8r3n/$kind," "$csv" 2>/dev/null)
    if [ -z "$row" ]; then
        fail "$kind: a row in fidelity.csv"
        continue
    fi
    IFS=, read -r _ _ _ ranks nodes _ _ predicted measured err compute _ <<< "$row"
    if [ "$ranks" = 8 ] && [ "$nodes" = 3 ] && [ "$compute" = emulated ]; then
        pass "$kind: 8 ranks on 3 nodes, compute emulated"
    else
        fail "$kind: 8 ranks on 3 nodes, compute emulated ($row)"
    fi
    if awk -v e="$err" -v t="$tolerance" 'BEGIN { exit !(e <= t && -e <= t) }'; then
        pass "$kind: predicted $predicted s, measured $measured s, error $err within 15 %"
    else
        fail "$kind: predicted $predicted s, measured $measured s, error $err within 15 %"
    fi
done
expect_contains "$out/fidelity.txt" "2 cases: mean |error|" "the table closes with mean and max error"

# what the runs measured of the links (wavepipe run --measure): the
# activations that cross nodes (blocks of 3 ranks: into stages 3 and 6) at
# 0.4 of the 1 Gbit/s shaping or more (a receive is timed from when it is
# posted, and 8 ranks share two cores: one measured 0.4995 of it in a run
# whose predictions were within 6 %), and no faster than tc's token bucket
# lets a message of S bytes go (its 32 KB burst leaves at once: S / (S -
# 32 KB) of the rate, 1.04 for these 768 KB activations) with 5 % for the
# timing and the error of the common timeline on which the send and the
# receive are timed on two nodes (the run prints it: half the two nodes'
# shortest round trips to rank 0; one measurement at 191.7 MB/s over 1
# Gbit/s was 2 ms short of the bucket's time, the offsets then estimated
# from 8 round trips); those inside a node faster than the shaping; the
# best iteration after the first (a busy machine only ever slows one down)
measure=$out/runs/1gbit-gpt2-small-deep-8r3n/1f1b.measure.csv
links=$(awk -F, '$1 > 0 && $2 == "activation" && $7 > 0 && $8 > bw[$3] { bw[$3] = $8; size[$3] = $6 }
    END { for (s in bw) printf "%d %.0f %.0f\n", s, bw[s], size[s] }' "$measure" 2>/dev/null | sort -n)
echo "$links" | awk '{ printf "    activation into stage %d, best bandwidth %.0f B/s (%d bytes)\n", $1, $2, $3 }'
clock_ms=$(sed -n 's/^measure: message times on one timeline, two nodes.* within \([0-9.]*\) ms of each other.*/\1/p' \
    "$out/runs/1gbit-gpt2-small-deep-8r3n/1f1b.log" | head -n 1)
echo "    the common timeline's error between two nodes: ${clock_ms:-?} ms"
if [ -n "$links" ] && [ -n "$clock_ms" ] && echo "$links" | awk -v rate=125000000 -v burst=32768 -v clock_s="${clock_ms}e-3" '{ cross = ($1 == 3 || $1 == 6)
        least_s = ($3 - burst) / (1.05 * rate) - clock_s
        most = $3 > 2 * burst && least_s > 0 ? $3 / least_s : 1e300
        if (cross && ($2 < 0.4 * rate || $2 > most)) bad = 1
        if (!cross && $2 < 1.5 * rate) bad = 1 }
    END { exit !(NR == 7 && !bad) }'; then
    pass "measured bandwidth: between nodes from 0.4 of the shaped 1 Gbit/s to what its token bucket allows, inside nodes above 1.5 of it"
else
    fail "measured link bandwidth against the shaping ($measure)"
fi

# --- dilated: 16 ranks on 4 nodes, beyond what 2 cores carry undilated ---------------
# (+2 to +140 % undilated, the ranks' polls and copies sharing the cores):
# the whole emulated system slowed F times and its messages 1/S of the
# model's bytes over links shaped F x S times slower (run --dilate F
# --scale-bytes S, calibrate the same), each within 10 % of its prediction;
# the host's busy share over the measured iterations is recorded beside it
dilated=$out-dilated
rm -rf "$dilated"
fidelity_cases "$dilated" "16:4:$dilate_f:$dilate_s" "$dilated_kinds" "$dilated_tolerance" 1200
expect_status 0 "$rc" "bench/fidelity.sh ran 16 ranks on 4 nodes at 1 Gbit/s dilated $dilate_f x, bytes / $dilate_s"
[ "$rc" -eq 0 ] || sed 's/^/    | /' "$dilated.log" | tail -n 25
grep -E '^(    fit|case|1gbit/|[0-9]+ cases|host busy)' "$dilated.log" | sed 's/^/    /'
expect_contains "$dilated/logs/calibrate-1gbit-F${dilate_f}S$dilate_s.out" "dilation=$dilate_f byte_scale=$dilate_s" \
    "the network was calibrated dilated alike"
for kind in $dilated_kinds; do
    row=$(grep "^1gbit/gpt2-small-deep/16r4n-F${dilate_f}S$dilate_s/$kind," "$dilated/fidelity.csv" 2>/dev/null)
    if [ -z "$row" ]; then
        fail "dilated $kind: a row in fidelity.csv"
        continue
    fi
    IFS=, read -r _ _ _ ranks nodes _ _ predicted measured err _ _ f s busy <<< "$row"
    if [ "$ranks:$nodes:$f:$s" = "16:4:$dilate_f:$dilate_s" ] && [ -n "$busy" ]; then
        pass "dilated $kind: 16 ranks on 4 nodes, F $f, S $s, host busy $busy"
    else
        fail "dilated $kind: 16 ranks on 4 nodes, F $dilate_f, S $dilate_s, a host busy share ($row)"
    fi
    if awk -v e="$err" -v t="$dilated_tolerance" 'BEGIN { exit !(e <= t && -e <= t) }'; then
        pass "dilated $kind: predicted $predicted s, measured $measured s, error $err within 10 %"
    else
        fail "dilated $kind: predicted $predicted s, measured $measured s, error $err within 10 %"
    fi
    expect_contains "$dilated/runs/1gbit-gpt2-small-deep-16r4n-F${dilate_f}S$dilate_s/$kind.log" \
        "dilated ${dilate_f}x with messages of 1/$dilate_s of the model's bytes" "dilated $kind: the run says so"
done
finish
