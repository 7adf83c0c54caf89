#!/bin/sh
# issue 12.9: the sandbox's pid 1 drops every capability, sets
# no_new_privs and loads its filter, and a failure of any of these stops
# the run before the command starts (it used to be ignored). A test hook
# (--enable-test-hooks) makes one step fail: NSRUN_TEST_PID1_FAIL=STEP.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)

# Whatever the hooks: pid 1 as the command sees it.
run "$NSRUN" $BASE --unshare-pid --seccomp-policy default --proc /proc -- sh -c \
	'grep -E "^(CapPrm|CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/1/status | tr -s "\t " " "'
like "$out" 'CapPrm: 0000000000000000' "pid 1 has no permitted capabilities"
like "$out" 'CapEff: 0000000000000000' "... nor effective ones"
like "$out" 'NoNewPrivs: 1' "... has no_new_privs"
like "$out" 'Seccomp: 2' "... and a seccomp filter"

if [ -z "${NSR_TEST_HOOKS:-}" ]; then
	diag "SKIP: the failure injection needs a build with --enable-test-hooks"
	rm -rf "$d"
	done_testing
fi

for step in caps nnp seccomp; do
	rm -f "$d/ran"
	NSRUN_TEST_PID1_FAIL=$step run "$NSRUN" $BASE --bind "$d" "$d" --unshare-pid --seccomp-policy default \
		-- sh -c "touch '$d/ran'"
	is "$rc" 1 "pid 1 failing its $step step fails the run"
	like "$err" "pid 1" "... with pid 1's error"
	check "... and the command never runs" test ! -e "$d/ran"
done

# Project mode: nsrun's own failure status, nothing applied.
P=$d/proj; mkdir -p "$P"
NSRUN_TEST_PID1_FAIL=seccomp run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c 'echo x > made'
is "$rc" 125 "in project mode pid 1's failure exits 125"
check "... and nothing is applied" test ! -e "$P/made"

# Without the hook the same runs work.
run "$NSRUN" $BASE --bind "$d" "$d" --unshare-pid --seccomp-policy default -- sh -c "touch '$d/ran'"
is "$rc" 0 "without a failure the run works"
check "... and the command runs" test -e "$d/ran"

rm -rf "$d"
done_testing
