#!/bin/sh
# Best-effort mode (user namespaces refused, as Docker's profile does, with
# nsr-restrict): nothing the command starts outlives nsrun. The command
# leaves behind a chain of 100 nested shells, a setsid'd shell, a double
# fork and a process that forks as fast as it can (with 200 setsid'd
# grandchildren); each waits for a file the test creates only after nsrun
# has exited, then writes a git hook and a file of the project. After nsrun
# returns, none of them may still run and neither write may land. (Their
# files are in w/: the project's top dir takes no new entries, as it holds
# .git.)
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
command -v setsid >/dev/null 2>&1 || skip_all "setsid is needed"
R=$NSR_HELPERS/nsr-restrict
[ -x "$R" ] || skip_all "the nsr-restrict helper was not built"
[ "$("$NSRUN" doctor --json | python3 -c 'import json, sys; print({c["name"]: c for c in json.load(sys.stdin)["checks"]}["landlock"]["ok"])')" = True ] ||
	skip_all "no Landlock on this kernel: best-effort mode refuses to run"
d=$(scratch)
P=$d/p
mkdir -p "$P/.git/hooks" "$P/w"
tag=t251-$$-$(date +%s%N)

# The processes of this test still alive: one with a thread that is not a
# zombie (a zombie main thread may have live siblings).
# The environment is read through each thread, as a zombie main thread
# has none.
# nsrun's own background work (the removal of the snapshot's remainder,
# gc) is detached on purpose and carries the mark too: it is nsrun's
# binary, never the command's, so it is not a survivor.
nsrun_exe=$(readlink -f "$NSRUN")
survivors() {
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$nsrun_exe" ] && continue
		for t in "$p"/task/*; do
			st=$(sed 's/.*) \(.\).*/\1/' "$t/stat" 2>/dev/null)
			[ -n "$st" ] && [ "$st" != Z ] || continue
			tr '\0' '\n' < "$t/environ" 2>/dev/null | grep -qx "NSR_T251_MARK=$tag" && echo "$pid"
			break
		done
	done
}

cat > "$P/chain.sh" <<'EOF'
n=$1
if [ "$n" -gt 0 ]; then
	sh ./chain.sh $((n - 1))
	exit
fi
: > w/ready.chain
while [ ! -e w/go ]; do sleep 0.1; done
echo evil > .git/hooks/post-checkout; echo late > w/late.chain
EOF
cat > "$P/linger.sh" <<'EOF'
: > "w/ready.$1"
while [ ! -e w/go ]; do sleep 0.1; done
echo evil > .git/hooks/post-merge; echo late > "w/late.$1"
EOF
# Starts long-lived children without pause: some start after nsrun's
# first look at the tree, and only a later look finds them.
cat > "$P/spawner.sh" <<'EOF'
while :; do sleep 30 & sleep 0.01; done
EOF
cat > "$P/forker.py" <<'EOF'
import os, time
n = 0
while True:
    p = os.fork()
    if p == 0:
        # The first 200, then every 5th: these linger, so one forked
        # after nsrun's first look is found only by a later one.
        if (n < 200 or n % 5 == 0) and os.fork() == 0:
            os.setsid()
            while not os.path.exists("w/go"):
                time.sleep(0.2)
            open("w/late.fork", "w").write("late\n")
        os._exit(0)
    os.waitpid(p, 0)
    n += 1
    if n == 200:
        open("w/ready.fork", "w").close()
EOF
cmd='sh ./chain.sh 100 &
setsid sh ./linger.sh setsid &
(sh ./linger.sh double &) &
python3 forker.py &
sh ./spawner.sh &
i=0
while [ $i -lt 600 ]; do
	[ -e w/ready.chain ] && [ -e w/ready.setsid ] && [ -e w/ready.double ] && [ -e w/ready.fork ] && break
	sleep 0.1; i=$((i + 1))
done
cd w && ls ready.*'

before=$(survivors)
is "$before" "" "no process of this test runs before"
t0=$(date +%s%N)
run env NSR_T251_MARK="$tag" "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort \
	-- sh -c "$cmd"
t1=$(date +%s%N)
left=$(survivors)
: > "$P/w/go"
is "$rc" 0 "best-effort mode ran the command"
like "$err" "best-effort sandbox: landlock, seccomp" "... confined by Landlock and seccomp"
is "$out" "ready.chain
ready.double
ready.fork
ready.setsid" "the chain of 100 shells, setsid, the double fork, the fork loop and the spawner were all running when it exited"
is "$left" "" "no process the command started outlives nsrun"
if [ -n "$left" ]; then
	diag "$(echo "$left" | wc -l) survivors, e.g.: $(ps -o pid=,ppid=,args= -p "$(echo "$left" | head -3 | tr '\n' ',' | sed 's/,$//')")"
	for pid in $left; do kill -9 "$pid" 2>/dev/null; done
fi
check "... so the delayed hook writes never land" test ! -e "$P/.git/hooks/post-checkout" -a ! -e "$P/.git/hooks/post-merge"
is "$(ls "$P/w" | grep '^late' | tr '\n' ' ')" "" "... nor the delayed project writes"
diag "the run took $(((t1 - t0) / 1000000)) ms, the kill of about 300 processes included"

# A deeper chain on its own: the kill has no round limit.
cmd2='sh ./chain.sh 300 &
i=0; while [ ! -e w/ready.chain ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; ls w/ready.chain'
rm -f "$P/w/ready.chain" "$P/w/go"
run env NSR_T251_MARK="$tag" "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort \
	-- sh -c "$cmd2"
left=$(survivors)
: > "$P/w/go"
is "$rc:$out" "0:w/ready.chain" "a chain of 300 nested shells was running at the end"
is "$left" "" "... and none of them is left"
for pid in $left; do kill -9 "$pid" 2>/dev/null; done
check "... nor its write" test ! -e "$P/w/late.chain"

# A process whose main thread has exited (shown as a zombie) while another
# of its threads still runs: it is alive, and must be killed too.
cat > "$P/zleader.py" <<'EOF'
import ctypes, os, threading, time
def writer():
    # ready once the main thread is gone: the process then shows as a zombie
    while open("/proc/%d/stat" % os.getpid()).read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    open("w/ready.zleader", "w").close()
    while not os.path.exists("w/go"):
        time.sleep(0.1)
    open("w/late.zleader", "w").write("late\n")
threading.Thread(target=writer).start()
ctypes.CDLL(None).pthread_exit(None)
EOF
cmd3='python3 zleader.py &
i=0; while [ ! -e w/ready.zleader ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; ls w/ready.zleader'
rm -f "$P/w/go"
run env NSR_T251_MARK="$tag" timeout 120 "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$d/s" --sandbox=best-effort \
	-- sh -c "$cmd3"
left=$(survivors)
: > "$P/w/go"
is "$rc:$out" "0:w/ready.zleader" "a process with an exited main thread and a live one was running at the end, and nsrun returned"
is "$left" "" "... and it is gone"
for pid in $left; do kill -9 "$pid" 2>/dev/null; done
check "... nor its write" test ! -e "$P/w/late.zleader"

rm -rf "$d"
done_testing
