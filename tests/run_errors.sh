#!/usr/bin/env bash
# Bad settings get one clear error before any rank computes, and a rank that
# dies ends the whole job with a message within seconds, never a hang.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
bad() { # bad DESCRIPTION EXPECTED-TEXT P ARGS...
    local what=$1 text=$2 P=$3
    shift 3
    timeout 60 "$MPIEXEC" -n "$P" "$WAVEPIPE" run "$@" > "$out/err.log" 2>&1
    local rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$text" "$out/err.log" && ! grep -q '^step' "$out/err.log"; then
        pass "$what: refused before training ($text)"
    else
        fail "$what (exit $rc)"; sed 's/^/    | /' "$out/err.log" | head -8
    fi
}
sed 's/heads = 4;/heads = 3;/' "$cfg" > "$out/heads.cfg"
bad "heads not dividing channels" "heads (3) must divide channels (64)" 2 --config "$out/heads.cfg"
sed 's/layers = 16;/layrs = 16;/' "$cfg" > "$out/typo.cfg"
bad "a misspelt key" "typo.cfg:6: unknown key 'layrs' in model; did you mean 'layers'?" 1 --config "$out/typo.cfg"
bad "more stages than layers" "more stages than layers" 4 --config "$cfg" --schedule hanayo --waves 4
printf '{ "model": { "layers": 16 } }\n' > "$out/model.json"
bad "a model file that is not libconfig" "model.json:1: syntax error (a model file is libconfig, as jobs/models/gpt-tiny.cfg" \
    1 --config "$out/model.json"
bad "a global batch not divisible into micro-batches" "global batch 7 cannot be split into 4 micro-batches" 1 \
    --config "$cfg" --global-batch 7 --micro-batches 4
bad "replicas that do not match the ranks" "replicas add up to 3 ranks, but --ranks is 4" 4 --config "$cfg" --replicas 2,1
bad "a missing corpus" "cannot read the corpus $out/none.txt" 2 --config "$cfg" --data "$out/none.txt"
printf 'too short' > "$out/short.txt"
bad "a truncated corpus" "the corpus $out/short.txt has 9 bytes" 2 --config "$cfg" --data "$out/short.txt"
bad "a partition that does not add up" "--partition '8,4' must give 2 stages adding up to 16 blocks" 2 \
    --config "$cfg" --partition 8,4
bad "stages that do not divide the ranks" "--stages 3 does not divide the 4 ranks" 4 --config "$cfg" --stages 3
bad "data-parallel copies that do not divide the ranks" \
    "--data-parallel 3 does not divide the 4 ranks into pipeline copies" 4 --config "$cfg" --schedule hanayo \
    --data-parallel 3
bad "--stages and --data-parallel together" "give --stages S or --data-parallel P/S, not both" 4 --config "$cfg" \
    --schedule zb-v --stages 2 --data-parallel 2
bad "a copy that breaks the kind's rules" \
    "chimera in 2 data-parallel copies of 3 ranks: chimera needs an even number of ranks" 6 --config "$cfg" \
    --schedule chimera --stages 3
bad "a micro-batch that does not split over the copies" "cannot be split evenly over the 2 replicas" 4 \
    --config "$cfg" --schedule interleaved --stages 2 --global-batch 6 --micro-batches 2
bad "no config" "--config FILE is required" 1

# A dead rank: kill one of 4 ranks in the middle of a long run.
marker="$out/dead.csv"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 100000 --results "$marker" > "$out/dead.log" 2>&1 &
job=$!
for _ in $(seq 1 100); do [ -s "$marker" ] && break; sleep 0.2; done
victim=$(pgrep -f -- "--results $marker" | grep -v "^$job\$" | tail -n 1)
start=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
for _ in $(seq 1 150); do kill -0 "$job" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$job" 2>/dev/null; then
    fail "the job still runs 30 s after a rank died"
    pkill -9 -f -- "--results $marker"
else
    wait "$job"; rc=$?
    took=$(( $(date +%s) - start ))
    [ "$rc" -ne 0 ] && pass "a dead rank ends the job (exit $rc) in ${took} s" || fail "job exited 0 after a rank died"
    if grep -qiE 'terminat|killed|abort' "$out/dead.log"; then
        pass "with a message: $(grep -iE 'terminat|killed|abort' "$out/dead.log" | head -n 1)"
    else
        fail "no message about the dead rank"; tail -5 "$out/dead.log"
    fi
fi
pgrep -f -- "--results $marker" > /dev/null && { fail "ranks left behind"; pkill -9 -f -- "--results $marker"; } || pass "no rank left behind"
finish
