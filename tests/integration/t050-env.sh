#!/bin/sh
# --setenv, --unsetenv, --clearenv, --chdir and the default cwd, --argv0.
. "$NSR_TESTS/lib.sh"

run env FOO=host BAR=keep "$NSRUN" $BASE --setenv FOO sandbox --unsetenv BAR -- sh -c 'echo "$FOO:${BAR-unset}"'
is "$out" "sandbox:unset" "--setenv and --unsetenv edit the inherited environment"
run env FOO=host "$NSRUN" $BASE --clearenv --setenv A 1 -- /usr/bin/env
is "$(echo "$out" | sort | tr '\n' ' ')" "A=1 PWD=$(pwd -P) " "--clearenv keeps only PWD and later --setenv"
run "$NSRUN" $BASE --setenv A 1 --clearenv -- /usr/bin/env
is "$(echo "$out" | tr '\n' ' ')" "PWD=$(pwd -P) " "edits apply in order: --setenv before --clearenv is lost"
run "$NSRUN" $BASE --setenv 'A=B' x -- true
is "$rc:$err" "1:nsrun: setenv failed" "--setenv with = in the name fails"
run "$NSRUN" $BASE --clearenv --setenv PATH /nowhere -- sh -c true
like "$rc:$err" "^1:nsrun: execvp sh: No such file or directory" "the command is looked up with the sandbox's PATH"
run env -i PATH=/usr/bin:/bin "$NSRUN" $BASE --setenv PATH /usr/bin -- env
like "$out" "PATH=/usr/bin" "--setenv PATH reaches the command"

d=$(scratch)
mkdir -p "$d/work"
run sh -c "cd '$d/work' && '$NSRUN' $BASE -- sh -c 'pwd; echo \$PWD'"
is "$out" "$d/work
$d/work" "the caller's cwd is kept when it exists in the sandbox"
run sh -c "cd '$d/work' && HOME=/usr '$NSRUN' $BASE --tmpfs /tmp -- sh -c 'pwd; echo \$PWD'"
case $d in
/tmp/*) is "$out" "/usr
/usr" "a cwd hidden by the sandbox falls back to \$HOME" ;;
*) skip "cwd fallback to HOME" "scratch dir is not under /tmp" ;;
esac
run sh -c "cd '$d/work' && HOME=/nonexistent '$NSRUN' $BASE --tmpfs /tmp -- sh -c 'pwd'"
case $d in
/tmp/*) is "$out" "/" "... and to / when \$HOME does not exist either" ;;
*) skip "cwd fallback to /" "scratch dir is not under /tmp" ;;
esac
run "$NSRUN" $BASE --chdir /usr/share -- sh -c 'pwd; echo $PWD'
is "$out" "/usr/share
/usr/share" "--chdir sets cwd and PWD"
run "$NSRUN" $BASE --chdir /nonexistent -- true
is "$rc:$err" "1:nsrun: Can't chdir to /nonexistent: No such file or directory" "--chdir to a missing dir fails"
run "$NSRUN" $BASE --chdir /tmp --chdir /usr -- pwd
is "$out:$err" "/usr:nsrun: Only the last --chdir option will take effect" "--chdir twice: the last wins, with a warning"
run "$NSRUN" $BASE --level-prefix --chdir /tmp --chdir /usr -- pwd
is "$err" "<4>nsrun: Only the last --chdir option will take effect" "--level-prefix marks warnings <4>"
run "$NSRUN" $BASE --level-prefix --chdir /nonexistent -- pwd
is "$err" "<3>nsrun: Can't chdir to /nonexistent: No such file or directory" "--level-prefix marks errors <3>"

run "$NSRUN" $BASE --argv0 renamed -- sh -c 'echo $0'
is "$out" "renamed" "--argv0 sets argv[0]"
run "$NSRUN" $BASE --argv0 a --argv0 b -- true
is "$rc:$err" "1:nsrun: --argv0 used multiple times" "--argv0 twice fails"
rm -rf "$d"
done_testing
