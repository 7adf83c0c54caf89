#!/bin/sh
# A run or session whose nsrun was killed (kill -9) shows in history and its
# --json as kept, with its change counts, at once: no later command has to
# clean up first, and a process its parent has not reaped yet (a zombie)
# counts as gone.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null || skip_all "needs python3 to read the JSON"
d=$(scratch)
P=$d/proj
S=$d/state
F=$d/flag
NS="--state-dir $S"
mkdir -p "$P" "$F"
echo one > "$P/a"

# field RUN KEY: a top-level field, or "created:modified" of the first project
field() {
	"$NSRUN" history $NS --json | python3 -c 'import json, sys
run, key = sys.argv[1], sys.argv[2]
for r in json.load(sys.stdin):
    if r["run_id"] == run:
        p = r["projects"][0]
        print(r[key] if key != "counts" else "%d:%d" % (p["created"], p["modified"]))' "$1" "$2"
}

# ---- a one-shot run whose nsrun is killed while the command runs -------------
"$NSRUN" -p "$P" $NS --rw "$F" -- sh -c 'echo new > b; echo more >> a; touch '"$F"'/ready; exec sleep 60' \
	>/dev/null 2>&1 &
pid=$!
wait_until 20 test -e "$F/ready"
check "the command wrote its changes" test -e "$F/ready"
RUN=$("$NSRUN" history $NS --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["run_id"])')
is "$(field "$RUN" outcome)" "running" "a live run is running"
kill -9 "$pid"
# dead PID: gone, or a zombie its parent has not reaped
dead() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
# The process is not reaped (our wait comes after the checks): a zombie.
wait_until 10 dead "$pid"
is "$(field "$RUN" outcome)" "kept" "history: a killed run is kept at once"
is "$(field "$RUN" counts)" "1:1" "history: with its counts (1 created, 1 modified)"
run "$NSRUN" history $NS
like "$out" "$RUN +kept .*\\+1 ~1 -0" "history's text says the same"
wait "$pid" 2>/dev/null
run "$NSRUN" commit $NS "$RUN"
is "$rc" 0 "the kept run commits"
is "$(cat "$P/b" 2>/dev/null):$(tail -1 "$P/a")" "new:more" "its changes reach the project"

# ---- a session whose daemon is killed ---------------------------------------
run "$NSRUN" session start --project "$P" $NS --json
is "$rc" 0 "session start"
ID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
dpid=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
run "$NSRUN" exec $NS "$ID" -- sh -c 'echo s > c; echo t > e'
is "$rc" 0 "a step writes two files"
is "$(field "$ID" outcome)" "running" "a live session is running"
kill -9 "$dpid"
wait_until 10 dead "$dpid"
is "$(field "$ID" outcome)" "kept" "history: a session whose daemon died is kept at once"
is "$(field "$ID" counts)" "2:0" "history: with its counts (2 created)"
run "$NSRUN" session list $NS --json
is "$out" "[]" "session list: the dead session is no longer listed as live"
run "$NSRUN" discard $NS "$ID"
is "$rc" 0 "the kept session run can be discarded"
done_testing
