#!/bin/sh
# "nsrun seccomp check|compile|list", and how a bad policy is reported:
# FILE:LINE: MESSAGE and exit status 1, with or without a launch.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

d=$(scratch)

run $NSRUN seccomp list
is "$rc" 0 "list succeeds"
is "$(printf '%s\n' "$out" | awk '{ print $1 }' | tr '\n' ' ')" "default default-nested fallback nesting permissive strict " \
	"list shows the six shipped profiles"
like "$out" '^default +Blocks kernel attack surface' "list shows each profile's summary line"

run $NSRUN seccomp check default default-nested fallback nesting permissive strict
is "$rc" 0 "every shipped profile passes check"
like "$out" 'default\.policy: ok, [0-9]+ filter rules, [0-9]+ BPF instructions' "check reports rules and instructions"

run $NSRUN seccomp check -v permissive
like "$out" 'deny ioctl errno EPERM if arg1 & 0xffffffff == 0x5412  # .*permissive\.policy:[0-9]+' \
	"check -v prints the expanded rules with their source lines"

run $NSRUN seccomp --help
is "$rc" 0 "--help succeeds"
like "$out" 'Usage: nsrun seccomp check' "--help shows the usage"
run $NSRUN seccomp compile --help
is "$rc" 0 "--help after a command succeeds too"
run $NSRUN seccomp
is "$rc" 125 "no command is an error"
run $NSRUN seccomp frobnicate
is "$rc" 125 "an unknown command is an error"
like "$err" "unknown command 'frobnicate'" "and says so"
run $NSRUN seccomp check
is "$rc" 125 "check without a policy is an error"
run $NSRUN seccomp list extra
is "$rc" 125 "list takes no arguments"

# Bad policies: FILE:LINE: MESSAGE, exit 1.
printf 'allow read\n\n# comment\ndeny nosuchcall\n' > "$d/bad.policy"
run $NSRUN seccomp check "$d/bad.policy"
is "$rc" 1 "check of a bad policy exits 1"
is "$err" "$d/bad.policy:4: unknown system call 'nosuchcall'" "check reports FILE:LINE: MESSAGE"
printf 'deny ioctl if arg1 & 0xffffffff == TIOCSTY\n' > "$d/const.policy"
run $NSRUN seccomp check "$d/const.policy"
is "$err" "$d/const.policy:1: unknown constant 'TIOCSTY'" "an unknown constant is reported with its line"
printf 'include default\n\ninclude nowhere\n' > "$d/inc.policy"
run $NSRUN seccomp check "$d/inc.policy"
is "$rc" 1 "a missing include is an error"
like "$err" "^$d/inc.policy:3: cannot include 'nowhere'" "a missing include names the including line"
printf 'include default\ndeny bpf errno EIO\n' > "$d/overlap.policy"
run $NSRUN seccomp check "$d/overlap.policy"
like "$err" "^$d/overlap.policy:2: this rule \(deny errno EIO\) can match the same bpf calls as the rule at .*default-nested.policy:[0-9]+" \
	"a conflicting rule names the rule it conflicts with"
run $NSRUN seccomp check no-such-profile
is "$rc" 1 "an unknown profile name is an error"
like "$err" "no seccomp policy called 'no-such-profile'" "and says which name"
run $NSRUN seccomp check "$d/bad.policy" default
is "$rc" 1 "one bad policy among several fails the check"
like "$out" 'default\.policy: ok' "the good ones are still checked"

# Own policies can include the shipped ones.
printf '# mine\ninclude default\ndeny ptrace errno EACCES\n' > "$d/mine.policy"
run $NSRUN seccomp check "$d/mine.policy"
is "$rc" 0 "a policy of one's own can include a shipped one"

# A launch with a bad policy fails before running anything.
run $NSRUN $SBX --seccomp-policy "$d/bad.policy" -- sh -c 'echo ran'
is "$rc" 1 "a launch with a bad policy exits 1"
is "$out" "" "and the command does not run"
like "$err" "$d/bad.policy:4: unknown system call 'nosuchcall'" "the launch reports FILE:LINE: MESSAGE too"
run $NSRUN $SBX --seccomp-policy nonesuch -- true
is "$rc" 1 "a launch with an unknown profile exits 1"

# compile
run $NSRUN seccomp compile default -o "$d/default.bpf"
is "$rc" 0 "compile writes a file"
size=$(wc -c < "$d/default.bpf")
ok_size=no
[ "$size" -gt 0 ] && [ $((size % 8)) -eq 0 ] && ok_size=yes
is "$ok_size" yes "the output is whole BPF instructions ($size bytes)"
$NSRUN seccomp compile -o - default > "$d/stdout.bpf"
check "compile -o - writes the same program to stdout" cmp -s "$d/default.bpf" "$d/stdout.bpf"
run $NSRUN seccomp compile default
is "$rc" 125 "compile without -o is an error"
run $NSRUN seccomp compile "$d/bad.policy" -o "$d/bad.bpf"
is "$rc" 1 "compile of a bad policy fails"
is "$err" "$d/bad.policy:4: unknown system call 'nosuchcall'" "with FILE:LINE: MESSAGE"
check "and writes nothing" test ! -e "$d/bad.bpf"

rm -rf "$d"
seccomp_done_testing
