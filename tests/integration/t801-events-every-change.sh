#!/bin/sh
# --events-fd reports every change of a path, not only the first: changes
# of one path within 100 ms are one event, later ones are events of their
# own.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
events() { # FILE: one "event path" line per event
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["event"], e.get("path", ""))
PY
}

P=$d/p; mkdir -p "$P"; echo old > "$P/g"; echo gone > "$P/r"
run "$NSRUN" -p "$P" $NS --events-fd 3 -- sh -c 'echo a > f; sleep 0.4; echo b >> f; sleep 0.4; echo c >> f' 3>"$d/e1"
is "$rc" 0 "a run with --events-fd"
events "$d/e1" > "$d/e1.txt"
is "$(grep ' f$' "$d/e1.txt" | head -1)" "create f" "a new file: create first"
# A write that lands inside the window of the create (the shell opens,
# then writes) may add one modify when that window closes.
n=$(grep -c '^modify f$' "$d/e1.txt")
if [ "$n" -ge 2 ] && [ "$n" -le 3 ]; then ok "... then a modify for each later write, 0.4 s apart ($n)"; else
	not_ok "... then a modify for each later write, 0.4 s apart: $n"; diag "$(cat "$d/e1.txt")"; fi
is "$(grep -c '^create f$' "$d/e1.txt")" 1 "... and it is created once"

run "$NSRUN" -p "$P" $NS --events-fd 3 -- sh -c 'echo 1 >> g; sleep 0.4; echo 2 >> g; sleep 0.4; chmod 600 g' 3>"$d/e2"
events "$d/e2" > "$d/e2.txt"
n=$(grep -c '^modify g$' "$d/e2.txt")
if [ "$n" -ge 3 ] && [ "$n" -le 4 ]; then ok "an existing file: a modify for each write and for the chmod ($n)"; else
	not_ok "an existing file: a modify for each write and for the chmod: $n"; diag "$(cat "$d/e2.txt")"; fi

run "$NSRUN" -p "$P" $NS --events-fd 3 -- sh -c 'rm r; sleep 0.4; echo back > r; sleep 0.4; echo more >> r' 3>"$d/e3"
events "$d/e3" > "$d/e3.txt"
like "$(grep ' r$' "$d/e3.txt" | tr '\n' '|')" "^delete r\|modify r\|(modify r\|)?modify r\|$" \
	"deleted, made again, written again: each reported in order"

# Coalescing: a burst of writes is a few events, at most one per path per
# 100 ms (plus the one that closes the last window).
mkdir -p "$d/w"
run "$NSRUN" -p "$P" $NS --events-fd 3 --rw "$d/w" -- sh -c 's=$(date +%s%N); i=0
	while [ $i -lt 400 ]; do echo $i >> h; i=$((i+1)); done; e=$(date +%s%N)
	echo $(( (e - s) / 100000000 )) > '"$d"'/w/windows' 3>"$d/e4"
events "$d/e4" > "$d/e4.txt"
n=$(grep -c ' h$' "$d/e4.txt")
max=$(( $(cat "$d/w/windows") + 3 ))
if [ "$n" -ge 1 ] && [ "$n" -le "$max" ]; then
	ok "400 appends in a burst: $n events, at most one per 100 ms window ($max)"
else
	not_ok "400 appends in a burst: $n events, expected 1..$max"
	diag "$(cat "$d/e4.txt")"
fi
is "$(grep -c '^create h$' "$d/e4.txt")" 1 "... the first is its create"
done_testing
