#!/bin/sh
# --memory and --cpu need a cgroup v2 group of the run's own, in a
# delegated subtree. Where there is none (these build machines: a v1/v2
# hybrid without v2 controllers), they fail before anything runs, exit 125
# in project mode, and say why and what would make it work; doctor says it
# too. --pids alone never fails for want of a cgroup (RLIMIT_NPROC).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
P=$d/proj; mkdir -p "$P"
echo orig > "$P/f"

cg_ok=$("$NSRUN" doctor --json | python3 -c 'import json, sys; print({c["name"]: c for c in json.load(sys.stdin)["checks"]}["cgroup"]["ok"])')
if [ "$cg_ok" = True ]; then
	skip_all "this host delegates a cgroup v2 subtree with controllers: the success path (memory.max, cpu.max, pids.max, cgroup.kill) has no test here yet"
fi

run "$NSRUN" -p "$P" $NS --memory 256M -- sh -c 'echo changed > f'
is "$rc" 125 "--memory without a delegated cgroup: exit 125"
like "$err" "--memory needs a cgroup for the run" "... names the option"
like "$err" "(not delegated|no memory controller|no cgroup v2)" "... says why"
like "$err" "Delegate=yes" "... and what would make it work"
is "$(cat "$P/f")" "orig" "... and nothing ran"
run "$NSRUN" -p "$P" $NS --cpu 0.5 -- true
is "$rc" 125 "--cpu without a delegated cgroup: exit 125"
like "$err" "--cpu needs a cgroup for the run" "... names the option"
run "$NSRUN" $BASE --memory 1G --cpu 2 -- true
is "$rc" 1 "outside project mode: exit 1, as every setup failure"
like "$err" "--memory and --cpu needs a cgroup" "... naming both"
run "$NSRUN" -p "$P" $NS --discard -q --pids 64 -- cat /proc/self/limits
like "$out" "Max processes +64 +64 " "--pids alone works without a cgroup (RLIMIT_NPROC)"
run "$NSRUN" -p "$P" $NS --cpu 0 -- true
like "$err" "--cpu takes a number of CPUs" "--cpu 0 is refused"
run "$NSRUN" doctor
like "$out" "cgroup: .*(--memory, --cpu)" "doctor says what a delegated cgroup is for"
done_testing
