#!/bin/sh
# issue 23.7: a hostile run cannot erase the undo history. A run refused at
# capture (too deep) keeps a large layer; gc counted it against the backup
# budget and pruned the backups of an earlier committed run, so undo
# failed. Now the backups of applied runs and what sandboxes wrote (layers
# of kept and failed runs, an applied run's leftovers) are two budgets that
# never mix, and the NSR_GC_UNDO_KEEP (3) newest applied runs of a project
# are never pruned by size at all.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
runs() { ls "$S/runs" 2>/dev/null | wc -l | tr -d ' '; }
# The last record's state (a run's outcome is appended to its first one).
state_of() { sed -n 's/^state //p' "$S/runs/$1/meta" 2>/dev/null | tail -n 1; }
newest_run() { ls "$S/runs" | LC_ALL=C sort | tail -1; }
deep=$(i=0; while [ $i -lt 300 ]; do printf 'd/'; i=$((i + 1)); done)

# ---- the attack: a committed run, then a large layer refused at capture -------
P=$d/p1
mkdir -p "$P"; echo orig > "$P/a"
sleep 0.05 # past the coarse clock's tick: the file is older than the run
run "$NSRUN" -p "$P" $NS -q -- sh -c 'echo changed > a'
is "$rc" 0 "a committed run"
A=$(newest_run)
run "$NSRUN" -p "$P" $NS -q -- sh -c "head -c 3000000 /dev/urandom > big; mkdir -p $deep"
is "$rc" 125 "a run whose tree is too deep is refused at capture"
B=$(newest_run)
is "$(state_of "$B")" kept "... and keeps its 3 MB layer"
run "$NSRUN" gc $NS --backup-limit 1M
is "$rc" 0 "gc with a 1M budget"
check "the committed run's backups survive the large layer" test -d "$S/runs/$A/backup"
check "the large layer itself stays (the project's newest run)" test -d "$S/runs/$B"
run "$NSRUN" undo $NS -p "$P" "$A"
is "$rc" 0 "undo of the committed run still works"
is "$(cat "$P/a")" orig "... and restores the file"

# ---- many large layers, newer and older: the backups still stay ---------------
P=$d/p2
mkdir -p "$P"; echo orig > "$P/a"
sleep 0.05
run "$NSRUN" -p "$P" $NS -q --keep -- sh -c 'head -c 2000000 /dev/urandom > old-kept'
K1=$(newest_run)
run "$NSRUN" -p "$P" $NS -q -- sh -c 'echo changed > a'
A=$(newest_run)
for i in 1 2; do
	run "$NSRUN" -p "$P" $NS -q --keep -- sh -c "head -c 2000000 /dev/urandom > kept$i"
done
K3=$(newest_run)
run "$NSRUN" gc $NS --backup-limit 1M
check "layers newer and older than a committed run never push out its backups" test -d "$S/runs/$A/backup"
check "the layer budget still prunes old kept runs" test ! -e "$S/runs/$K1"
check "... but never the project's newest run" test -d "$S/runs/$K3"
run "$NSRUN" undo $NS -p "$P" "$A"
is "$rc:$(cat "$P/a")" "0:orig" "undo works after gc"

# ---- an applied run's leftovers count as layers: they go, its backups stay -----
P=$d/p3
mkdir -p "$P"; echo orig > "$P/a"
sleep 0.05
# A new dir moves whole; the hooks of the repository inside are dropped and
# set aside in the run dir.
run "$NSRUN" -p "$P" $NS -q -- sh -c 'echo changed > a; mkdir -p pkg/.git/hooks && echo ok > pkg/ok &&
	head -c 3000000 /dev/urandom > pkg/.git/hooks/big'
A=$(newest_run)
check "the dropped protected file is set aside in the applied run" test -n "$(ls -A "$S/runs/$A/excluded" 2>/dev/null)"
run "$NSRUN" -p "$P" $NS -q -- sh -c 'echo b > b'
run "$NSRUN" gc $NS --backup-limit 1M
check "over the layer budget, the applied run loses what the sandbox set aside" test ! -e "$S/runs/$A/excluded"
check "... and keeps its backups" test -d "$S/runs/$A/backup"
run "$NSRUN" undo $NS -p "$P" "$A"
is "$rc:$(cat "$P/a")" "0:orig" "... so undo still works"

# ---- the newest applied runs are never pruned by size -------------------------
P=$d/p4
mkdir -p "$P"
for i in 1 2 3 4; do head -c 400000 /dev/urandom > "$P/big$i"; done
sums=$(cd "$P" && cksum big1 big2 big3 big4)
sleep 0.05
# Run i overwrites big$i: a 400 KB backup each, undone independently.
for i in 1 2 3 4; do
	run "$NSRUN" -p "$P" $NS -q -- sh -c "head -c 400000 /dev/urandom > big$i"
	eval "R$i=\$(newest_run)"
done
run "$NSRUN" gc $NS --backup-limit 100K
check "the 3 newest applied runs stay whatever their backups take" \
	test -d "$S/runs/$R2" -a -d "$S/runs/$R3" -a -d "$S/runs/$R4"
check "... an older one beyond the budget goes" test ! -e "$S/runs/$R1"
for k in 4 3 2; do
	eval "r=\$R$k"
	run "$NSRUN" undo $NS -p "$P" "$r"
	is "$rc" 0 "undo of run $k of 4 after gc"
done
is "$(cd "$P" && cksum big2 big3 big4)" "$(printf '%s\n' "$sums" | sed 1d)" "... each restored its file"

rm -rf "$d"
done_testing
