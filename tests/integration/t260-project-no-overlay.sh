#!/bin/sh
# --no-overlay: the projects bound writable inside the full namespace
# sandbox, writes captured against a snapshot: the report, protected paths
# (read-only here), undo, --discard, --events-fd, --snapshot-limit, --keep
# refused; and the automatic switch when the project sits on an overlay
# stack as deep as the kernel allows (nested nsrun overlays).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
d=$(scratch)
S=$d/state
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['projects'][0]; print(eval(sys.argv[2]))" "$@"; }

P=$d/proj
mkdir -p "$P/.git/hooks" "$P/gone/deep" "$P/sub"
echo keep > "$P/keep"; echo old > "$P/mod"; echo bye > "$P/del"; echo f > "$P/gone/deep/f"
echo good > "$P/.git/hooks/pre-commit"; echo same > "$P/sub/same"
(cd "$P" && find . -printf '%p %y %m %s\n' | sort) > "$d/before"

run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --report "$d/r.json" -- sh -c '
	echo new > new; echo changed > mod; rm del; rm -r gone; mkdir -p made/in; echo f > made/in/f
	chmod 0600 keep
	echo evil > .git/hooks/pre-commit 2>/dev/null || echo hooks: read-only
	awk -v p="$PWD" '"'"'$5 == p { for (i = 7; i <= NF; i++) if ($i == "-") { print "fstype:", $(i + 1); exit } }'"'"' /proc/self/mountinfo'
is "$rc" 0 "--no-overlay runs the command"
like "$out" "hooks: read-only" "the protected git paths are read-only in the sandbox"
like "$out" "^fstype: [a-z0-9]+$" "the project is a mount of its own inside"
unlike "$out" "^fstype: overlay$" "... and not an overlay"
is "$(cat "$P/new"):$(cat "$P/mod"):$(cat "$P/made/in/f"):$(ls "$P" | tr '\n' ' ')" "new:changed:f:keep made mod new sub " \
	"the writes are in the project"
is "$(cat "$P/.git/hooks/pre-commit")" "good" "the hook is untouched"
like "$err" "^nsrun: $P: 4 created, 1 modified, 2 deleted, 1 metadata changed; committed \(run [0-9A-Za-z.-]+\)$" \
	"the summary counts the changes found against the snapshot"
is "$(json "$d/r.json" '[(c["path"], c["change"]) for c in p["changes"]]')" \
	"[('del', 'deleted'), ('gone', 'deleted'), ('keep', 'metadata_changed'), ('made', 'created'), ('made/in', 'created'), ('made/in/f', 'created'), ('mod', 'modified'), ('new', 'created')]" \
	"report: every change"
is "$(json "$d/r.json" '[c["descendants"] for c in p["changes"] if c["path"] == "gone"]')" "[2]" \
	"report: a deleted dir is one change with its descendants"
is "$(json "$d/r.json" '"overlay" in d["layers"], d["layers"][:3]')" "(False, ['userns', 'mountns', 'pidns'])" \
	"report: the namespaces, and no overlay among the layers"
run "$NSRUN" history --state-dir "$S" -p "$P"
like "$out" "committed" "history lists the run as committed"

run "$NSRUN" undo --state-dir "$S" -p "$P"
is "$rc" 0 "nsrun undo works after --no-overlay"
is "$(cd "$P" && find . -printf '%p %y %m %s\n' | sort)" "$(cat "$d/before")" \
	"... and restores the project as it was (names, types, modes, sizes)"
undo_id=$(printf '%s\n' "$err" | sed -n 's/.*(undo run \([0-9A-Za-z.-]*\)).*/\1/p')
run "$NSRUN" undo --state-dir "$S" "$undo_id"
is "$rc" 0 "the undo itself can be undone, by its run id"
is "$(cat "$P/mod"):$(cat "$P/new")" "changed:new" "... which puts the run's changes back"
undo_id=$(printf '%s\n' "$err" | sed -n 's/.*(undo run \([0-9A-Za-z.-]*\)).*/\1/p')
run "$NSRUN" undo --state-dir "$S" "$undo_id"
is "$rc:$(cat "$P/mod")" "0:old" "... and that once more, back to the start"

run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --discard -- sh -c 'echo d > discarded; echo x > mod; rm keep'
is "$rc" 0 "--no-overlay --discard runs"
is "$(test -e "$P/discarded" && echo yes):$(cat "$P/mod"):$(cat "$P/keep")" ":old:keep" "... and puts everything back"
like "$err" "1 created, 1 modified, 1 deleted; discarded" "... while reporting what was done"

run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --keep -- true
is "$rc" 125 "--no-overlay --keep is refused"
like "$err" "--keep needs the overlay" "... with a reason"

# Live events come from the project itself, compared with the snapshot.
exec 8>"$d/events"
run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --events-fd 8 -- sh -c 'echo e > ev; echo x >> mod; rm ev2 2>/dev/null; sleep 0.2'
exec 8>&-
like "$(cat "$d/events")" '"event":"create","project":"'"$P"'","path":"ev"' "--events-fd: a creation"
like "$(cat "$d/events")" '"event":"modify","project":"'"$P"'","path":"mod"' "--events-fd: a modification"
run "$NSRUN" undo --state-dir "$S" -p "$P"

head -c 2000000 /dev/urandom > "$P/big"
if cp --reflink=always "$P/big" "$d/reflink-probe" 2>/dev/null; then
	skip "--snapshot-limit" "this file system has reflinks: the snapshot copies nothing"
else
	run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --snapshot-limit 1M -- touch should-not
	is "$rc" 125 "--no-overlay: a project over --snapshot-limit is refused"
	like "$err" "limit of 1\.0 MiB" "... saying the limit"
	check "... before the command ran" test ! -e "$P/should-not"
	run "$NSRUN" -p "$P" --state-dir "$S" --no-overlay --snapshot-limit=3M -- touch fits
	is "$rc:$(test -e "$P/fits" && echo yes)" "0:yes" "... a limit above the project's size lets it run"
fi
rm -f "$P/big" "$P/fits" "$d/reflink-probe"

# An overlay stack as deep as the kernel allows: two nested sandboxes each
# put an overlay on /mnt, so an overlay on the project /mnt/p would be the
# third level. The innermost nsrun switches to --no-overlay by itself.
mkdir -p "$d/l1/p"
echo lower > "$d/l1/p/f"
# The middle sandbox binds /proc: a new procfs is refused inside a sandbox
# whose /proc has read-only overmounts when it runs as root.
run "$NSRUN" --ro-bind / / --dev /dev --proc /proc --unshare-pid --tmpfs /tmp --bind "$d" "$d" \
	--ro-bind "$NSR_STAGE" "$NSR_STAGE" --overlay-src "$d/l1" --tmp-overlay /mnt -- \
	"$NSRUN" --ro-bind / / --bind /proc /proc --dev /dev --tmpfs /tmp --bind "$d" "$d" \
	--ro-bind "$NSR_STAGE" "$NSR_STAGE" --overlay-src /mnt --tmp-overlay /mnt -- \
	sh -c "'$NSRUN' -p /mnt/p --state-dir '$d/deep' --report '$d/deep.json' -- sh -c 'echo deep > f; echo n > n; cat f' &&
		'$NSRUN' undo --state-dir '$d/deep' -p /mnt/p && cat /mnt/p/f"
is "$rc" 0 "an overlay stack too deep: the run succeeds"
like "$err" "running with --no-overlay" "... after switching to --no-overlay, which it says"
is "$out" "deep
lower" "... the command wrote in place, and undo put the file back"
is "$(json "$d/deep.json" '"overlay" in d["layers"], [(c["path"], c["change"]) for c in p["changes"]]')" \
	"(False, [('f', 'modified'), ('n', 'created')])" "... the report has the changes, and no overlay layer"
is "$(cat "$d/l1/p/f")" "lower" "... and the outer layers are untouched"

rm -rf "$d"
done_testing
