#!/bin/sh
# nsrun diff and session diff show a binary file (a git object among them)
# the way git does: "Binary files a/X and b/X differ", never its bytes.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
S=$d/state
NS="--state-dir $S"
mkdir -p "$P"
printf 'a\000b' > "$P/blob"
echo text > "$P/t"

run "$NSRUN" -p "$P" $NS --keep -- sh -c 'printf "a\000c" > blob; printf "\000\001" > new.bin; echo more >> t'
is "$rc" 0 "a kept run that writes binary files"
RUN=$(printf '%s\n' "$err" | sed -n 's/.*(run \([^)]*\)).*/\1/p' | tail -1)
run "$NSRUN" diff $NS "$RUN"
is "$rc" 0 "diff of the kept run"
like "$out" "^Binary files a/blob and b/blob differ$" "a modified binary file, as git says it"
like "$out" "^Binary files /dev/null and b/new.bin differ$" "a new binary file, as git says it"
like "$out" "^\\+more$" "a text file still gets its unified diff"
unlike "$out" "binary or too large" "no longer the old wording"

if command -v git >/dev/null && command -v python3 >/dev/null; then
	run "$NSRUN" session start -p "$P" $NS --json
	is "$rc" 0 "session start"
	ID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
	run "$NSRUN" exec $NS "$ID" -- sh -c 'git init -q g && cd g && echo x > f && git add f'
	is "$rc" 0 "a step makes a git object"
	run "$NSRUN" session diff $NS "$ID"
	like "$out" "^Binary files /dev/null and b/g/\\.git/objects/[0-9a-f]{2}/[0-9a-f]+ differ$" \
		"session diff: a git object is a binary file"
	run "$NSRUN" session stop $NS --discard "$ID"
	is "$rc" 0 "session stop"
else
	skip "session diff: a git object is a binary file" "needs git and python3"
fi
done_testing
