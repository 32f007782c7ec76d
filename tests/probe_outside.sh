#!/usr/bin/env bash
# `wavepipe probe` outside a PMIx launch says so in one line and fails; its
# --help explains it.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
env -u PMIX_NAMESPACE -u PMIX_RANK "$WAVEPIPE" probe --out "$out/p.cfg" > "$out/o.txt" 2> "$out/e.txt"
expect_status 1 $? "probe outside PMIx exits 1"
expect_status 1 "$(wc -l < "$out/e.txt")" "one line of explanation"
expect_contains "$out/e.txt" "srun --mpi=pmix" "it says how to launch it"
if [ -e "$out/p.cfg" ]; then fail "no cluster file written"; else pass "no cluster file written"; fi
"$WAVEPIPE" probe --help > "$out/h.txt"; expect_status 0 $? "probe --help"
expect_contains "$out/h.txt" "PMIX_LOCAL_PEERS" "probe --help explains what it uses"
finish
