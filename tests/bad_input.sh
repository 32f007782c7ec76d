#!/usr/bin/env bash
# Bad input at the edges, counted: every reader a user feeds wavepipe
# (model settings, layer tables, DAPPLE/PipeDream profiles, cluster
# descriptions, campaigns, plan files, schedule CSVs in both forms,
# checkpoints, changes files, hwloc XML, harvest's per-point files) given
# each kind of damage that applies to it: truncated, a value of the wrong
# type, out of range, a huge count, NaN, a hostile string (shell syntax,
# control characters, 5,000 characters), path traversal in a name. Each
# damaged file is made from a good one the repository ships (the good one
# is run first and must pass). A rejected input must end with exit status
# 1 or 2 (never 0, a signal or a hang: every command runs under a timeout)
# and a message naming the file (file:line where the format has lines); a
# case marked "accepted" must run to the end without executing anything and
# without writing outside its output directory. Every command writes, when
# it writes at all, over outputs that already exist (a results CSV, a
# checkpoint, a cluster file, a plan, a harvest CSV, a campaign's results):
# none may change. The table of every case (reader, damage, exit status,
# message) is written to tests/out/bad_input.*/table.md and printed.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
W=$WAVEPIPE
S=$WP_SRCDIR
export W S MPIEXEC out
hostile='$(touch wp-pwned)`touch wp-pwned`;touch wp-pwned'
long=$(printf 'x%.0s' $(seq 5000))
traversal='../../../../../../tmp/wavepipe-escape'
rm -f /tmp/wavepipe-escape*

# --- the outputs that failed commands must leave as they are ---------------
o=$out/outputs
export o
mkdir -p "$o"
"$MPIEXEC" -n 1 "$W" run --config "$S/jobs/models/gpt-tiny.cfg" --steps 4 --results "$o/results.csv" --save "$o/ckpt" \
    > "$out/setup.log" 2>&1 || { fail "setup: a run writes results.csv and ckpt"; finish; exit 1; }
"$W" topo --cluster "$S/topology/dapple-config-a.cfg" --out "$o/cluster.cfg" >> "$out/setup.log" 2>&1
"$W" plan --layers "$S/jobs/tables/mixed-16.cfg" --global-batch 8 --cluster "$S/topology/dapple-config-a.cfg" \
    --devices 4 --out "$o/plan.cfg" >> "$out/setup.log" 2>&1
"$MPIEXEC" -n 4 "$W" run --plan "$o/plan.cfg" --compute emulated --layers "$S/jobs/tables/mixed-16.cfg" --steps 1 \
    --results "$o/emulated.csv" >> "$out/setup.log" 2>&1
echo "existing harvest" > "$o/harvest.csv"
mkdir -p "$o/sweep/bad" && echo "an earlier point" > "$o/sweep/bad/keep.txt"
snapshot() { (cd "$o" && find . -type f -print0 | sort -z | xargs -0 sha256sum && find . -type l -printf '%p -> %l\n' | sort); }
snapshot > "$out/outputs.before"
[ -s "$o/plan.cfg" ] && [ -s "$o/cluster.cfg" ] && [ -L "$o/ckpt/latest" ] && [ -s "$o/emulated.csv" ]
expect_status 0 $? "setup: a results CSV, a checkpoint, a cluster file and a plan exist"

# --- one case ------------------------------------------------------------------
table=$out/table.md
printf '| reader | damage | exit | message (first line) |\n|---|---|---|---|\n' > "$table"
rejected=0 accepted=0 warned=0
# case_ READER DAMAGE EXPECT FILE CMD...: EXPECT is reject (exit 1 or 2, the
# file named), warn (exit 0, the damaged row skipped and named file:line) or
# accept (exit 0); either way nothing runs that the input names and nothing
# is written outside the scratch directory
case_() {
    local reader=$1 damage=$2 expect=$3 file=$4 rc msg
    shift 4
    (cd "$out/cwd" && timeout 60 bash -c '"$@"' case_ "$@") > "$out/case.out" 2>&1 < /dev/null
    rc=$?
    msg=$(grep -m 1 -iE 'skipped|error|cannot|not |invalid|refus|bad|missing|expect|must|too |out of|unknown|no |wavepipe [a-z]+:' \
        "$out/case.out" | cut -c 1-160)
    [ -n "$msg" ] || msg=$(head -n 1 "$out/case.out" | cut -c 1-160)
    printf '| %s | %s | %s | %s |\n' "$reader" "$damage" "$rc" "$(printf '%s' "$msg" | tr '|' '/' \
        | sed "s|$out/||g; s|$S/||g")" >> "$table"
    local bad=""
    [ -e "$out/cwd/wp-pwned" ] && bad="a command in the input ran"
    ls /tmp/wavepipe-escape* > /dev/null 2>&1 && bad="a file was written outside the output directory"
    if [ "$rc" -ge 124 ]; then
        bad="exit $rc (a timeout or a signal)"
    elif [ "$expect" = reject ]; then
        if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
            bad="exit $rc where 1 or 2 was due"
        elif ! grep -qF "$(basename "$file")" "$out/case.out"; then
            bad="the message does not name $(basename "$file")"
        fi
    elif [ "$expect" = warn ]; then
        [ "$rc" -eq 0 ] || bad="exit $rc where a skipped row was due"
        grep -qE "$(basename "$file"):[0-9]+:.*skipped" "$out/case.out" || bad="no file:line naming the skipped row"
    elif [ "$rc" -ne 0 ]; then
        bad="exit $rc where the input is harmless"
    fi
    if [ -z "$bad" ]; then
        pass "$reader, $damage: $expect (exit $rc)"
        case $expect in reject) rejected=$((rejected + 1)) ;; warn) warned=$((warned + 1)) ;; *) accepted=$((accepted + 1)) ;; esac
    else
        fail "$reader, $damage: $bad"
        sed 's/^/    | /' "$out/case.out" | head -n 5
    fi
    rm -f "$out/cwd/wp-pwned" /tmp/wavepipe-escape*
}
mkdir -p "$out/cwd"
# damaged SEED NAME SED: SEED with a sed script applied, as $out/NAME
damaged() { sed -e "$3" "$1" > "$out/$2"; echo "$out/$2"; }
# truncated SEED NAME: SEED cut in the middle of its text
truncated() { head -c $(( $(wc -c < "$1") / 2 )) "$1" > "$out/$2"; echo "$out/$2"; }
esc() { printf '%s' "$1" | sed 's/[&|/\\]/\\&/g'; }

# --- model settings (run --config) --------------------------------------------
seed=$S/jobs/models/gpt-tiny.cfg
run1() { "$MPIEXEC" -n 1 "$W" run --config "$1" --steps 1 --results "$o/results.csv" --save "$o/ckpt"; }
export -f run1
case_ "model settings" "good (shipped)" accept "$seed" "$MPIEXEC" -n 1 "$W" run --config "$seed" --steps 1 \
    --results "$out/good.csv"
f=$(truncated "$seed" m-trunc.cfg); case_ "model settings" truncated reject "$f" run1 "$f"
f=$(damaged "$seed" m-type.cfg 's/layers = 16;/layers = "16";/'); case_ "model settings" "wrong type" reject "$f" run1 "$f"
f=$(damaged "$seed" m-range.cfg 's/heads = 4;/heads = -4;/'); case_ "model settings" "out of range" reject "$f" run1 "$f"
f=$(damaged "$seed" m-huge.cfg 's/layers = 16;/layers = 99999999999;/'); case_ "model settings" "huge count" reject "$f" run1 "$f"
f=$(damaged "$seed" m-huge2.cfg 's/channels = 64;/channels = 2147483584;/'); case_ "model settings" "huge width (2^31 - 64)" reject "$f" run1 "$f"
f=$(damaged "$seed" m-nan.cfg 's/learning_rate = 0.001;/learning_rate = nan;/'); case_ "model settings" NaN reject "$f" run1 "$f"
f=$(damaged "$seed" m-str.cfg "s|^model = {|model = { name = \"$(esc "$hostile")\";|"); case_ "model settings" "hostile string (unknown key)" reject "$f" run1 "$f"

# --- layer tables (plan --layers) ----------------------------------------------
seed=$S/jobs/tables/mixed-16.cfg
plan1() { "$W" plan --layers "$1" --global-batch 8 --cluster "$S/topology/dapple-config-a.cfg" --devices 4 --out "$o/plan.cfg"; }
export -f plan1
f=$(truncated "$seed" l-trunc.cfg); case_ "layer table" truncated reject "$f" plan1 "$f"
f=$(damaged "$seed" l-type.cfg '0,/forward_s = 0.004;/s//forward_s = "fast";/'); case_ "layer table" "wrong type" reject "$f" plan1 "$f"
f=$(damaged "$seed" l-range.cfg '0,/forward_s = 0.004;/s//forward_s = -0.004;/'); case_ "layer table" "out of range" reject "$f" plan1 "$f"
f=$(damaged "$seed" l-huge.cfg '0,/activation_bytes = 393216.0;/s//activation_bytes = 1e308;/'); case_ "layer table" "huge value" reject "$f" plan1 "$f"
f=$(damaged "$seed" l-nan.cfg '0,/forward_s = 0.004;/s//forward_s = nan;/'); case_ "layer table" NaN reject "$f" plan1 "$f"
f=$(damaged "$seed" l-host.cfg "0,/\"layer0\"/s//\"$(esc "$hostile")\\\\x01\"/"); case_ "layer table" "hostile layer name" accept "$f" "$W" plan --layers "$f" --global-batch 8 --cluster "$S/topology/dapple-config-a.cfg" --devices 4
f=$(damaged "$seed" l-long.cfg "0,/\"layer0\"/s//\"$long\"/"); case_ "layer table" "5,000-character name" reject "$f" plan1 "$f"
f=$(damaged "$seed" l-path.cfg "0,/\"layer0\"/s//\"$(esc "$traversal")\"/"); case_ "layer table" "path traversal in a name" accept "$f" "$W" plan --layers "$f" --global-batch 8 --cluster "$S/topology/dapple-config-a.cfg" --devices 4

# --- DAPPLE/PipeDream profiles (plan --layers profile.txt) ---------------------
seed=$S/profiles/dapple-v100/bert-48-pbs-2.txt
prof1() { "$W" plan --layers "$1" --profile-batch 2 --global-batch 64 --cluster "$S/topology/dapple-config-a.cfg" --devices 16 --out "$o/plan.cfg"; }
export -f prof1
case_ "profile text" "good (shipped)" accept "$seed" "$W" plan --layers "$seed" --global-batch 64 --cluster "$S/topology/dapple-config-a.cfg" --devices 16
f=$(head -c 3000 "$seed" > "$out/p-trunc.txt"; echo "$out/p-trunc.txt"); case_ "profile text" "truncated mid-line" reject "$f" prof1 "$f"
f=$(damaged "$seed" p-type.txt '3s/forward_compute_time=[0-9.]*/forward_compute_time=fast/'); case_ "profile text" "wrong type" reject "$f" prof1 "$f"
f=$(damaged "$seed" p-range.txt '3s/forward_compute_time=[0-9.]*/forward_compute_time=-5/'); case_ "profile text" "out of range" reject "$f" prof1 "$f"
f=$(damaged "$seed" p-huge.txt '3s/parameter_size=[0-9.]*/parameter_size=1e400/'); case_ "profile text" "huge value" reject "$f" prof1 "$f"
f=$(damaged "$seed" p-nan.txt '3s/forward_compute_time=[0-9.]*/forward_compute_time=nan/'); case_ "profile text" NaN reject "$f" prof1 "$f"
f=$(damaged "$seed" p-edge.txt '$a node1 -- node99999999999'); case_ "profile text" "huge node id" reject "$f" prof1 "$f"
f=$(damaged "$seed" p-host.txt "3s/ -- [^-]* -- / -- $(esc "$hostile") -- /"); case_ "profile text" "hostile node name" accept "$f" "$W" plan --layers "$f" --profile-batch 2 --global-batch 64 --cluster "$S/topology/dapple-config-a.cfg" --devices 16

# --- cluster descriptions (plan --cluster) --------------------------------------
seed=$S/topology/dapple-config-a.cfg
clus1() { "$W" plan --layers "$S/jobs/tables/mixed-16.cfg" --global-batch 8 --cluster "$1" --devices 4 --out "$o/plan.cfg"; }
export -f clus1
f=$(truncated "$seed" c-trunc.cfg); case_ "cluster description" truncated reject "$f" clus1 "$f"
f=$(damaged "$seed" c-type.cfg 's/count = 2;/count = "two";/'); case_ "cluster description" "wrong type" reject "$f" clus1 "$f"
f=$(damaged "$seed" c-range.cfg '0,/pcie_Bps = [0-9.]*;/s//pcie_Bps = -1.0;/'); case_ "cluster description" "out of range" reject "$f" clus1 "$f"
f=$(damaged "$seed" c-huge.cfg 's/count = 2;/count = 2000000000;/'); case_ "cluster description" "huge node count" reject "$f" clus1 "$f"
f=$(damaged "$seed" c-nan.cfg '0,/nvlink_Bps = [0-9.]*;/s//nvlink_Bps = nan;/'); case_ "cluster description" NaN reject "$f" clus1 "$f"
f=$(damaged "$seed" c-host.cfg "s|^name = \"dapple-config-a\";|name = \"$(esc "$hostile")\";|"); case_ "cluster description" "hostile name" accept "$f" "$W" topo --cluster "$f"
f=$(damaged "$seed" c-path.cfg "s|^name = \"dapple-config-a\";|name = \"$(esc "$traversal")\";|"); case_ "cluster description" "path traversal in its name" accept "$f" "$W" topo --cluster "$f"
case_ "cluster description" "truncated, --out over a cluster file" reject "$out/c-trunc.cfg" "$W" topo --cluster "$out/c-trunc.cfg" --out "$o/cluster.cfg"

# --- campaigns (sweep --dry-run) --------------------------------------------------
seed=$out/campaign-seed.cfg
sed "s|\"jobs/models/|\"$S/jobs/models/|" "$S/jobs/campaigns/cpu-weak-test.cfg" > "$seed"
sweep1() { "$W" sweep "$1" --dry-run --results "$o/sweep" --templates "$S/templates"; }
export -f sweep1
f=$(truncated "$seed" s-trunc.cfg); case_ "campaign" truncated reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-type.cfg 's/steps = [0-9]*;/steps = "many";/'); case_ "campaign" "wrong type" reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-range.cfg 's/nodes = \[[^]]*\]/nodes = [0]/'); case_ "campaign" "out of range" reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-huge.cfg 's/repetitions = [0-9]*;/repetitions = 2147483647;/'); case_ "campaign" "huge count" reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-host.cfg "s|^name = \"[^\"]*\";|name = \"$(esc "$hostile")\";|"); case_ "campaign" "hostile name" reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-path.cfg "s|^name = \"[^\"]*\";|name = \"$(esc "$traversal")\";|"); case_ "campaign" "path traversal in its name" reject "$f" sweep1 "$f"
f=$(damaged "$seed" s-bad.cfg "s|^name = \"[^\"]*\";|name = \"bad\";|; s|partition = \"[^\"]*\"|partition = \"\$(reboot)\"|"); case_ "campaign" "hostile partition over an existing point" reject "$f" sweep1 "$f"

# --- plan files (run --plan) --------------------------------------------------------
cp "$o/plan.cfg" "$out/plan-seed.cfg"; seed=$out/plan-seed.cfg
planrun() { "$MPIEXEC" -n 4 "$W" run --plan "$1" --compute emulated --layers "$S/jobs/tables/mixed-16.cfg" --steps 1 --results "$o/emulated.csv"; }
export -f planrun
f=$(truncated "$seed" pl-trunc.cfg); case_ "plan file" truncated reject "$f" planrun "$f"
f=$(damaged "$seed" pl-type.cfg '0,/replicas = [0-9]*;/s//replicas = "four";/'); case_ "plan file" "wrong type" reject "$f" planrun "$f"
f=$(damaged "$seed" pl-range.cfg '0,/first_layer = [0-9]*;/s//first_layer = -7;/'); case_ "plan file" "out of range" reject "$f" planrun "$f"
f=$(damaged "$seed" pl-huge.cfg '0,/replicas = [0-9]*;/s//replicas = 2147483647;/'); case_ "plan file" "huge count" reject "$f" planrun "$f"
f=$(damaged "$seed" pl-nan.cfg '0,/_s = [0-9.e+-]*;/s//_s = nan;/'); case_ "plan file" NaN reject "$f" planrun "$f"

# --- schedule files (simulate --schedule-file) ---------------------------------------
"$W" schedule --kind 1f1b --ranks 4 --micro-batches 8 --format csv > "$out/sched.csv" 2>/dev/null
printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n' > "$out/torch.csv"
sim1() { "$W" simulate --schedule-file "$1" --tf 1 --tb 2; }
export -f sim1
case_ "schedule CSV" "good (generated)" accept "$out/sched.csv" sim1 "$out/sched.csv"
f=$(truncated "$out/sched.csv" sc-trunc.csv); case_ "schedule CSV" truncated reject "$f" sim1 "$f"
f=$(damaged "$out/sched.csv" sc-type.csv '3s/^\([^,]*\),\([^,]*\),/\1,step,/'); case_ "schedule CSV" "wrong type" reject "$f" sim1 "$f"
f=$(damaged "$out/sched.csv" sc-range.csv '3s/^[^,]*,/-3,/'); case_ "schedule CSV" "out of range (rank -3)" reject "$f" sim1 "$f"
f=$(damaged "$out/sched.csv" sc-huge.csv '3s/^[^,]*,/99999999999,/'); case_ "schedule CSV" "huge rank" reject "$f" sim1 "$f"
f=$(damaged "$out/sched.csv" sc-host.csv "3s/^\([^,]*,[^,]*,\)[^,]*/\1$(esc "$hostile")/"); case_ "schedule CSV" "hostile op" reject "$f" sim1 "$f"
f=$(damaged "$out/torch.csv" st-range.csv '1s/0F1/0F99999999999/'); case_ "PyTorch schedule CSV" "huge micro-batch" reject "$f" sim1 "$f"
f=$(damaged "$out/torch.csv" st-type.csv '1s/0F1/0X1/'); case_ "PyTorch schedule CSV" "wrong action type" reject "$f" sim1 "$f"
f=$(damaged "$out/torch.csv" st-nan.csv '1s/0F1/nanFnan/'); case_ "PyTorch schedule CSV" NaN reject "$f" sim1 "$f"

# --- changes files (run --changes) ----------------------------------------------------
printf '2 slow 0 1.5\n' > "$out/changes-seed.txt"
chg1() { "$MPIEXEC" -n 1 "$W" run --config "$S/jobs/models/gpt-tiny.cfg" --steps 1 --changes "$1" --results "$o/results.csv"; }
export -f chg1
f=$(damaged "$out/changes-seed.txt" ch-type.txt 's/1.5/fast/'); case_ "changes file" "wrong type" reject "$f" chg1 "$f"
f=$(damaged "$out/changes-seed.txt" ch-range.txt 's/1.5/-1/'); case_ "changes file" "out of range" reject "$f" chg1 "$f"
f=$(damaged "$out/changes-seed.txt" ch-nan.txt 's/1.5/nan/'); case_ "changes file" NaN reject "$f" chg1 "$f"
f=$(damaged "$out/changes-seed.txt" ch-huge.txt 's/^2 /99999999999999999999 /'); case_ "changes file" "huge iteration" reject "$f" chg1 "$f"
f=$(damaged "$out/changes-seed.txt" ch-host.txt "s/slow/$(esc "$hostile")/"); case_ "changes file" "hostile kind" reject "$f" chg1 "$f"

# --- checkpoints (run --resume) ---------------------------------------------------------
ck=$o/ckpt/latest
resume1() { "$MPIEXEC" -n 1 "$W" run --config "$S/jobs/models/gpt-tiny.cfg" --steps 5 --resume "$1" --results "$o/results.csv" --save "$o/ckpt"; }
export -f resume1
mkck() { mkdir -p "$out/$1" && cp "$ck"/* "$out/$1/" && echo "$out/$1"; }
d=$(mkck k-trunc); truncate -s 5000 "$d/model.safetensors"; case_ "checkpoint" truncated reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-type); python3 - "$d/model.safetensors" <<'PYEOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
i = b.find(b'"F32"'); b[i:i + 5] = b'"I64"'; open(p, 'wb').write(b)
PYEOF
case_ "checkpoint" "wrong dtype" reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-range); python3 - "$d/model.safetensors" <<'PYEOF'
import sys, re
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
m = re.search(rb'"data_offsets":\[(\d+),(\d+)\]', b)
new = b'"data_offsets":[%d,%d]' % (int(m.group(1)), 10**12)
new = new[:len(m.group(0))] if len(new) > len(m.group(0)) else new + b' ' * (len(m.group(0)) - len(new))
b[m.start():m.end()] = new; open(p, 'wb').write(b)
PYEOF
case_ "checkpoint" "offsets out of range" reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-huge); python3 - "$d/model.safetensors" <<'PYEOF'
import sys, struct
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
b[0:8] = struct.pack('<Q', 2**62); open(p, 'wb').write(b)
PYEOF
case_ "checkpoint" "huge header length" reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-nan); python3 - "$d/model.safetensors" <<'PYEOF'
import sys, struct, json
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
n = struct.unpack('<Q', bytes(b[:8]))[0]
h = json.loads(bytes(b[8:8 + n]))
off = h['transformer.wte.weight']['data_offsets'][0]
b[8 + n + off:8 + n + off + 4] = struct.pack('<f', float('nan')); open(p, 'wb').write(b)
PYEOF
case_ "checkpoint" "NaN in a tensor" reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-host); python3 - "$d/model.safetensors" "$hostile" <<'PYEOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
old = b'"transformer.wte.weight"'
new = ('"' + sys.argv[2][:len(old) - 2].ljust(len(old) - 2) + '"').encode()
i = b.find(old); b[i:i + len(old)] = new; open(p, 'wb').write(b)
PYEOF
case_ "checkpoint" "hostile tensor name" reject "$d/model.safetensors" resume1 "$d"
d=$(mkck k-path); rm -f "$d/model.safetensors"; ln -s "$traversal" "$d/model.safetensors"
case_ "checkpoint" "model file linked outside" reject "$d/model.safetensors" resume1 "$d"

# --- hwloc XML (topo --xml) -------------------------------------------------------------
seed=$S/tests/topology/hwloc-nvidiaDGX2.xml
topo1() { "$W" topo --xml "$1" --out "$o/cluster.cfg"; }
export -f topo1
f=$(truncated "$seed" x-trunc.xml); case_ "hwloc XML" truncated reject "$f" topo1 "$f"
f=$(damaged "$seed" x-type.xml '0,/os_index="[0-9]*"/s//os_index="many"/'); case_ "hwloc XML" "wrong type" accept "$f" "$W" topo --xml "$f"
f=$(damaged "$seed" x-huge.xml '0,/local_memory="[0-9]*"/s//local_memory="99999999999999999999999"/'); case_ "hwloc XML" "huge memory" accept "$f" "$W" topo --xml "$f"
case_ "hwloc XML" "a file hwloc's own import crashes on" reject "$S/tests/fuzz/third-party/hwloc-2.9.0-xml-segv.xml" \
    topo1 "$S/tests/fuzz/third-party/hwloc-2.9.0-xml-segv.xml"
f=$(damaged "$seed" x-host.xml "0,/name=\"PCIVendor\" value=\"[^\"]*\"/s//name=\"PCIVendor\" value=\"$(esc "$hostile")\"/"); case_ "hwloc XML" "hostile string" accept "$f" "$W" topo --xml "$f"

# --- harvest's per-point files ------------------------------------------------------------
"$W" sweep "$S/jobs/campaigns/cpu-weak-test.cfg" --dry-run --results "$out/h" --templates "$S/templates" > /dev/null 2>&1
hp=$(ls -d "$out"/h/cpu-weak-test/p000*)
cp "$o/results.csv" "$hp/results.csv"; echo "exit status 0" > "$hp/DONE"
harv1() { "$W" harvest "$out/h/cpu-weak-test" --out "$o/harvest.csv"; }
export -f harv1
# harvest keeps going past a damaged row (a killed job's torn row must not
# cost the campaign's other rows): the row is skipped and named file:line
harvw() { "$W" harvest "$out/h/cpu-weak-test" --out "$out/harvest-warn.csv"; }
export -f harvw
cp "$hp/results.csv" "$out/h.csv"
head -c 200 "$out/h.csv" > "$hp/results.csv"; case_ "harvest results.csv" "truncated header" reject "$hp/results.csv" harv1 "$hp/results.csv"
cell() { awk -F, -v OFS=, -v c="$1" -v v="$2" 'NR == 3 { $c = v } 1' "$out/h.csv" > "$hp/results.csv"; }
cell 14 fast; case_ "harvest results.csv" "wrong type (iter_time_s)" warn "$hp/results.csv" harvw "$hp/results.csv"
cell 14 -3; case_ "harvest results.csv" "out of range (iter_time_s)" warn "$hp/results.csv" harvw "$hp/results.csv"
cell 14 1e999; case_ "harvest results.csv" "huge value (iter_time_s)" warn "$hp/results.csv" harvw "$hp/results.csv"
cell 14 nan; case_ "harvest results.csv" "NaN (iter_time_s)" warn "$hp/results.csv" harvw "$hp/results.csv"
cell 13 99999999999999999999; case_ "harvest results.csv" "huge iteration" warn "$hp/results.csv" harvw "$hp/results.csv"
cell 2 "$hostile"; case_ "harvest results.csv" "hostile schedule" accept "$hp/results.csv" harvw "$hp/results.csv"
cp "$out/h.csv" "$hp/results.csv"; sed -i "s|value = \"[^\"]*\";|value = \"$(esc "$traversal")\";|" "$hp/point.cfg"
case_ "harvest point.cfg" "path traversal in a value" reject "$hp/point.cfg" harv1 "$hp/point.cfg"

# --- nothing that existed changed ----------------------------------------------------------
snapshot > "$out/outputs.after"
if cmp -s "$out/outputs.before" "$out/outputs.after"; then
    pass "no existing output (results CSV, checkpoint, cluster file, plan, harvest CSV, campaign results) changed"
else
    fail "existing outputs changed:"; diff "$out/outputs.before" "$out/outputs.after" | head -n 10 | sed 's/^/    | /'
fi
echo "$rejected rejected, $warned rows skipped with file:line, $accepted accepted harmlessly; table: $table"
cat "$table"
finish
