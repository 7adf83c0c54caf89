#!/bin/sh
# The README's first command ends in scripts/demo: it must show each step
# working, not just run. Every milestone of the tour is checked here.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
[ -f "$NSR_STAGE/demo" ] || skip_all "scripts/demo was not staged"
for tool in cc make git python3; do
	command -v "$tool" >/dev/null 2>&1 || skip_all "the demo needs $tool, which is not installed"
done

run sh "$NSR_STAGE/demo" "$NSRUN"
is "$rc" 0 "the demo runs to the end"
plain=$(printf '%s\n%s\n' "$out" "$err" | sed 's/\x1b\[[0-9;]*m//g')
like "$plain" "test passed" "make test passes inside the sandbox"
like "$plain" "nsrun: [^ ]*/calc: 2 created; committed" "its build products are applied"
like "$plain" "ssh keys visible: 0" "no ssh keys are visible"
like "$plain" "network: unreachable" "the network is unreachable"
like "$plain" "host write: touch: cannot touch '/usr/evil'" "the host is read-only"
like "$plain" "git hook: .*(Read-only|Permission denied)" ".git/hooks cannot be written"
like "$plain" "1 modified; kept" "the edit is kept for review"
like "$plain" "\+ +s -= strtol" "nsrun diff shows the edit"
like "$plain" "1 modified; committed" "nsrun commit applies it"
like "$plain" "1 path restored" "nsrun undo restores the file"
like "$plain" "bwrap --unshare-user" "the trace prints a bwrap command line"
unlike "$plain" "\(exit 12[0-9]\)" "no step fails to launch"
done_testing
