#!/bin/sh
# Run control: --timeout and --kill-after (a process tree that ignores
# SIGTERM is gone by deadline + kill-after; exit 124; a project run is kept,
# not committed), in namespace mode and in best-effort mode; --rlimit (read
# back from /proc/self/limits inside) and project mode's defaults; a real
# fork bomb contained by --pids while a host process of the same user can
# still fork; --tmp-size: filling /tmp, /var/tmp, /dev/shm and the home
# stops with ENOSPC at the cap.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
P=$d/proj; mkdir -p "$P"
echo orig > "$P/f"
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# How many processes have the given command line, anywhere on the host.
count_cmd() { python3 -c '
import os, sys
n = 0
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            if open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")[:2] == sys.argv[1:3]: n += 1
        except OSError: pass
print(n)' "$@"; }

# ---- --timeout -------------------------------------------------------------
# Every process ignores SIGTERM; the command writes to the project first.
marker="31$$"
tree="trap '' TERM; echo changed > f; (trap '' TERM; while :; do sleep $marker; done) & while :; do sleep $marker; done"
t0=$(now_ms)
run "$NSRUN" -p "$P" $NS --timeout 1 --kill-after 1 --report "$d/t.json" -- sh -c "$tree"
t1=$(now_ms)
is "$rc" 124 "--timeout: exit status 124"
el=$((t1 - t0))
if [ "$el" -ge 1900 ] && [ "$el" -lt 6000 ]; then ok "a tree that ignores SIGTERM ends at deadline + kill-after (${el} ms for 1s + 1s)"
else not_ok "a tree that ignores SIGTERM ends at deadline + kill-after (${el} ms for 1s + 1s)"; fi
is "$(json "$d/t.json" 'd.get("timed_out")')" "True" "the report says timed_out"
is "$(json "$d/t.json" 'd["outcome"]')" "kept" "a timed-out run is kept"
is "$(cat "$P/f")" "orig" "... and not committed"
like "$err" "kept \(the command timed out\)" "stderr says why the run was kept"
is "$(count_cmd sleep "$marker")" 0 "no process of the tree is left"

# SIGTERM reaches the command: one that exits on it ends long before the kill.
t0=$(now_ms)
run "$NSRUN" -p "$P" $NS --discard --timeout 0.5s --kill-after 30 -- sh -c 'trap "exit 3" TERM; sleep 60 & wait'
t1=$(now_ms)
is "$rc" 124 "a command that exits on SIGTERM: still 124"
el=$((t1 - t0))
if [ "$el" -lt 10000 ]; then ok "SIGTERM reached it (${el} ms, kill-after was 30s)"; else not_ok "SIGTERM reached it (${el} ms)"; fi

run "$NSRUN" -p "$P" $NS --discard --timeout 30 -- true
is "$rc" 0 "a command that ends in time keeps its own status"
run "$NSRUN" -p "$P" $NS --timeout 1x -- true
is "$rc" 125 "a bad duration is refused (125, as every error of nsrun's own in project mode)"
like "$err" "--timeout takes a duration" "... with a message"

# Outside project mode too, in bwrap's language plus --timeout.
t0=$(now_ms)
run "$NSRUN" $BASE --unshare-pid --timeout 1 --kill-after 0.5 -- sh -c "trap '' TERM; sleep $marker & sleep $marker"
t1=$(now_ms)
is "$rc" 124 "plain --unshare-pid run: 124"
is "$(count_cmd sleep "$marker")" 0 "... and nothing is left"

# Best-effort mode (no user namespaces, simulated): the same bounds.
R=$NSR_HELPERS/nsr-restrict
if [ -x "$R" ]; then
	t0=$(now_ms)
	run "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" $NS --sandbox=best-effort --timeout 1 --kill-after 1 \
		--rlimit nofile=77:88 --report "$d/be.json" -- sh -c "ulimit -n >&2; $tree"
	t1=$(now_ms)
	is "$rc" 124 "best-effort mode: --timeout gives 124"
	el=$((t1 - t0))
	if [ "$el" -lt 8000 ]; then ok "best-effort mode: the SIGTERM-ignoring tree ends (${el} ms)"
	else not_ok "best-effort mode: the SIGTERM-ignoring tree ends (${el} ms)"; fi
	is "$(json "$d/be.json" 'd.get("timed_out")')" "True" "best-effort mode: the report says timed_out"
	is "$(count_cmd sleep "$marker")" 0 "best-effort mode: no process of the tree is left"
	like "$err" "^77$" "best-effort mode: --rlimit applies"
	echo orig > "$P/f"
else
	skip "best-effort mode" "the nsr-restrict helper was not built"
fi

# ---- --rlimit ----------------------------------------------------------------
run "$NSRUN" -p "$P" $NS --discard -q --rlimit NOFILE=100:200 --rlimit stack=unlimited --rlimit Core=0 \
	--rlimit msgqueue=16K: -- cat /proc/self/limits
like "$out" "Max open files +100 +200 " "--rlimit NOFILE=100:200 (uppercase name)"
like "$out" "Max stack size +unlimited +unlimited " "--rlimit stack=unlimited"
like "$out" "Max core file size +0 +0 " "--rlimit Core=0"
like "$out" "Max msgqueue size +16384 " "--rlimit msgqueue=16K: sets the soft limit"
run "$NSRUN" -p "$P" $NS --discard -q -- cat /proc/self/limits
like "$out" "Max core file size +0 +0 " "project mode: no core dumps by default"
like "$out" "Max processes +4096 +4096 " "project mode: 4096 processes by default"
hard=$(ulimit -Hn)
want=4096; [ "$hard" != unlimited ] && [ "$hard" -lt 4096 ] && want=$hard
like "$out" "Max open files +$want " "project mode: a bounded number of open files"
run "$NSRUN" -p "$P" $NS --rlimit bogus=1 -- true
is "$rc" 125 "an unknown limit is refused (125)"
like "$err" "unknown limit \"bogus\" \(known: as, core, cpu" "... listing the known ones"
run "$NSRUN" -p "$P" $NS --rlimit nofile=20:10 -- true
like "$err" "soft limit is above the hard limit" "soft above hard is refused"
if ! is_root && [ "$hard" != unlimited ]; then
	run "$NSRUN" -p "$P" $NS --rlimit "nofile=10:$((hard + 1))" -- true
	is "$rc" 125 "raising the hard limit fails (125)"
	like "$err" "cannot raise the hard limit" "... and says so"
fi
run "$NSRUN" $BASE --rlimit nofile=50 -- sh -c 'ulimit -n; ulimit -Hn'
is "$out" "50
50" "outside project mode: --rlimit nofile=50 sets both"

# ---- --pids: a real fork bomb ----------------------------------------------
if is_root; then
	skip "fork bomb" "real root (kuid 0) is exempt from RLIMIT_NPROC in every namespace: only a cgroup can contain it"
else
	mkdir -p "$d/mark"
	# Every process forks for ever: the tree grows exponentially until fork
	# fails, then each one retries every 50 ms (so it stays at the limit
	# without spinning the CPU).
	bomb='import os, sys, time
open(sys.argv[1] + "/started", "w").close()
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.05)'
	"$NSRUN" -p "$P" $NS --discard -q --pids 40 --timeout 8 --kill-after 1 --rw "$d/mark" -- \
		python3 -c "$bomb" "$d/mark" >"$d/bomb.out" 2>&1 &
	bpid=$!
	i=0; while [ ! -e "$d/mark/started" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	# The most tasks the sandbox held, sampled over 2 s (a bomb churns),
	# and whether we can fork meanwhile.
	inside=$(python3 -c '
import os, time
me = os.readlink("/proc/self/ns/pid"); uid = os.getuid(); best = 0
for k in range(20):
    n = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            ns = os.readlink("/proc/%s/ns/pid" % p)
            if ns != me and os.stat("/proc/" + p).st_uid == uid:
                n[ns] = n.get(ns, 0) + len(os.listdir("/proc/%s/task" % p))
        except OSError: pass
    best = max([best] + list(n.values()))
    time.sleep(0.1)
print(best)')
	forked=$(python3 -c '
import os, time
kids = []
for i in range(30):
    try:
        p = os.fork()
    except OSError:
        break
    if p == 0:
        time.sleep(2); os._exit(0)
    kids.append(p)
for k in kids: os.waitpid(k, 0)
print(len(kids))')
	is "$forked" 30 "during the bomb, a host process of the same user forks 30 children"
	if [ "$inside" -ge 10 ] && [ "$inside" -le 42 ]; then ok "the bomb is contained: at most $inside tasks in the sandbox (--pids 40)"
	else not_ok "the bomb is contained: at most $inside tasks in the sandbox (--pids 40)"; fi
	wait $bpid
	is "$?" 124 "the bomb ends with the timeout (124)"
	left=$(python3 -c '
import os
me = os.readlink("/proc/self/ns/pid"); uid = os.getuid(); n = 0
for p in os.listdir("/proc"):
    if not p.isdigit(): continue
    try:
        if os.readlink("/proc/%s/ns/pid" % p) != me and os.stat("/proc/" + p).st_uid == uid: n += 1
    except OSError: pass
print(n)')
	is "$left" 0 "nothing of the bomb is left"
fi

# ---- --tmp-size ----------------------------------------------------------------
fill='for f in /tmp/big /var/tmp/big /dev/shm/big "$HOME/big"; do
	if dd if=/dev/zero of="$f" bs=1M count=12 2>/dev/null; then echo "$f: fit"; else echo "$f: $(df -k "$f" | tail -1 | awk "{print \$2}")K full"; fi
done'
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 8M -- sh -c "$fill"
is "$out" "/tmp/big: 8192K full
/var/tmp/big: 8192K full
/dev/shm/big: 8192K full
$HOME/big: 8192K full" "--tmp-size 8M: /tmp, /var/tmp, /dev/shm and the home layer stop at 8M"
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 8M -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=12'
like "$err" "No space left on device" "filling /tmp fails with ENOSPC inside"
check "the host's home is untouched" test ! -e "$HOME/big"
run "$NSRUN" -p "$P" $NS --discard -q -- sh -c 'df -k /tmp | tail -1'
ram=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
size=$(echo "$out" | awk '{print $2}')
if [ "$size" -le $((ram / 4 + 4)) ]; then ok "the default cap is a quarter of the RAM (${size}K of ${ram}K)"
else not_ok "the default cap is a quarter of the RAM (${size}K of ${ram}K)"; fi
run "$NSRUN" $BASE --tmp-size 8M -- true
like "$err" "--tmp-size only works in project mode" "--tmp-size is project mode's"

done_testing
