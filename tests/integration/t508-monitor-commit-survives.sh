#!/bin/sh
# Once the command has ended, nothing but the user's own signal stops the
# transaction (issue 23 item 13): nsrun's parent-death signal must not
# fire mid-commit. A parent thread starts nsrun, reads --json-status-fd
# until the command's exit code (written when the command has ended) and
# exits; the thread's exit is a "parent death" for PR_SET_PDEATHSIG. nsrun
# must still commit every file and exit 0.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the threaded parent"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
cd "$d" || exit 1
mkdir -p proj state
cat >parent.py <<'PYEOF'
import os, subprocess, sys, threading
nsrun, proj, state = sys.argv[1:4]
res = {}
def starter():
    r, w = os.pipe()
    p = subprocess.Popen([nsrun, "-p", proj, "--state-dir", state, "--json-status-fd", str(w), "--",
                          "sh", "-c", 'i=0; while [ $i -lt 3000 ]; do echo $i >"f$i"; i=$((i + 1)); done'],
                         pass_fds=[w], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    res["pid"] = p.pid
    data = b""
    while b'"exit-code"' not in data:
        k = os.read(r, 4096)
        if not k:
            break
        data += k
    res["status"] = data
    # This thread, nsrun's parent, ends here: nsrun is capturing or
    # committing 3000 files now.
threading.Thread(target=starter).start()
import time
while "status" not in res:
    time.sleep(0.01)
_, st = os.waitpid(res["pid"], 0)
print("status", os.waitstatus_to_exitcode(st))
print("exit-code seen", b'"exit-code": 0' in res["status"])
print("files", len([f for f in os.listdir(proj) if f.startswith("f")]))
PYEOF
run python3 parent.py "$NSRUN" "$d/proj" "$d/state"
is "$(printf '%s\n' "$out" | sed -n 2p)" "exit-code seen True" "the command ended with 0 (--json-status-fd)"
is "$(printf '%s\n' "$out" | sed -n 1p)" "status 0" "nsrun was not killed when its parent thread exited after the command"
is "$(printf '%s\n' "$out" | sed -n 3p)" "files 3000" "every file was committed"
run $NSRUN -p "$d/proj" --state-dir "$d/state" -- true
is "$rc" 0 "the next run finds nothing to recover and runs"
done_testing
