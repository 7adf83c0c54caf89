#!/bin/sh
# Project mode on hosts that forbid user namespaces, each simulated with
# nsr-restrict: user.max_user_namespaces=0 (ENOSPC) and a Docker-like
# seccomp filter (clone with CLONE_NEWUSER: EPERM, clone3: ENOSYS).
#
# For each: --sandbox=required refuses (125) and points to nsrun doctor;
# --sandbox=best-effort runs with Landlock and seccomp and still keeps the
# command from writing outside the project, reading hidden files, reaching
# host sockets (unix, under a dir the test makes and under
# $XDG_RUNTIME_DIR) and TCP; the project's writes are live, reported, a
# protected path cannot be written, a project over --snapshot-limit is refused,
# and nsrun undo restores the project from the snapshot. Also --sandbox=off.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
R=$NSR_HELPERS/nsr-restrict
[ -x "$R" ] || skip_all "the nsr-restrict helper was not built"
landlock=$("$NSRUN" doctor --json | python3 -c 'import json, sys; print({c["name"]: c for c in json.load(sys.stdin)["checks"]}["landlock"]["ok"])')
[ "$landlock" = True ] || skip_all "no Landlock on this kernel: best-effort mode would be seccomp alone"
d=$(scratch)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['projects'][0]; print(eval(sys.argv[2]))" "$@"; }

# Host sockets and a TCP listener, outside any sandbox.
mkdir -p "$d/socks" "$d/xdg"
chmod 0700 "$d/xdg"
export XDG_RUNTIME_DIR="$d/xdg"
python3 -c '
import os, socket, sys, threading, time
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(16)
ss = [t]
for p in sys.argv[2:]:
    u = socket.socket(socket.AF_UNIX); u.bind(p); u.listen(16); ss.append(u)
def serve(s):
    while True:
        c, _ = s.accept(); c.close()
for s in ss:
    threading.Thread(target=serve, args=(s,), daemon=True).start()
open(sys.argv[1] + ".tmp", "w").write(str(t.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)' "$d/port" "$d/socks/host.sock" "$d/xdg/bus" &
srv=$!
i=0; while [ ! -s "$d/port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
port=$(cat "$d/port")
probe='
import socket, sys
def t(name, fam, addr):
    try:
        s = socket.socket(fam); s.settimeout(3); s.connect(addr); print(name, "reached")
    except OSError as e:
        print(name, "blocked", e.errno)
t("tcp", socket.AF_INET, ("127.0.0.1", int(sys.argv[1])))
t("unix", socket.AF_UNIX, sys.argv[2])
t("xdg", socket.AF_UNIX, sys.argv[3])'
run python3 -c "$probe" "$port" "$d/socks/host.sock" "$d/xdg/bus"
is "$out" "tcp reached
unix reached
xdg reached" "outside, the listener and both host sockets answer (so the checks below can fail)"

# A secret beside a readable file in the home, hidden with --hide.
hidden=
if [ -n "${HOME:-}" ] && [ -w "$HOME" ]; then
	secret=$HOME/.nsr-t250-secret-$$ visible=$HOME/.nsr-t250-visible-$$
	echo secret > "$secret"; echo visible > "$visible"
	hidden="--hide $secret"
fi

# The command best-effort mode runs: project writes, then every escape.
cmd='echo new > sub/new; echo changed > mod; rm sub/del; mkdir -p sub/made/in; echo f > sub/made/in/f
(echo evil > .git/hooks/pre-commit) 2>/dev/null && echo hook-write: yes || echo hook-write: no
touch new-at-top 2>/dev/null && echo top-create: yes || echo top-create: no
(echo x > "$OUT/escaped") 2>/dev/null && echo write-outside: yes || echo write-outside: no
ls "$STATE" >/dev/null 2>&1 && echo state-dir: visible || echo state-dir: hidden
ls "$XDG_RUNTIME_DIR" >/dev/null 2>&1 && echo runtime-dir: visible || echo runtime-dir: hidden
if [ -n "$HIDDEN_FILE" ]; then
	cat "$HIDDEN_FILE" 2>/dev/null || echo secret: hidden
	cat "$VISIBLE"
	(echo x >> "$VISIBLE") 2>/dev/null && echo home-write: yes || echo home-write: no
fi
[ -d "$TMPDIR" ] && echo tmp > "$TMPDIR/t" && echo tmpdir: ok
python3 -c "$PROBE" "$PORT" "$SOCK" "$XDG_RUNTIME_DIR/bus"'

n=0
for restriction in "--max-userns 0" "--deny-userns EPERM"; do
	n=$((n + 1))
	label="[$restriction]"
	P=$d/p$n S=$d/s$n
	mkdir -p "$P/.git/hooks" "$P/sub"
	echo keep > "$P/keep"; echo old > "$P/mod"; echo bye > "$P/sub/del"; echo good > "$P/.git/hooks/pre-commit"

	run "$R" $restriction -- "$NSRUN" -p "$P" --state-dir "$S" -- sh -c 'echo x > should-not'
	is "$rc" 125 "$label --sandbox=required (the default) refuses: exit 125"
	like "$err" 'run "nsrun doctor" for details' "$label ... and points to nsrun doctor"
	like "$err" "best-effort" "$label ... and to best-effort mode"
	check "$label ... and runs nothing" test ! -e "$P/should-not"
	run "$R" $restriction -- "$NSRUN" -p "$P" --state-dir "$S" --sandbox required -- true
	is "$rc" 125 "$label --sandbox required, spelled apart, too"

	run env OUT="$d" STATE="$S" HIDDEN_FILE="${secret:-}" VISIBLE="${visible:-}" PROBE="$probe" PORT="$port" \
		SOCK="$d/socks/host.sock" "$R" $restriction -- "$NSRUN" -p "$P" --state-dir "$S" --sandbox=best-effort \
		$hidden --report "$d/r$n.json" -- sh -c "$cmd"
	is "$rc" 0 "$label best-effort mode runs the command"
	like "$(printf '%s\n' "$err" | head -1)" '^nsrun: best-effort sandbox: landlock, seccomp \(no user namespace: .+\)$' \
		"$label ... and names its layers and why first, on stderr"
	case $restriction in
	--max*) like "$err" "no user namespace: user\.max_user_namespaces is 0.*ENOSPC" "$label ... the reason: the sysctl" ;;
	*) like "$err" "no user namespace: a seccomp filter denies unshare\(CLONE_NEWUSER\).*EPERM" "$label ... the reason: a seccomp filter" ;;
	esac
	like "$out" "write-outside: no" "$label writes outside the project are blocked"
	check "$label ... nothing was written there" test ! -e "$d/escaped"
	like "$out" "state-dir: hidden" "$label the state dir cannot be read"
	like "$out" "runtime-dir: hidden" "$label \$XDG_RUNTIME_DIR cannot be read"
	like "$out" "tmpdir: ok" "$label TMPDIR is a private, writable dir"
	if [ -n "$hidden" ]; then
		like "$out" "secret: hidden" "$label a --hide file in the home cannot be read"
		like "$out" "^visible$" "$label ... while its sibling can"
		like "$out" "home-write: no" "$label ... but not be written"
		is "$(cat "$visible")" "visible" "$label ... the home is unchanged"
	else
		skip "$label --hide in the home" "no writable HOME"
	fi
	like "$out" "^tcp blocked" "$label TCP connect to a host listener is blocked"
	like "$out" "^unix blocked" "$label a host unix socket under a dir of the test is blocked"
	like "$out" "^xdg blocked" "$label a host unix socket under \$XDG_RUNTIME_DIR is blocked"
	is "$(cat "$P/sub/new"):$(cat "$P/mod"):$(cat "$P/sub/made/in/f"):$(test -e "$P/sub/del" && echo del)" "new:changed:f:" \
		"$label the project's writes are live"
	like "$out" "hook-write: no" "$label a protected path (.git/hooks) is not writable during the run"
	is "$(cat "$P/.git/hooks/pre-commit")" "good" "$label ... and unchanged"
	like "$out" "top-create: no" "$label the project's top dir (an ancestor of .git/hooks) takes no new entries (a documented limit)"
	is "$(json "$d/r$n.json" 'd["layers"]')" "['landlock', 'seccomp']" "$label report: the layers are landlock and seccomp"
	is "$(json "$d/r$n.json" 'd["outcome"], p["outcome"]')" "('committed', 'committed')" "$label report: committed"
	is "$(json "$d/r$n.json" '[(c["path"], c["change"]) for c in p["changes"]]')" \
		"[('mod', 'modified'), ('sub/del', 'deleted'), ('sub/made', 'created'), ('sub/made/in', 'created'), ('sub/made/in/f', 'created'), ('sub/new', 'created')]" \
		"$label report: created, modified and deleted, from the snapshot comparison"
	is "$(json "$d/r$n.json" '[(c["path"], c["change"]) for c in p["protected"]]')" "[]" \
		"$label report: no protected change got through"

	run "$R" $restriction -- "$NSRUN" undo --state-dir "$S" -p "$P"
	is "$rc" 0 "$label nsrun undo works for a best-effort run"
	is "$(cat "$P/mod"):$(cat "$P/sub/del"):$(ls "$P" "$P/sub" | tr '\n' ' ')" "old:bye:$P: keep mod sub  $P/sub: del " \
		"$label ... and restores the project from the snapshot"

	head -c 3000000 /dev/urandom > "$P/big"
	if cp --reflink=always "$P/big" "$S/reflink-probe" 2>/dev/null; then
		rm -f "$S/reflink-probe"
		skip "$label --snapshot-limit" "this file system has reflinks: the snapshot copies nothing"
	else
		run "$R" $restriction -- "$NSRUN" -p "$P" --state-dir "$S" --sandbox=best-effort --snapshot-limit 1M -- touch should-not
		is "$rc" 125 "$label a project bigger than --snapshot-limit is refused: 125"
		like "$err" "snapshot.*limit of 1\.0 MiB.*--snapshot-limit" "$label ... with a clear message"
		check "$label ... before anything ran" test ! -e "$P/should-not"
	fi
	rm -f "$P/big"
done

# --sandbox=off: no isolation, but still the snapshot, the report and undo.
P=$d/off; mkdir -p "$P"; echo old > "$P/mod"
run "$NSRUN" -p "$P" --state-dir "$d/soff" --sandbox=off --report "$d/off.json" -- sh -c "echo changed > mod; echo x > '$d/off-outside'"
is "$rc" 0 "--sandbox=off runs the command"
like "$err" "^nsrun: --sandbox=off: no isolation" "... and says so"
check "... without isolation (it wrote outside)" test -e "$d/off-outside"
is "$(json "$d/off.json" 'd["layers"], [(c["path"], c["change"]) for c in p["changes"]]')" "(['none'], [('mod', 'modified')])" \
	"... the report: layers none, the change"
run "$NSRUN" undo --state-dir "$d/soff" -p "$P"
is "$rc:$(cat "$P/mod")" "0:old" "... and undo restores it"
run "$NSRUN" -p "$P" --state-dir "$d/soff" --sandbox=off --keep -- true
is "$rc" 125 "--keep with live writes is refused"
run "$NSRUN" -p "$P" --state-dir "$d/soff" --sandbox=bogus -- true
like "$rc:$err" "^125:nsrun: --sandbox takes required, best-effort or off" "an unknown mode is a usage error (125 in project mode)"
run "$NSRUN" --sandbox=best-effort -- true
is "$rc:$err" "125:nsrun: --sandbox only works in project mode (--project DIR)" "--sandbox needs --project"

kill $srv 2>/dev/null
wait $srv 2>/dev/null
[ -n "${secret:-}" ] && rm -f "$secret" "$visible"
rm -rf "$d"
done_testing
