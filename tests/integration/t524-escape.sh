#!/bin/sh
# issue 12.5: every string nsrun prints that came from the sandbox goes
# through one escaping function: the "dropped ... e.g. PATH" line, conflict
# paths and their kept_at, --verbose listings, errors with paths. nsrun diff
# on a terminal shows bidi and zero-width characters by name.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
ESC=$(printf '\033')
BIDI=$(printf '\342\200\256')   # U+202E RIGHT-TO-LEFT OVERRIDE
ZW=$(printf '\342\200\213')     # U+200B ZERO WIDTH SPACE
raw_free() { ! printf '%s' "$1" | grep -q "$ESC\|$BIDI\|$ZW"; }
evil=$(printf 'x\033[8mhidden')
mkdir -p "$d/p/.git/modules" "$d/c" "$d/v"
printf 'old\n' > "$d/c/$(printf 'c\033[2Jd')"
sleep 0.05

# A protected git path whose name holds an escape sequence.
P=$d/p
run "$NSRUN" -p "$P" $NS -- sh -c 'mkdir -p ".git/modules/$1" && printf x > ".git/modules/$1/config"' sh "$evil"
check "the dropped-change line carries no raw escape sequence" raw_free "$err"
like "$err" 'x\\x1b\[8mhidden' "... and shows it escaped"

# A conflict at commit time: the name and its kept_at path, escaped.
P=$d/c
run "$NSRUN" -p "$P" $NS --keep -- sh -c 'printf "sandbox\n" > "$(printf "c\033[2Jd")"'
kept=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
printf 'host\n' > "$P/$(printf 'c\033[2Jd')"
run "$NSRUN" commit $NS "$kept"
like "$err" 'conflict' "a conflict is reported"
check "... with no raw escape sequence in the name or the kept_at path" raw_free "$err"
like "$err" 'c\\x1b\[2Jd.*kept at .*c\\x1b\[2Jd' "... both escaped"

# --verbose listing and the summary: bidi and zero-width characters.
P=$d/v
run "$NSRUN" -p "$P" $NS -v -- sh -c 'printf x > "$1"; printf y > "$2"' sh "a${BIDI}b" "z${ZW}w"
check "--verbose shows no raw bidi or zero-width character" raw_free "$err"
like "$err" 'a\\u202eb' "... the bidi override escaped"
like "$err" 'z\\u200bw' "... the zero-width space escaped"

# An error that carries a path.
run "$NSRUN" -p "$d/no${ESC}[31msuch" $NS -- true
is "$rc" 125 "a missing project fails"
check "... and its error carries no raw escape sequence" raw_free "$err"

# nsrun diff on a terminal (script(1) gives it one).
if command -v script >/dev/null 2>&1; then
	P=$d/v
	run "$NSRUN" -p "$P" $NS --keep -- sh -c 'printf "ok\nif (user ${1}admin) x\n" > trojan.c' sh "$BIDI"
	kept=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
	tty=$(script -qc "'$NSRUN' diff $NS $kept" /dev/null </dev/null)
	like "$tty" 'user <U\+202E>admin' "nsrun diff on a terminal names the bidi override"
	check "... and sends none raw" raw_free "$(printf '%s' "$tty" | tr -d '\033')"
	run "$NSRUN" diff $NS "$kept"
	check "into a pipe the diff stays byte-exact" printf '%s' "$out" | grep -q "user ${BIDI}admin"
else
	skip "nsrun diff on a terminal" "script(1) is missing"
fi

rm -rf "$d"
done_testing
