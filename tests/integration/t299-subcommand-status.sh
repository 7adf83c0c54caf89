#!/bin/sh
# The subcommands' exit statuses, as the man page lists them (SUBCOMMANDS,
# "Exit status of the subcommands"): 0 on success, 1 on failure, and the
# documented exceptions (undo 3, profile and session start and exec 125);
# every usage error of nsrun's own command lines exits 125 (EXIT STATUS).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
P=$d/proj
mkdir -p "$P"
echo base > "$P/f"

# Unknown words and help.
run "$NSRUN" histroy
is "$rc" "125" "an unknown subcommand is a usage error: 125"
run "$NSRUN" help no-such-subcommand
like "$rc:$err" "^125:nsrun: help: no subcommand \"no-such-subcommand\"" "help of an unknown subcommand is a usage error: 125"
run "$NSRUN" help undo
like "$rc:$out" "^0:usage: nsrun undo" "help SUBCOMMAND exits 0"
run "$NSRUN" help version
like "$rc:$out" "^0:usage: nsrun version" "help version exits 0"
run "$NSRUN" version extra
is "$rc:$err" "125:nsrun: version: unexpected argument \"extra\"" "version with an argument is a usage error (125), and no unknown command"

# A bad option of each subcommand: the one usage status, 125.
for sub in history diff commit discard undo gc doctor "seccomp list" "profile list" "session stop" "session list" "session commit" "session diff"; do
	# shellcheck disable=SC2086
	run "$NSRUN" $sub --no-such-option
	is "$rc" "125" "$sub --no-such-option exits 125"
done
# A missing operand is a usage error too, and so is a bad one to seccomp.
for sub in commit discard "session stop" "session diff" "session commit" "seccomp compile" "profile" "session"; do
	# shellcheck disable=SC2086
	run "$NSRUN" $sub
	is "$rc" "125" "$sub with a missing operand exits 125"
done
run "$NSRUN" -p "$P" --timeout nope -- true
is "$rc" "125" "a bad value in project mode exits 125, the same status"
run "$NSRUN" --sandbox=best-effort -- true
is "$rc" "125" "a project-mode option without --project is a usage error: 125"
run "$NSRUN" --frobnicate -- true
is "$rc" "1" "a bwrap command line keeps bwrap's 1"
run "$NSRUN" exec --no-such-option
is "$rc" "125" "exec --no-such-option exits 125 (as a project-mode run)"
run "$NSRUN" session start --no-such-option
is "$rc" "125" "session start --no-such-option exits 125"
run "$NSRUN" profile check "$d/nonexistent.profile"
is "$rc" "125" "profile check of an unreadable file exits 125"

# Before any run: listings succeed, lookups fail.
run "$NSRUN" history $NS
is "$rc" "0" "history without a state dir exits 0"
run "$NSRUN" gc $NS
is "$rc" "0" "gc without a state dir exits 0"
run "$NSRUN" diff $NS -p "$P"
is "$rc" "1" "diff of a project with no run exits 1"

# Runs.
run "$NSRUN" -p "$P" $NS -- true
is "$rc" "0" "a run that changes nothing"
run "$NSRUN" diff $NS -p "$P"
is "$rc" "0" "diff of a run that changed nothing exits 0"
run "$NSRUN" undo $NS no-such-run
like "$rc:$err" "^1:" "undo of a nonexistent run exits 1"
run "$NSRUN" diff $NS no-such-run
is "$rc" "1" "diff of a nonexistent run exits 1"
run "$NSRUN" commit $NS no-such-run
is "$rc" "1" "commit of a nonexistent run exits 1"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo run > f'
id=$(printf '%s\n' "$err" | sed -n 's/.*(run \([^)]*\)).*/\1/p' | tail -1)
run "$NSRUN" discard $NS "$id"
like "$rc:$err" "^1:.*not kept" "discard of a run that is not kept exits 1"
echo host > "$P/f"
run "$NSRUN" undo $NS -p "$P"
is "$rc:$(cat "$P/f")" "3:host" "undo refused (the path changed since the run) exits 3"
run "$NSRUN" undo $NS --force -p "$P"
is "$rc:$(cat "$P/f")" "0:base" "undo --force exits 0"

# commit of a kept run with a conflict: applied around it, exit 0.
run "$NSRUN" -p "$P" $NS --keep -- sh -c 'echo kept > f; echo new > g'
id=$(printf '%s\n' "$err" | sed -n 's/.*(run \([^)]*\)).*/\1/p' | tail -1)
echo host2 > "$P/f"
run "$NSRUN" commit $NS "$id"
is "$rc:$(cat "$P/f"):$(cat "$P/g" 2>/dev/null)" "0:host2:new" "commit with a conflict exits 0 and applies the rest"
like "$err" "conflict" "... and reports the conflict"

done_testing
