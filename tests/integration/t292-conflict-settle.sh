#!/bin/sh
# Conflicts that can be settled (docs/conflicts.md, "Settling a conflict"):
# --on-conflict=prefer-sandbox puts the sandbox's version over a host edit
# (backed up, nsrun undo restores it) and prefer-host keeps the host's; in
# one-shot runs, in "nsrun commit RUN" of a kept run, and in session
# commits, where prefer-host also shows the session the host's file and a
# settled path is never reported again, while an open one is reported as
# "still in conflict since RUN". A project's .nsrun/profile may only make
# on-conflict stricter.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
SY=$d/sync
mkdir -p "$SY"
command -v python3 >/dev/null 2>&1 || skip_all "needs python3"

# settle FILE...: until the clock is past the files' ctimes by more than the
# coarse clock's lag, so that a start taken now is after them.
settle() {
	python3 -c 'import os, sys, time
m = max(os.lstat(f).st_ctime for f in sys.argv[1:])
while time.time() < m + 0.05: time.sleep(0.005)' "$@"
}

# race P OPTS...: a one-shot run on P that appends "sandbox" to f and
# writes g, while the host appends "host" to f after the command started
# (the command waits for the host's write through a --rw dir). stderr in
# $d/err, the status in $rc.
race() {
	_p=$1; shift
	rm -f "$SY/ready" "$SY/go"
	echo base > "$_p/f"; echo old > "$_p/g"
	settle "$_p/f" "$_p/g"
	"$NSRUN" -p "$_p" $NS --rw "$SY" "$@" -- sh -c 'echo sandbox >> f; echo new > g; : > '"$SY"'/ready
		i=0; while [ ! -e '"$SY"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done' >/dev/null 2>"$d/err" &
	_pid=$!
	if wait_until 20 test -e "$SY/ready"; then
		echo host >> "$_p/f"
	else
		diag "the command never got ready"
	fi
	: > "$SY/go"
	wait $_pid
	rc=$?
}
two() { printf '%s\n%s\n' "$1" "$2"; }

# ---- one-shot runs --------------------------------------------------------------
P=$d/one; mkdir -p "$P"
race "$P" --on-conflict=prefer-sandbox --report "$d/rep.json"
is "$rc" 0 "prefer-sandbox: the run succeeds"
is "$(cat "$P/f")" "$(two base sandbox)" "prefer-sandbox: the sandbox's version replaced the host's edit"
is "$(cat "$P/g")" "new" "... and the rest applied"
like "$(cat "$d/err")" "settled for the sandbox: f changed on the host during the run" "... and it says so"
like "$(tr -d ' \n' < "$d/rep.json")" '"conflicts":\[\],"overruled":\[\{"path":"f","reason":"changedonthehostduringtherun"\}\]' \
	"... in the report too (overruled, no conflict)"
run "$NSRUN" undo $NS -p "$P"
is "$rc:$(cat "$P/f")" "0:$(two base host)" "nsrun undo brings the host's version back"

race "$P" --on-conflict=prefer-host --report "$d/rep.json"
is "$(cat "$P/f")" "$(two base host)" "prefer-host: the host's version stays"
is "$(cat "$P/g")" "new" "... the rest applied"
like "$(cat "$d/err")" "settled for the host: f changed on the host during the run; the host's version stays" \
	"... and it says so"
kept=$(sed -n "s/.*the sandbox's is kept at \(.*\)$/\1/p" "$d/err")
is "$(cat "$kept" 2>/dev/null)" "$(two base sandbox)" "... with the sandbox's version set aside in the run dir"
like "$(tr -d ' \n' < "$d/rep.json")" '"conflicts":\[\{"path":"f",[^}]*"settled":"host"\}' "... and the report says the conflict is settled for the host"

# A git repo: the command commits a change of a, the host edits a meanwhile.
# prefer-sandbox leaves commit and work tree in step (docs/conflicts.md).
if command -v git >/dev/null 2>&1; then
	G=$d/repo; mkdir -p "$G"
	(cd "$G" && git init -q && git config user.email t@t && git config user.name t && echo 0 > a &&
		git add a && git commit -qm init) >/dev/null 2>&1
	settle "$G/a" "$G/.git/index"
	rm -f "$SY/ready" "$SY/go"
	"$NSRUN" -p "$G" $NS --rw "$SY" --on-conflict=prefer-sandbox -- sh -c 'echo sandbox > a
		git -c user.email=t@t -c user.name=t commit -qam inside; : > '"$SY"'/ready
		i=0; while [ ! -e '"$SY"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done' >/dev/null 2>"$d/err" &
	gp=$!
	wait_until 20 test -e "$SY/ready" && echo host > "$G/a"
	: > "$SY/go"
	wait $gp
	is "$(git -C "$G" log -1 --format=%s):$(cat "$G/a"):$(git -C "$G" status --porcelain)" "inside:sandbox:" \
		"prefer-sandbox on a git repo: the command's commit and its work tree, in step"
	check "... and the repository is sound" sh -c "git -C \"$G\" fsck >/dev/null 2>&1"
else
	skip "prefer-sandbox on a git repo" "no git"
	skip "... and the repository is sound" "no git"
fi

# ---- nsrun commit RUN --on-conflict=... -----------------------------------------
race "$P" --keep
run_id=$(ls "$S/runs" | sort | tail -n 1)
run "$NSRUN" commit $NS "$run_id" --on-conflict=keep-all
is "$rc:$(cat "$P/g")" "0:old" "commit RUN --on-conflict=keep-all: nothing applied"
like "$err" "nothing applied \(--on-conflict=keep-all\)" "... and it says why"
run "$NSRUN" commit $NS "$run_id" --on-conflict=prefer-sandbox
is "$rc" 0 "commit RUN --on-conflict=prefer-sandbox succeeds on the run keep-all left kept"
is "$(cat "$P/f"):$(cat "$P/g")" "$(two base sandbox):new" "... the sandbox's version replaced the host edit made during the run"
run "$NSRUN" undo $NS -p "$P"
is "$(cat "$P/f")" "$(two base host)" "... and undo restores the host's"

race "$P" --keep
run_id=$(ls "$S/runs" | sort | tail -n 1)
run "$NSRUN" commit $NS "$run_id" --on-conflict=prefer-host
is "$rc:$(cat "$P/f"):$(cat "$P/g")" "0:$(two base host):new" "commit RUN --on-conflict=prefer-host keeps the host's edit, applies the rest"
run "$NSRUN" commit $NS "$run_id" --on-conflict=sideways
like "$rc:$err" "^125:.*--on-conflict takes apply-rest, keep-all, fail, prefer-host or prefer-sandbox" \
	"commit RUN refuses an unknown mode"

# ---- sessions -----------------------------------------------------------------------
Q=$d/sess; mkdir -p "$Q"
echo base > "$Q/f"; echo base > "$Q/h"
settle "$Q/f" "$Q/h"
ID=$("$NSRUN" session start --project "$Q" $NS)
[ -n "$ID" ] || { diag "session start failed"; done_testing; }
"$NSRUN" exec $NS "$ID" -- sh -c 'echo sandbox >> f' >/dev/null 2>&1
echo host >> "$Q/f"
run "$NSRUN" session commit $NS "$ID"
first=$(printf '%s\n' "$err" | sed -n 's/.*conflict (run \([^)]*\)).*/\1/p')
like "$err" "conflict: f changed on the host during the run" "session: a host edit of a path the session changed is a conflict"
run "$NSRUN" session commit $NS "$ID"
like "$err" "conflict: f still in conflict since $first; not applied" \
	"... the next commit reports it as still in conflict since the commit that found it"
unlike "$err" "changed on the host" "... not as a new host change"
run "$NSRUN" exec $NS "$ID" -- cat f
is "$out" "$(two base sandbox)" "... the session still sees its own version"
run "$NSRUN" session commit $NS "$ID" --on-conflict=prefer-host
is "$rc" 0 "session commit --on-conflict=prefer-host succeeds"
like "$err" "settled for the host: f \(in conflict since $first\)" "... settles the open conflict"
is "$(cat "$Q/f")" "$(two base host)" "... the host's version stays"
run "$NSRUN" exec $NS "$ID" -- cat f
is "$out" "$(two base host)" "... and the next step sees the host's file"
run "$NSRUN" session commit $NS "$ID"
unlike "$err" " f " "a later commit does not report the settled path again"
is "$(cat "$Q/f")" "$(two base host)" "... nor applies it"

# A fresh conflict settled for the host at once, in the same commit.
"$NSRUN" exec $NS "$ID" -- sh -c 'echo sandbox >> h' >/dev/null 2>&1
echo host >> "$Q/h"
run "$NSRUN" session commit $NS "$ID" --on-conflict=prefer-host
like "$err" "settled for the host: h changed on the host during the run; the session sees the host's version now" \
	"prefer-host settles a new conflict in the commit that finds it"
run "$NSRUN" exec $NS "$ID" -- cat h
is "$out" "$(two base host)" "... and the session sees the host's file"

# prefer-sandbox: the host's edit is overwritten, backed up, undoable.
"$NSRUN" exec $NS "$ID" -- sh -c 'echo again > f' >/dev/null 2>&1
echo host2 >> "$Q/f"
run "$NSRUN" session commit $NS "$ID" --on-conflict=prefer-sandbox
like "$err" "settled for the sandbox: f changed on the host during the run" "session commit --on-conflict=prefer-sandbox settles it for the sandbox"
is "$(cat "$Q/f")" "again" "... the sandbox's version is in place"
run "$NSRUN" undo $NS -p "$Q"
is "$rc:$(cat "$Q/f")" "0:$(printf 'base\nhost\nhost2')" "... and nsrun undo restores the host's version"

# stop --commit takes the mode too.
"$NSRUN" exec $NS "$ID" -- sh -c 'echo last > h' >/dev/null 2>&1
echo host3 >> "$Q/h"
run "$NSRUN" session stop $NS "$ID" --commit --on-conflict=prefer-sandbox
is "$rc:$(cat "$Q/h")" "0:last" "session stop --commit --on-conflict=prefer-sandbox"
# (an nsrun without the option refused the stop: end the session all the same)
"$NSRUN" session stop $NS "$ID" --discard >/dev/null 2>&1

# ---- profiles ------------------------------------------------------------------------
R=$d/prof; mkdir -p "$R/.nsrun"
printf 'on-conflict prefer-sandbox\n' > "$R/.nsrun/profile"
run "$NSRUN" -p "$R" $NS -- true
like "$rc:$err" "^125:.*profile:1: --on-conflict prefer-sandbox would loosen --on-conflict apply-rest" \
	"a project's profile cannot ask for prefer-sandbox"
printf 'on-conflict prefer-host\n' > "$R/.nsrun/profile"
run "$NSRUN" -p "$R" $NS -q -- true
is "$rc" 0 "... it may ask for prefer-host (a host edit stays either way)"
printf 'on-conflict keep-all\n' > "$R/.nsrun/profile"
run "$NSRUN" -p "$R" $NS -q -- true
is "$rc" 0 "... and for keep-all"

done_testing
