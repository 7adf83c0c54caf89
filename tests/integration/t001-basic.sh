#!/bin/sh
# Exit status, errors and the two names (nsrun and bwrap).
. "$NSR_TESTS/lib.sh"

run "$NSRUN" $BASE -- /bin/true
is "$rc" 0 "a command that succeeds exits 0"
run "$NSRUN" $BASE -- /bin/sh -c 'exit 42'
is "$rc" 42 "the command's exit status is passed through"
run "$NSRUN" $BASE -- /bin/sh -c 'kill -TERM $$'
is "$rc" 143 "a command killed by SIGTERM gives 128+15"
run "$NSRUN" $BASE --unshare-pid -- /bin/sh -c 'kill -KILL $$'
is "$rc" 137 "a command killed by SIGKILL under a pid namespace gives 137"
run "$NSRUN" $BASE -- /bin/sh -c 'echo out; echo err >&2'
is "$out" "out" "stdout reaches the caller"
is "$err" "err" "stderr reaches the caller"

run "$NSRUN" $BASE -- /nonexistent/cmd
is "$rc" 1 "exec failure exits 1"
is "$err" "nsrun: execvp /nonexistent/cmd: No such file or directory" "exec failure has one message"
run "$NSRUN" $BASE -- /etc/passwd
is "$err" "nsrun: execvp /etc/passwd: Permission denied" "a file that is not executable"
run "$NSRUN" $BASE -- no-such-command-anywhere
is "$rc:$err" "1:nsrun: execvp no-such-command-anywhere: No such file or directory" "PATH lookup failure"

run "$NSRUN"
is "$rc" 1 "no arguments: exit 1"
like "$err" "^usage: .*nsrun \[OPTIONS\.\.\.\] \[--\] COMMAND \[ARGS\.\.\.\]" "no arguments: usage on stderr"
is "$out" "" "no arguments: nothing on stdout"
run "$NSRUN" --help
is "$rc" 0 "--help exits 0"
like "$out" "--ro-bind SRC DEST" "--help lists options on stdout"
run "$NSRUN" --version
like "$rc:$out" "^0:nsrun [0-9]" "--version prints nsrun's version"
run "$NSRUN" $BASE --unshare-net
is "$rc" 1 "options but no command: exit 1"
like "$err" "^usage:" "options but no command: usage on stderr"

run "$NSRUN" --frobnicate -- true
is "$rc:$err" "1:nsrun: Unknown option --frobnicate" "an unknown option"
run "$NSRUN" --unshare-al -- true
is "$rc:$err" "1:nsrun: Unknown option --unshare-al; did you mean --unshare-all?" "a mistyped option: did you mean"
run "$NSRUN" -p . --timout=5 -- true
is "$rc:$err" "125:nsrun: Unknown option --timout=5; did you mean --timeout?" "a mistyped nsrun option with a value"
run "$NSRUN" history --sate-dir /x
is "$rc:$err" "125:nsrun: history: unexpected argument \"--sate-dir\" (no such option; did you mean --state-dir?)" \
	"a mistyped subcommand option: did you mean"

# The bwrap name.
d=$(scratch)
ln -s "$NSRUN" "$d/bwrap"
run "$d/bwrap" --version
is "$out" "bubblewrap 0.12.0" "as bwrap, --version is bwrap's"
run "$d/bwrap" --frobnicate -- true
is "$rc:$err" "1:bwrap: Unknown option --frobnicate" "as bwrap, messages say bwrap:"
run "$d/bwrap" --unshare-al -- true
is "$rc:$err" "1:bwrap: Unknown option --unshare-al" "as bwrap, bwrap's message word for word (no guess)"
run "$d/bwrap" --trace-bwrap -- true
is "$rc:$err" "1:bwrap: Unknown option --trace-bwrap" "as bwrap, nsrun-only options are unknown"
run "$d/bwrap" seccomp list
is "$rc:$err" "1:bwrap: execvp seccomp: No such file or directory" "as bwrap, subcommands are commands"
run "$d/bwrap" --help
like "$out" "^usage: $d/bwrap \[OPTIONS" "as bwrap, usage names argv[0] as invoked"
run "$d/bwrap" $BASE -- /bin/sh -c 'exit 7'
is "$rc" 7 "as bwrap, the command's status is passed through"

run "$NSRUN" $BASE -- --version
is "$rc" 1 "a command after -- is a command even when it looks like an option"
like "$err" "execvp --version" "... and is executed as such"
run "$NSRUN" -- seccomp
like "$err" "execvp seccomp" "'nsrun -- seccomp' runs a command, not the subcommand"

# Nothing is left behind: mounts happen in a namespace that dies with the
# sandbox. The host mount table is unchanged (but for the mounts other
# tests running beside this one make in their scratch dirs).
host_mounts() { awk 'index($5, "/tmp/nsrun-") != 1' /proc/self/mountinfo | wc -l; }
before=$(host_mounts)
"$NSRUN" $BASE --tmpfs /tmp --dev /dev --proc /proc --unshare-pid -- /bin/true
after=$(host_mounts)
is "$after" "$before" "no mount is left on the host"
rm -rf "$d"
done_testing
