# Helpers of the runtime's equivalence tests (sourced after lib.sh, with
# $out a scratch directory and the array common the options every run
# shares): runs saved into $out/NAME, checked against a reference run's
# losses and weights (tests/run_equivalence.sh says why each tolerance;
# EQUIV_ATOL and EQUIV_LOSS_RTOL set it for another precision).

run() { # run NAME P ARGS...: trains and saves into $out/NAME
    local name=$1 P=$2
    shift 2
    "$MPIEXEC" -n "$P" "$WAVEPIPE" run "${common[@]}" --save "$out/$name" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep '^step' "$out/$name.log" | awk '{print $4}' > "$out/$name.loss"
    return $rc
}

check() { # check NAME P EXACT|tolerance ARGS...: against $ref (default: reference)
    local name=$1 P=$2 exact=$3 ref=${ref:-reference}
    shift 3
    if ! run "$name" "$P" "$@"; then
        fail "$name: the run fails"; tail -5 "$out/$name.log"; return
    fi
    if [ "$exact" = exact ]; then
        # every tensor bit for bit (the files' metadata records each run's partition)
        if cmp -s "$out/$ref.loss" "$out/$name.loss" &&
           python3 "$WP_SRCDIR/tests/st_compare.py" "$out/$ref/model.safetensors" "$out/$name/model.safetensors" \
               > /dev/null; then
            pass "$name: losses and weights bit for bit equal to one rank's"
        else
            fail "$name: not bit for bit equal ($(tr '\n' ' ' < "$out/$name.loss"))"
            python3 "$WP_SRCDIR/tests/st_compare.py" "$out/$ref/model.safetensors" "$out/$name/model.safetensors"
        fi
    else
        local cmp
        cmp=$(python3 "$WP_SRCDIR/tests/st_compare.py" --atol "${EQUIV_ATOL:-2e-4}" \
              "$out/$ref/model.safetensors" "$out/$name/model.safetensors")
        if [ $? -eq 0 ] && awk -v r="${EQUIV_LOSS_RTOL:-1e-6}" \
               'NR==FNR { a[FNR]=$1; next } { d=$1-a[FNR]; if (d<0) d=-d; if (d > r*a[FNR]) exit 1 }' \
               "$out/$ref.loss" "$out/$name.loss"; then
            pass "$name: losses and weights equal within tolerance ($cmp)"
        else
            fail "$name: beyond tolerance ($cmp; losses $(tr '\n' ' ' < "$out/$name.loss"))"
        fi
    fi
}

check_bytes() { # every run's messages and sums, as counted, are the cost model's (run's bytes: line)
    local runs=0 off= log
    for log in "$out"/*.log; do
        grep -q '^bytes:' "$log" || continue
        runs=$((runs + 1))
        grep -q "every rank's equal to the model: yes" "$log" || off="$off $(basename "$log" .log)"
    done
    if [ "$runs" -gt 0 ] && [ -z "$off" ]; then
        pass "every run's counted messages, gradient and tied sums equal the model's ($runs runs)"
    else
        fail "counted bytes differ from the model's in:${off:- (no run printed bytes)}"
    fi
}
