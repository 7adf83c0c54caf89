#!/bin/sh
# issue 23.5: a fifo, socket or device node never reaches a project. A fifo
# as .git/HEAD or package.json hangs the host's git status (and any prompt
# that runs git); so the commit never creates one, and never replaces a
# file, dir or symlink with one. Such changes are dropped and listed in
# "protected", whatever path brought them: a one-shot overlay run,
# --no-overlay (live writes), a kept run committed later (and its diff),
# and a session's commit.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v git >/dev/null || skip_all "needs git"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip_all "needs python3 to bind a unix socket"
d=$(scratch)
S=$d/state
NS="--state-dir $S"

# A project with a git repository, a file, a dir, a symlink and a fifo of
# the user's own.
mkproject() {
	mkdir -p "$1/d"
	git init -q "$1"
	echo '{"name":"x"}' > "$1/package.json"
	echo keep > "$1/d/f"
	ln -s package.json "$1/link"
	mkfifo "$1/hostfifo"
	chmod 0644 "$1/hostfifo"
}

# What the hostile command does: fifos over a file, .git/HEAD, a dir and a
# symlink; a new fifo and socket; a fifo inside a new dir; a chmod of the
# host's fifo; and one ordinary change that must still land. A device
# node where the kernel lets it (a 0:0 char device in a user namespace).
HOSTILE="rm package.json && mkfifo package.json &&
rm .git/HEAD && mkfifo .git/HEAD &&
rm -r d && mkfifo d &&
rm link && mkfifo link &&
mkfifo newfifo &&
'$PY' -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' &&
mkdir nd && mkfifo nd/f && echo x > nd/x &&
chmod 0600 hostfifo &&
echo ok > ok.txt &&
if mknod dev c 0 0 2>/dev/null && [ -c dev ]; then echo made-dev; fi"

# Waits until the clock is past the project's ctimes: an edit in the same
# tick as the run's start counts as a host change (a conflict).
settle() {
	"$PY" -c 'import os, sys, time
m = max(os.lstat(os.path.join(r, n)).st_ctime for a in sys.argv[1:] for r, ds, fs in os.walk(a) for n in ds + fs + ["."])
while time.time() < m + 0.05: time.sleep(0.005)' "$@"
}

protected_paths() { # REPORT: the protected paths of project 0, sorted
	"$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted(p["path"] for p in r["projects"][0].get("protected", []) if p["action"] == "dropped")))' "$1"
}

# verify LABEL DIR: the project after a commit of HOSTILE.
verify() {
	_l=$1 _p=$2
	is "$(cd "$_p" && find . -type p -o -type s -o -type c -o -type b | sort | tr '\n' ' ')" "./hostfifo " \
		"$_l: no fifo, socket or device node reached the project (only the user's own fifo)"
	check "$_l: package.json is the original file" test -f "$_p/package.json" -a ! -p "$_p/package.json"
	is "$(timeout 5 cat "$_p/package.json" 2>/dev/null)" '{"name":"x"}' "$_l: ... with its content"
	check "$_l: .git/HEAD is still a file" test -f "$_p/.git/HEAD" -a ! -p "$_p/.git/HEAD"
	run timeout 10 git -C "$_p" status --porcelain
	is "$rc" 0 "$_l: git status on the project completes"
	check "$_l: the dir a fifo replaced is the dir, with its file" test -d "$_p/d" -a -f "$_p/d/f"
	check "$_l: the symlink a fifo replaced is the symlink" test -L "$_p/link"
	check "$_l: the host's fifo is still a fifo" test -p "$_p/hostfifo"
	is "$(stat -c %a "$_p/hostfifo")" 644 "$_l: ... and its chmod was dropped too (no new fifo made for it)"
	check "$_l: the new dir came with its file, without its fifo" test -f "$_p/nd/x" -a ! -e "$_p/nd/f"
	check "$_l: the ordinary change landed" test -f "$_p/ok.txt"
}

# ---- a one-shot run with the overlay -------------------------------------------
P=$d/p1
mkproject "$P"
settle "$P"
run timeout 60 "$NSRUN" -p "$P" $NS --report "$d/r1.json" -- sh -c "$HOSTILE"
is "$rc" 0 "overlay: the run succeeds"
e1=$err
verify overlay "$P"
is "$(protected_paths "$d/r1.json")" ".git/HEAD d hostfifo link nd/f newfifo package.json sock" \
	"overlay: every dropped special file is listed in the report's protected list"
like "$e1" "protected: [0-9]+ changes dropped.*fifo, socket or device node" "overlay: ... and in the stderr summary"
reason=$("$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(set(p["reason"] for p in r["projects"][0]["protected"] if p["path"] == "package.json"))' "$d/r1.json")
like "$reason" "fifo, socket or device node" "overlay: the reason says what it is"

# ---- --no-overlay: the writes went live, the commit puts them back -------------
P=$d/p2
mkproject "$P"
settle "$P"
run timeout 60 "$NSRUN" -p "$P" $NS --no-overlay --report "$d/r2.json" -- sh -c "$HOSTILE"
is "$rc" 0 "--no-overlay: the run succeeds"
o2=$out e2=$err
verify --no-overlay "$P"
want=".git/HEAD d hostfifo link nd/f newfifo package.json sock"
case $o2 in *made-dev*) want=".git/HEAD d dev hostfifo link nd/f newfifo package.json sock" ;; esac
is "$(protected_paths "$d/r2.json")" "$want" "--no-overlay: every dropped special file is listed in protected"
like "$e2" "protected: [0-9]+ changes reverted.*fifo, socket or device node" "--no-overlay: ... and in the stderr summary"
case $o2 in
*made-dev*) check "--no-overlay: the device node the command made is gone" test ! -e "$P/dev" ;;
*) skip "--no-overlay: a device node" "the kernel refused mknod c 0 0 inside (as $NSR_WHO)" ;;
esac
run "$NSRUN" undo $NS -p "$P" --force
is "$rc" 0 "--no-overlay: the run still undoes"
check "--no-overlay: ... and the undo takes back the ordinary change" test ! -e "$P/ok.txt"

# ---- a kept run: diff shows them protected, commit drops them --------------------
P=$d/p3
mkproject "$P"
settle "$P"
run timeout 60 "$NSRUN" -p "$P" $NS --keep --report "$d/r3.json" -- sh -c "$HOSTILE"
is "$rc" 0 "--keep: the run succeeds"
RUN=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$d/r3.json" 2>/dev/null)
run timeout 20 "$NSRUN" diff $NS "$RUN"
is "$rc" 0 "diff of the kept run completes"
like "$out" "protected package.json \(will not be applied: a fifo, socket or device node" \
	"diff: the fifo over package.json is shown protected"
unlike "$out" "(^|[^d] )(created|modified|type_changed) other " "diff: no special file is listed as a change to apply"
run timeout 60 "$NSRUN" commit $NS "$RUN"
is "$rc" 0 "commit RUN succeeds"
verify "commit RUN" "$P"

# ---- a session -------------------------------------------------------------------
P=$d/p4
mkproject "$P"
settle "$P"
run timeout 30 "$NSRUN" session start --project "$P" $NS --json
ID=$(printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
if [ -z "$ID" ]; then
	not_ok "session: start"
	diag "$err"
else
	run timeout 60 "$NSRUN" exec $NS "$ID" -- sh -c "$HOSTILE"
	is "$rc" 0 "session: the step succeeds"
	run timeout 60 "$NSRUN" session commit $NS "$ID"
	is "$rc" 0 "session: commit succeeds"
	like "$err" "protected: [0-9]+ changes dropped" "session: the commit says what it dropped"
	verify session "$P"
	run timeout 30 "$NSRUN" session stop $NS --discard "$ID"
	is "$rc" 0 "session: stop"
fi

rm -rf "$d"
done_testing
