#!/bin/sh
# Removing what a run left (issue 18, one rm -rf): its layer is the
# sandboxed command's, so nothing in it is followed, and dirs it made
# unreadable (000) go too. discard and gc both remove through it.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
trap 'chmod -R u+rwx "$d" 2>/dev/null; rm -rf "$d"' EXIT
S=$d/state
newest_run() { ls "$S/runs" | LC_ALL=C sort | tail -n 1; }

H=$d/host; echo host > "$H"; chmod 640 "$H"
HD=$d/hostdir; mkdir "$HD"; chmod 750 "$HD"; echo keep > "$HD/keep"
leave() {
	"$NSRUN" -p "$P" --state-dir "$S" --keep --quiet -- sh -c "
		mkdir -p z/sub a && echo x > z/sub/f && ln -s '$H' z/host && ln -s '$HD' a/dir &&
		ln -s '$H' top && chmod 000 z/sub z && chmod 500 a"
}
P=$d/p; mkdir -p "$P"
leave
k=$(newest_run)
ls -A "$S/runs/$k" | grep -q '^p0$'; has=$?
is "$has" 0 "a kept run holds its layer"
run "$NSRUN" discard --state-dir "$S" "$k"
is "$rc" 0 "discard of a run whose layer holds 000 dirs and links to host files"
ls -A "$S/runs/$k" 2>/dev/null | grep -q '^p0$'; has=$?
is "$has" 1 "... removes the layer"
is "$(stat -c %a "$H")" 640 "... the linked host file keeps its mode"
is "$(cat "$H")" host "... and its content"
is "$(stat -c %a "$HD")" 750 "... the linked host dir keeps its mode"
is "$(cat "$HD/keep" 2>/dev/null)" keep "... and its content"

# gc: a newer run of the same project makes this one prunable.
leave; k=$(newest_run)
"$NSRUN" -p "$P" --state-dir "$S" --discard --quiet -- true
run "$NSRUN" gc --state-dir "$S" --keep-days 0
is "$rc" 0 "gc of a run whose layer holds 000 dirs and links to host files"
test -e "$S/runs/$k"; there=$?
is "$there" 1 "... removes the whole run"
is "$(stat -c %a "$H")" 640 "... the linked host file keeps its mode"
is "$(stat -c %a "$HD")" 750 "... the linked host dir keeps its mode"
is "$(cat "$HD/keep" 2>/dev/null)" keep "... and its content"
done_testing
