# Shared helpers for the integration tests (POSIX sh, TAP output).
# The harness sets NSRUN, NSR_HELPERS, NSR_TESTS, NSR_STAGE and NSR_WHO
# (root or user).
: "${NSRUN:?run through tests/integration/harness}"
_n=0
_failed=0

ok() { _n=$((_n + 1)); echo "ok $_n - $*"; }
not_ok() { _n=$((_n + 1)); _failed=$((_failed + 1)); echo "not ok $_n - $*"; }
skip() { _n=$((_n + 1)); echo "ok $_n - $1 # SKIP $2"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# nsrun's own detached work (background gc, removing a run's trash) may
# outlive a run on a loaded machine: it is no leftover of the sandbox, so a
# test waits for it (bounded) before the harness looks for leftovers.
# A process in the middle of its exit has no command line any more (ps
# shows "[nsrun]"), and the last close of a sandbox's mount namespace
# (the background process's) can take a while there: its name still says
# nsrun, and it runs or waits on the disk (a sleeping one is not exiting).
wait_background() {
	_wb_end=$(($(date +%s) + 60))
	while pgrep -u "$(id -u)" -f "^$NSRUN( |\$)" >/dev/null 2>&1 ||
		pgrep -u "$(id -u)" -x nsrun -r R,D >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$_wb_end" ] && return 1
		sleep 0.05
	done
}
done_testing() { wait_background; echo "1..$_n"; exit 0; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# check DESC COMMAND...: ok if the command succeeds
check() {
	_d=$1; shift
	if "$@"; then ok "$_d"; else not_ok "$_d"; fi
}

# is GOT EXPECTED DESC
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else
		not_ok "$3"; diag "got:      '$1'" "expected: '$2'"; fi
}

# like GOT PATTERN DESC (grep -E pattern)
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then ok "$3"; else
		not_ok "$3"; diag "got: '$1'" "expected to match: '$2'"; fi
}

# unlike GOT PATTERN DESC
unlike() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		not_ok "$3"; diag "got: '$1'" "expected not to match: '$2'"; else ok "$3"; fi
}

# run COMMAND...: sets $out, $err and $rc
run() {
	_o=$(mktemp) _e=$(mktemp)
	"$@" >"$_o" 2>"$_e"
	rc=$?
	out=$(cat "$_o") err=$(cat "$_e")
	rm -f "$_o" "$_e"
}

# A minimal root for most tests: the host read-only.
BASE="--ro-bind / /"

is_root() { [ "$(id -u)" -eq 0 ]; }

# A scratch dir the current user owns. Under the harness it lies in the
# harness's own dir (NSR_SCRATCH), which the harness removes when the test
# ends, whatever the test left in it.
scratch() {
	_s=$(mktemp -d "${NSR_SCRATCH:-${TMPDIR:-/tmp}}/nsr-t.XXXXXX")
	chmod 0755 "$_s"
	echo "$_s"
}

# A home of the test's own at $1/home and a data dir at $1/data that holds
# a copy of the stage's profiles and policies, ours to edit (the stage may
# be read-only: a dist build); HOME and NSRUN_DATADIR name them, and no
# XDG variable leads elsewhere. H and data name them too.
own_home_and_data() {
	mkdir -p "$1/home" "$1/data"
	cp -r "$NSR_STAGE/profiles" "$NSR_STAGE/seccomp" "$1/data/"
	chmod -R u+w "$1/data"
	NSRUN_DATADIR=$1/data; export NSRUN_DATADIR
	HOME=$1/home; export HOME
	H=$1/home data=$1/data
	unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME HF_HOME
}

# An empty root with only /usr from the host (Debian 12 is merged-/usr).
MINROOT="--tmpfs / --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib --symlink usr/lib64 /lib64"

# wait_until SECONDS COMMAND...: polls COMMAND every 10 ms until it
# succeeds (status 0) or SECONDS pass (status 1). Races wait for the event
# itself, never for a fixed time.
wait_until() {
	_wu_deadline=$(( $(date +%s) + $1 )); shift
	while ! "$@"; do
		[ "$(date +%s)" -ge "$_wu_deadline" ] && return 1
		sleep 0.01
	done
	return 0
}

# host_write_when_ready SYNC FILE stat|nostat: waits (up to 20 s) for
# SYNC/ready, appends a line to FILE at once (after a stat of it with
# "stat": the next change then gets a fine-grained ctime), then makes
# SYNC/go. A host write racing a run's start, for the conflict tests.
host_write_when_ready() {
	python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
s, f, query = sys.argv[1], sys.argv[2], sys.argv[3] == "stat"
end = time.monotonic() + 20
while not os.path.exists(s + "/ready"):
	if time.monotonic() > end: sys.exit("no ready")
	time.sleep(0.0002)
if query: os.stat(f)
with open(f, "a") as fh: fh.write("host\n")
open(s + "/go", "w").close()
PY
}
