#!/bin/sh
# A run that changes nothing writes only what it must (issue 28): the
# project's path note in the state dir is not rewritten when it already
# says the same, no empty pN/config is made, and a change set that is
# empty skips the protected-path rules, while one with a change still
# goes through them.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
mkdir -p "$d/p"
echo a >"$d/p/f"

run "$NSRUN" -p "$d/p" --state-dir "$d/s" --quiet -- true
is "$rc" 0 "a no-op project run"
note=$(find "$d/s/projects" -name path -type f | head -n 1)
check "the project's path note exists" test -f "$note"
is "$(cat "$note")" "$(cd "$d/p" && pwd -P)" "it names the project"
ino1=$(stat -c %i "$note")
run "$NSRUN" -p "$d/p" --state-dir "$d/s" --quiet -- true
is "$rc" 0 "a second no-op run"
is "$(stat -c %i "$note")" "$ino1" "the path note was left as it was (same inode)"
is "$(cat "$note")" "$(cd "$d/p" && pwd -P)" "and still names the project"

n=0
empty=0
for r in "$d/s/runs"/*/; do
	n=$((n + 1))
	[ -e "$r/p0/config" ] && empty=$((empty + 1))
done
is "$n" 2 "two runs recorded"
is "$empty" 0 "no pN/config for a project with no configuration files to protect"

# A change still meets the rules: a planted hook is dropped.
run "$NSRUN" -p "$d/p" --state-dir "$d/s" --quiet -- sh -c 'mkdir -p .git/hooks && echo x >.git/hooks/pre-commit && echo b >f'
is "$rc" 0 "a run that plants a hook and edits a file"
check "the hook did not reach the project" [ ! -e "$d/p/.git/hooks/pre-commit" ]
is "$(cat "$d/p/f")" "b" "the edit did"
done_testing
