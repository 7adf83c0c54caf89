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

# The command waits for pid 1 after its own filter, with a read(2): a
# policy of nsrun's that refuses read ends the launch there, and says so;
# the caller's bwrap program is loaded after the wait, as bwrap does, so
# the command itself runs into it.
printf 'include permissive\ndeny read\n' > "$d/noread.policy"
run "$NSRUN" $BASE --unshare-pid --seccomp-policy "$d/noread.policy" -- /bin/echo hi
is "$rc" 1 "a policy that refuses read(2) fails the launch"
like "$err" "cannot wait for the sandbox's pid 1 .*refuse read" "... and says why"
"$NSRUN" seccomp compile -o "$d/noread.bpf" "$d/noread.policy"
run sh -c "exec '$NSRUN' $BASE --unshare-pid --seccomp 9 -- /bin/echo hi 9< '$d/noread.bpf'"
is "$rc" 127 "a bwrap program that refuses read(2) reaches the command, as with bwrap"
unlike "$err" "pid 1" "... which fails on its own"

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

# The command confines itself while pid 1 does (the filter's load goes on
# beside pid 1's), but its own program waits for pid 1: with pid 1 a
# quarter second late, the command's first look at it still finds it
# confined, in bwrap mode and in project mode.
NSRUN_TEST_PID1_SLOW=1 run "$NSRUN" $BASE --unshare-pid --seccomp-policy default --proc /proc -- sh -c \
	'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/1/status | tr -s "\t " " "'
is "$rc:$out" "0:CapEff: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" "the command starts only once a slow pid 1 is confined"
P=$d/proj; mkdir -p "$P"
NSRUN_TEST_PID1_SLOW=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --quiet -- sh -c \
	'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/1/status | tr -s "\t " " "'
is "$rc:$out" "0:CapEff: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" "... in project mode too"

# Project mode: nsrun's own failure status, nothing applied.
NSRUN_TEST_PID1_FAIL=seccomp run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c 'echo x > made'
is "$rc" 125 "in project mode pid 1's failure exits 125"
check "... and nothing is applied" test ! -e "$P/made"

# Without the hook the same runs work.
run "$NSRUN" $BASE --bind "$d" "$d" --unshare-pid --seccomp-policy default -- sh -c "touch '$d/ran'"
is "$rc" 0 "without a failure the run works"
check "... and the command runs" test -e "$d/ran"

rm -rf "$d"
done_testing
