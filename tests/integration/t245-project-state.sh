#!/bin/sh
# The state dir's records (issue 18): gc keeps the newest run of each
# project and survives absurd --keep-days; the run's meta file is written
# or the step fails; the live-write path never records a run without the
# project's lock.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
trap 'rm -rf "$d"' EXIT
S=$d/state
runs() { ls "$S/runs" 2>/dev/null | LC_ALL=C sort | tr '\n' ' '; }
newest_run() { ls "$S/runs" | LC_ALL=C sort | tail -n 1; }

# --- gc ----------------------------------------------------------------------
A=$d/a; B=$d/b; mkdir -p "$A" "$B"
"$NSRUN" -p "$A" --state-dir "$S" --quiet -- sh -c 'echo 1 > f'; a1=$(newest_run)
"$NSRUN" -p "$B" --state-dir "$S" --quiet -- sh -c 'echo 1 > f'; b1=$(newest_run)
"$NSRUN" -p "$A" --state-dir "$S" --quiet -- sh -c 'echo 2 > f'; a2=$(newest_run)
is "$(runs)" "$(printf '%s\n' "$a1" "$b1" "$a2" | LC_ALL=C sort | tr '\n' ' ')" "three runs of two projects"

run "$NSRUN" gc --state-dir "$S" --keep-days 1000000000000000
is "$rc" 0 "gc --keep-days with more days than since the epoch"
is "$(runs)" "$(printf '%s\n' "$a1" "$b1" "$a2" | LC_ALL=C sort | tr '\n' ' ')" "... keeps every run (no overflow into the future)"
run "$NSRUN" gc --state-dir "$S" --keep-days 99999999999999999999999
is "$rc" 125 "gc --keep-days out of range is refused (a usage error)"
like "$err" "keep-days takes a number of days" "... with a message"
is "$(runs)" "$(printf '%s\n' "$a1" "$b1" "$a2" | LC_ALL=C sort | tr '\n' ' ')" "... and removes nothing"

run "$NSRUN" gc --state-dir "$S" --keep-days 0
is "$rc" 0 "gc --keep-days 0"
is "$(runs)" "$(printf '%s\n' "$b1" "$a2" | LC_ALL=C sort | tr '\n' ' ')" "... prunes all but the newest run of each project"
run "$NSRUN" undo --state-dir "$S" -p "$A"
is "$rc" 0 "... which can still be undone"
is "$(cat "$A/f")" "1" "... back to the state before it"

# --- the meta file must be written ----------------------------------------------
# A file size limit (SIGXFSZ ignored, so writes fail with EFBIG) that the
# journal fits in but a meta file with a long command line does not.
long=$(head -c 40000 /dev/zero | tr '\0' x)
limited() { (trap '' XFSZ; ulimit -f 40 && exec "$@"); }
M=$d/m; mkdir -p "$M"; echo old > "$M/f"
before=$(runs)
run limited "$NSRUN" -p "$M" --state-dir "$S" -- sh -c 'echo ran > f' "$long"
is "$rc" 125 "a run whose meta file cannot be written fails (125)"
like "$err" "meta file" "... and says why"
is "$(cat "$M/f")" "old" "... and changes nothing"
is "$(runs)" "$before" "... and leaves no run behind"

run "$NSRUN" -p "$M" --state-dir "$S" --keep --quiet -- sh -c 'echo kept > f' "$long"
is "$rc" 0 "a kept run with a long command line"
k=$(newest_run)
run limited "$NSRUN" commit --state-dir "$S" "$k"
is "$rc" 1 "commit whose new state cannot be recorded exits 1"
like "$err" "could not be recorded" "... and says so"
grep -q '^state kept$' "$S/runs/$k/meta"; kept=$?
is "$kept" 0 "... (the meta file still says kept, not a torn file)"
is "$(ls -a "$S/runs/$k" | grep -c 'tmp')" "0" "... and no temporary file is left"

"$NSRUN" -p "$M" --state-dir "$S" --quiet -- sh -c 'echo applied > f' "$long"
u=$(newest_run)
run limited "$NSRUN" undo --state-dir "$S" "$u"
is "$rc" 1 "undo whose run cannot be marked undone exits 1"
like "$err" "could not be recorded" "... and says so"

# --- the live-write path takes the project's lock -------------------------------
L=$d/live; mkdir -p "$L"
S2=$d/state2
"$NSRUN" -p "$L" --state-dir "$S2" --no-overlay --quiet -- sh -c 'echo x > started; while [ ! -e go ]; do sleep 0.01; done; echo done > out' \
	>"$d/live.out" 2>"$d/live.err" &
w=$!
if wait_until 20 test -e "$L/started"; then
	# The lock can no longer be taken (a dir where its file was).
	key=$(ls "$S2/projects")
	rm -f "$S2/projects/$key/lock"; mkdir "$S2/projects/$key/lock"
	touch "$L/go"
	wait $w; lrc=$?
	is "$lrc" 125 "--no-overlay: a run whose project lock cannot be taken fails (125)"
	like "$(cat "$d/live.err")" "could not be recorded for undo" "... and says the changes are in place, unrecorded"
	is "$(cat "$L/out" 2>/dev/null)" "done" "... (the command did run)"
else
	kill $w 2>/dev/null; wait $w
	not_ok "--no-overlay: the command started"; diag "$(cat "$d/live.err")"
fi
done_testing
