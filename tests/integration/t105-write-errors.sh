#!/bin/sh
# What nsrun prints must reach stdout: a full disk fails the command, as
# coreutils' tools do (issue 18).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
[ -w /dev/full ] || skip_all "no writable /dev/full"

run sh -c '"$NSRUN" --help >/dev/full'
is "$rc" 1 "--help to a full disk exits 1"
like "$err" "^nsrun: write error: No space left on device$" "... and says why"

run sh -c '"$NSRUN" --version >/dev/full'
is "$rc" 1 "--version to a full disk exits 1"

run sh -c '"$NSRUN" seccomp list >/dev/full'
is "$rc" 1 "seccomp list to a full disk exits 1"
like "$err" "nsrun: write error: No space left on device" "... and says why"

run sh -c '"$NSRUN" --trace-bwrap --ro-bind / / true >/dev/full'
is "$rc" 1 "--trace-bwrap to a full disk exits 1"
like "$err" "nsrun: write error: No space left on device" "... and says why"

d=$(scratch); trap 'rm -rf "$d"' EXIT
mkdir -p "$d/p"
run sh -c '"$NSRUN" -p "$1" --state-dir "$1.state" --trace-bwrap -- true >/dev/full' sh "$d/p"
is "$rc" 125 "project mode: --trace-bwrap to a full disk exits 125 (nsrun's own failure)"

# Not an error: a stdout closed before nsrun started, when nothing is
# written to it; and a command's own output, which nsrun does not buffer.
run sh -c '"$NSRUN" $1 true >&-' sh "$BASE"
is "$rc" 0 "a closed stdout that nsrun never writes to is no error"
run sh -c '"$NSRUN" $1 sh -c "echo x" >/dev/full' sh "$BASE"
is "$rc" 1 "the command's own write error is its own status"
unlike "$err" "nsrun: write error" "... not reported as nsrun's"
run sh -c '"$NSRUN" --help | cat >/dev/null'
is "$rc" 0 "--help to a pipe exits 0"
done_testing
