#!/bin/sh
# nsrun nested in other sandboxes: inside bwrap (plain mode and project
# mode, with a read-only home, so the state dir moves to the temp dir by
# itself), and inside nsrun's own project mode with --allow-nested (a home
# that is an overlay and holds the outer sandbox's hiding mounts; as root,
# a uid 0 without capabilities). Both as root and as the test user.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
d=$(scratch)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['projects'][0]; print(eval(sys.argv[2]))" "$@"; }
uid=$(id -u)

# ---- inside bwrap ---------------------------------------------------------
BWRAP=/usr/bin/bwrap
if [ ! -x "$BWRAP" ] || ! "$BWRAP" --ro-bind / / --unshare-user -- true 2>/dev/null; then
	skip "nsrun inside bwrap" "no working $BWRAP here"
else
	# The host read-only, a private /tmp: the home cannot hold a state dir.
	B="$BWRAP --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --ro-bind $NSR_STAGE $NSR_STAGE --bind $d $d --unshare-user"
	run $B -- "$NSRUN" --ro-bind / / --unshare-pid --proc /proc --unshare-net -- sh -c 'echo plain; id -u'
	is "$rc:$out" "0:plain
$uid" "inside bwrap: plain mode runs (pid and net namespaces, a new /proc)"

	P=$d/bp; mkdir -p "$P"; echo old > "$P/mod"
	run $B -- sh -c "'$NSRUN' -p '$P' --report '$d/b.json' -- sh -c 'echo changed > mod; echo n > new' &&
		cat '$P/mod' && '$NSRUN' undo -p '$P' && cat '$P/mod'"
	is "$rc" 0 "inside bwrap: project mode runs"
	is "$out" "changed
old" "... applies the changes, and undo (same state dir) restores them"
	like "$err" "^nsrun: the state dir .* cannot be used here \(read-only file system\); using /tmp/nsrun-state-$uid$" \
		"... with the home read-only, the state dir moves to /tmp/nsrun-state-UID, and says so"
	is "$(json "$d/b.json" '[(c["path"], c["change"]) for c in p["changes"]], "overlay" in d["layers"]')" \
		"([('mod', 'modified'), ('new', 'created')], True)" "... the report: the changes, through an overlay"

	# A fallback state dir that is not a private dir of ours is refused.
	run $B -- sh -c "mkdir -m 0777 /tmp/nsrun-state-$uid && '$NSRUN' -p '$P' -- true"
	is "$rc" 125 "inside bwrap: a shared /tmp/nsrun-state-UID is refused"
	like "$err" "nsrun-state-$uid exists but is not a private directory of yours" "... and says why"
fi

# ---- inside nsrun's project mode ----------------------------------------------
O=$d/outer; mkdir -p "$O/inner"; echo old > "$O/inner/mod"
# The stage (binary, profiles, policies) lives in the host's /tmp, which the
# outer sandbox replaces: it is bound in read-only.
run "$NSRUN" -p "$O" --state-dir "$d/s1" --allow-nested --ro "$NSR_STAGE" --report "$d/outer.json" -- \
	sh -c "'$NSRUN' -p '$O/inner' --report '$O/inner.json' -- sh -c 'echo nested > f; echo changed > mod' &&
		'$NSRUN' undo -p '$O/inner' && '$NSRUN' -p '$O/inner' -- sh -c 'echo again > g'"
is "$rc" 0 "inside nsrun project mode (--allow-nested): project mode runs"
like "$err" "nsrun: the state dir .* cannot be used here \(it is on an overlay, which cannot hold the overlay layers of runs\); using /tmp/nsrun-state-$uid" \
	"... its home is an overlay, so the inner state dir moves to /tmp"
like "$err" "^nsrun: $O/inner: 2 changes?|^nsrun: $O/inner: 1 created, 1 modified; committed" "... the inner run commits"
like "$err" "undid run" "... inner undo works"
is "$(json "$d/outer.json" 'sorted((c["path"], c["change"]) for c in p["changes"])')" \
	"[('inner.json', 'created'), ('inner/g', 'created')]" \
	"the outer run sees the inner run's net result: undone, then one more file"
is "$(cat "$O/inner/g"):$(cat "$O/inner/mod"):$(test -e "$O/inner/f" && echo f)" "again:old:" \
	"... and applies it to the host"
is "$(json "$O/inner.json" '"overlay" in d["layers"], "userns" in d["layers"]')" "(True, True)" \
	"the inner run had its own user namespace and overlay"
if is_root; then
	like "$err" "the home /root cannot be overlaid here \(it holds mounts of the enclosing sandbox\)" \
		"as root, the home holds the outer sandbox's hiding mounts: the inner home is read-only instead"
fi

# Without --allow-nested the inner sandbox is refused (the default policy
# blocks new user namespaces), and best-effort mode falls back.
run "$NSRUN" -p "$O" --state-dir "$d/s1" --ro "$NSR_STAGE" -- "$NSRUN" -p "$O/inner" -- true
is "$rc" 125 "without --allow-nested, the inner nsrun refuses (exit 125)"
run "$NSRUN" -p "$O" --state-dir "$d/s1" --ro "$NSR_STAGE" -- \
	"$NSRUN" -p "$O/inner" --sandbox=best-effort -- sh -c 'echo be > be'
is "$rc" 0 "... and in best-effort mode it runs with Landlock and seccomp"
like "$err" "nsrun: best-effort sandbox: landlock, seccomp \(no user namespace: " "... and says so"
is "$(cat "$O/inner/be")" "be" "... its change went through both runs"

rm -rf "$d"
done_testing
