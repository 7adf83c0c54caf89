#!/bin/sh
# Best-effort mode confines as well as it claims (issue 13). Every run has
# user namespaces refused the way Docker's default profile refuses them
# (nsr-restrict --deny-userns EPERM):
#   - no Landlock (landlock_* refused with ENOSYS) means no run: 125 and a
#     pointer to nsrun doctor; --sandbox=off still runs;
#   - the command cannot act on the user's other processes (prlimit,
#     renice, taskset, ionice, PRIO_USER) but can on itself;
#   - the protected git paths are not writable during the run (EACCES);
#   - --ro DIR does not show the hidden paths below DIR;
#   - only the terminal nsrun runs on is granted in /dev/pts.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
R=$NSR_HELPERS/nsr-restrict
[ -x "$R" ] || skip_all "the nsr-restrict helper was not built"
[ "$("$NSRUN" doctor --json | python3 -c 'import json, sys; print({c["name"]: c for c in json.load(sys.stdin)["checks"]}["landlock"]["ok"])')" = True ] ||
	skip_all "no Landlock on this kernel: best-effort mode refuses to run"
d=$(scratch)
P=$d/p
mkdir -p "$P/.git/hooks"
echo good > "$P/.git/hooks/pre-commit"
echo "[core]" > "$P/.git/config"
be() { # be [NSRUN OPTION]... -- COMMAND...: a best-effort run of the project
	run "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort "$@"
}

# ---- 6: no Landlock, no run --------------------------------------------------
run "$R" --deny-userns EPERM --deny-landlock -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort \
	-- sh -c "touch ran; touch '$d/outside'"
is "$rc" 125 "[6] without Landlock, best-effort mode refuses: exit 125"
like "$err" "cannot confine the file system.*no Landlock" "[6] ... and says why"
like "$err" 'Run "nsrun doctor" for details' "[6] ... and points to nsrun doctor"
like "$err" "sandbox=off" "[6] ... and to --sandbox=off"
check "[6] ... and nothing ran" test ! -e "$P/ran" -a ! -e "$d/outside"
run "$R" --deny-userns EPERM --deny-landlock -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=off -- touch ran
is "$rc:$(test -e "$P/ran" && echo ran)" "0:ran" "[6] --sandbox=off still runs without it"
rm -f "$P/ran"

# ---- 5: the user's other processes -----------------------------------------
sleep 600 &
host=$!
export HOST="$host"
nice0=$(awk '{ print $19 }' "/proc/$host/stat")
[ "$nice0" = 19 ] && diag "the test runs at nice 19: the renice check below cannot fail"
aff0=$(taskset -p "$host" | sed 's/.*: //')
be -- sh -c '
try() { if "$@" >/dev/null 2>&1; then echo "$1: yes"; else echo "$1: no"; fi; }
try prlimit --pid "$HOST" --cpu=1
try renice -n 19 -p "$HOST"
try taskset -p 1 "$HOST"
try ionice -c 3 -p "$HOST"
python3 -c "
import os
for name, f in ((\"PRIO_USER\", lambda: os.setpriority(os.PRIO_USER, 0, 9)),
                (\"sched_setaffinity\", lambda: os.sched_setaffinity(int(os.environ[\"HOST\"]), {0}))):
    try:
        f(); print(name + \": yes\")
    except OSError as e:
        print(name + \": no\")
"
echo self:
try prlimit --cpu=100 true
try nice -n 5 true
try taskset 1 true
try ionice -c 3 true
try sh -c "ulimit -t 100"'
is "$rc" 0 "[5] the run went ahead"
is "$out" "prlimit: no
renice: no
taskset: no
ionice: no
PRIO_USER: no
sched_setaffinity: no
self:
prlimit: yes
nice: yes
taskset: yes
ionice: yes
sh: yes" "[5] prlimit, renice, taskset, ionice and PRIO_USER on a host process fail; on the command itself they work"
like "$(grep 'Max cpu time' "/proc/$host/limits")" "unlimited +unlimited" "[5] the host process's CPU limit is unchanged"
is "$(awk '{ print $19 }' "/proc/$host/stat")" "$nice0" "[5] ... and its nice value"
is "$(taskset -p "$host" | sed 's/.*: //')" "$aff0" "[5] ... and its CPU affinity"
check "[5] ... and it still runs" kill -0 "$host"
kill "$host"; wait "$host" 2>/dev/null

# ---- 2: the protected git paths are not writable during the run -------------
mkdir -p "$P/sub"
echo s > "$P/sub/s"
be -- sh -c '
try() { if sh -c "$1" 2>/dev/null; then echo "yes: $1"; else echo "no: $1"; fi; }
try "echo evil > .git/hooks/pre-commit"
try "echo evil > .git/hooks/post-checkout"
try "echo fsmonitor=evil >> .git/config"
try "rm .git/config"
try "ln -s ../../sub/s .git/hooks/pre-push"
try "echo evil > sub/evil && mv sub/evil .git/hooks/pre-rebase"
try "mv .git/hooks .git/hooks.old"
try "echo ok >> sub/s"
try "echo new > sub/new"
echo hooks: $(ls .git/hooks)'
is "$rc" 0 "[2] the run went ahead"
is "$out" "no: echo evil > .git/hooks/pre-commit
no: echo evil > .git/hooks/post-checkout
no: echo fsmonitor=evil >> .git/config
no: rm .git/config
no: ln -s ../../sub/s .git/hooks/pre-push
no: echo evil > sub/evil && mv sub/evil .git/hooks/pre-rebase
no: mv .git/hooks .git/hooks.old
yes: echo ok >> sub/s
yes: echo new > sub/new
hooks: pre-commit" "[2] writing, creating, linking, moving into or removing protected git paths fails during the run; the rest of the project is writable"
is "$(cat "$P/.git/hooks/pre-commit"):$(cat "$P/.git/config")" "good:[core]" "[2] the hook and the config are unchanged"
unlike "$err" "reverted" "[2] ... with nothing to put back afterwards"

# ---- 3: --ro DIR keeps the hidden paths below DIR hidden --------------------
mkdir -p "$d/vault/deeper"
echo secret > "$d/vault/secret"; echo visible > "$d/vault/visible"; echo deep > "$d/vault/deeper/f"
ln -s vault "$d/alias"
export D="$d"
be --ro "$d" --ro "$d/alias/deeper" --hide "$d/vault/secret" -- sh -c '
cat "$D/vault/secret" 2>/dev/null || echo secret: hidden
cat "$D/vault/visible" "$D/vault/deeper/f"
ls "$D/s" >/dev/null 2>&1 && echo state-dir: visible || echo state-dir: hidden
ls "$D/s/runs" >/dev/null 2>&1 && echo runs: visible || echo runs: hidden
(echo x > "$D/vault/visible") 2>/dev/null && echo write: yes || echo write: no'
is "$rc" 0 "[3] the run with --ro over hidden paths went ahead"
is "$out" "secret: hidden
visible
deep
state-dir: hidden
runs: hidden
write: no" "[3] --ro DIR shows DIR but not a --hide file nor the state dir below it; read-only"

# ---- 4: only nsrun's own terminal in /dev/pts ------------------------------
# nsrun runs on a pty (its session); the test holds a second one, as the
# user's other terminal would be.
cat > "$d/onpty.py" <<'EOF'
import os, pty, sys
m2, s2 = os.openpty()
other = os.ttyname(s2)
pid, m = pty.fork()
if pid == 0:
    os.environ["OTHER"] = other
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        b = os.read(m, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(st))
EOF
run python3 "$d/onpty.py" "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort -- sh -c '
t=$(tty)
case $t in /dev/pts/*) echo own-tty: pts ;; *) echo own-tty: "$t" ;; esac
(echo mine > "$t") 2>/dev/null && echo own-write: yes || echo own-write: no
[ "$t" != "$OTHER" ] && echo other: differs
(echo intruder > "$OTHER") 2>/dev/null && echo other-write: yes || echo other-write: no
(: < "$OTHER") 2>/dev/null && echo other-read: yes || echo other-read: no
ls /dev/pts >/dev/null 2>&1 && echo list: yes || echo list: no
(: < /dev/null) && echo devnull: yes'
if [ "$rc" = 0 ]; then
	is "$(printf '%s\n' "$out" | grep -v '^mine$' | grep -v '^nsrun: ')" "own-tty: pts
own-write: yes
other: differs
other-write: no
other-read: no
list: no
devnull: yes" "[4] the terminal nsrun runs on is writable by path; the user's other terminal is neither writable nor readable, and /dev/pts cannot be listed"
else
	not_ok "[4] the run on a pty: exit $rc"; diag "$out" "$err"
fi

rm -rf "$d"
done_testing
