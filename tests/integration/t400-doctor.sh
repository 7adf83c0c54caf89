#!/bin/sh
# nsrun doctor: the verdict on this machine, the JSON, and every host
# restriction the nsr-restrict helper can simulate, each with its verdict,
# its named reason and its exit status (0 full, 2 degraded, 1 unavailable).
# Also the "nsrun doctor" hint on launch failures, which bwrap mode never
# shows.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed to read the JSON"
R=$NSR_HELPERS/nsr-restrict
d=$(scratch)
cd "$d" || exit 1

# json EXPR: evaluates a Python expression over the document in $out (d).
json() { printf '%s' "$out" | python3 -c 'import json, sys; d = json.load(sys.stdin); c = {x["name"]: x for x in d["checks"]}; print(eval(sys.argv[1]))' "$1"; }

required="userns uid-map userns-mount pidns netns overlay overlay-depth seccomp"
names="userns uid-map userns-mount pidns netns overlay overlay-depth seccomp landlock landlock-scope tmpfs-xattr fanotify pidfd clone3 cgroup sandbox proc-hidepid egress"

# ---- this machine -------------------------------------------------------
run "$NSRUN" doctor
is "$rc" 0 "doctor exits 0 here: every default layer works"
like "$out" "^verdict: full: " "the last line is the verdict: full"
is "$(printf '%s\n' "$out" | grep -cE '^(OK|FAILED)  ')" 18 "one line per check"
guarantees="files-write files-hidden truncate protected-git-paths review-before-commit network signals ptrace host-processes process-list leftovers terminal ipc"
is "$(printf '%s\n' "$out" | sed -n 's/^  \(holds\|NOT HELD\) *\([a-z-]*\): .*/\2/p' | tr '\n' ' ' | sed 's/ $//')" "$guarantees" \
	"then, for best-effort mode, each of the namespace sandbox's guarantees, held or not"
like "$out" "^best-effort mode \(--sandbox=best-effort\) here, against the namespace sandbox:" "... under a heading"
like "$out" "^  NOT HELD  review-before-commit: " "... writes are live in best-effort mode"
like "$out" "^  NOT HELD  process-list: " "... other processes are visible"
if grep -Eq '^[^ ]+ /proc [^ ]+ .* - proc [^ ]+ [^ ]*hidepid=([1-2]|noaccess|invisible|ptraceable)' /proc/self/mountinfo; then hp=OK; else hp=FAILED; fi
like "$out" "^$hp  proc-hidepid: " "whether /proc hides other users' processes is reported ($hp here)"
like "$out" "^  NOT HELD  process-list: .*$( [ $hp = OK ] && echo "other users' are hidden" || echo "other users' command lines too")" "... and said in the process-list guarantee"
for n in $required; do
	like "$out" "^OK      $n: " "$n is OK"
done
like "$out" "^OK      landlock: ABI [1-9]" "the Landlock ABI is reported"
like "$out" "^(OK|FAILED)  cgroup: " "cgroup delegation is reported"
like "$out" "^OK      sandbox: " "the sandbox check is a fact, always OK"
like "$out" "^OK      egress: --allow-host works: " "egress: --allow-host works with the namespace sandbox"

run "$NSRUN" doctor --json
is "$rc" 0 "doctor --json exits 0 too"
is "$(json 'sorted(d.keys())')" "['best_effort', 'checks', 'verdict']" "JSON: exactly verdict, checks and best_effort"
is "$(json '" ".join(g["name"] for g in d["best_effort"])')" "$guarantees" "JSON: best_effort lists every guarantee, in order"
is "$(json 'all(sorted(g.keys()) == ["detail", "holds", "name"] and type(g["holds"]) is bool and g["detail"] for g in d["best_effort"])')" "True" \
	"JSON: each has name, holds (a boolean) and a detail"
is "$(json '[g["name"] for g in d["best_effort"] if not g["holds"] and g["name"] in ("review-before-commit", "process-list", "ipc", "files-write")]')" \
	"$(json '(["files-write"] if not c["landlock"]["ok"] else []) + ["review-before-commit", "process-list", "ipc"]')" \
	"JSON: best-effort mode never keeps review, the process list nor IPC; files-write with Landlock only"
is "$(json '{g["name"]: g for g in d["best_effort"]}["signals"]["holds"] == c["landlock-scope"]["ok"]')" True \
	"JSON: signals are held exactly when Landlock scoping is available"
is "$(json 'd["verdict"]')" "full" "JSON: the verdict is full"
is "$(json '" ".join(x["name"] for x in d["checks"])')" "$names" "JSON: every check, in order"
is "$(json 'set(tuple(sorted(x.keys())) for x in d["checks"])')" "{('detail', 'fix', 'name', 'ok')}" "JSON: each check has name, ok, detail and fix"
is "$(json 'all(type(x["ok"]) is bool and isinstance(x["detail"], str) and x["detail"] for x in d["checks"])')" "True" "JSON: ok is a boolean, detail a non-empty string"
is "$(json 'all(x["fix"] is None for x in d["checks"] if x["ok"])')" "True" "JSON: fix is null when ok"
is "$(json 'all(x["fix"] is None or x["fix"] for x in d["checks"])')" "True" "JSON: fix is null or a non-empty string"
is "$(printf '%s' "$out" | wc -l)" 0 "JSON: one line"
json_failed=$(json '" ".join(x["name"] for x in d["checks"] if not x["ok"])')
run "$NSRUN" doctor
is "$(printf '%s\n' "$out" | sed -n 's/^FAILED  \([a-z0-9-]*\):.*/\1/p' | tr '\n' ' ' | sed 's/ $//')" "$json_failed" "text and JSON fail the same checks"

run "$NSRUN" doctor --help
is "$rc:$(printf '%s\n' "$out" | head -1)" "0:usage: nsrun doctor [--json] [--state-dir DIR]" "doctor --help"
run "$NSRUN" doctor --bogus
is "$rc" 125 "an unknown option is a usage error: 125"
like "$err" "^nsrun: doctor: unexpected argument \"--bogus\"" "... and says which"
run "$NSRUN" --help
like "$out" "^    doctor \[--json\] " "--help lists the doctor subcommand"

# ---- user.max_user_namespaces=0 (set inside a user namespace) -----------
run "$R" --max-userns 0 -- "$NSRUN" doctor --json
is "$rc" 2 "max_user_namespaces=0: exit 2, degraded (Landlock is left)"
is "$(json 'd["verdict"]')" "degraded" "... the verdict is degraded"
is "$(json 'c["userns"]["ok"], c["uid-map"]["ok"], c["landlock"]["ok"]')" "(False, False, True)" "... userns fails, Landlock works"
like "$(json 'c["userns"]["detail"]')" "user\.max_user_namespaces is 0.*ENOSPC" "... the reason names max_user_namespaces and ENOSPC"
like "$(json 'c["userns"]["fix"]')" "sysctl -w user\.max_user_namespaces=" "... the fix raises it"
run "$R" --max-userns 0 -- "$NSRUN" doctor
like "$out" "^FAILED  userns: user\.max_user_namespaces is 0, .* — fix: " "... in the text too, with the fix after a dash"
like "$out" "^verdict: degraded: no user namespace sandbox .*best-effort" "... and the verdict names best-effort mode"
like "$out" "^OK      egress: --allow-host works in best-effort mode: .*Landlock ABI [4-9]" "... and egress says --allow-host works with Landlock's TCP rules"

run "$R" --max-userns 0 --deny-landlock -- "$NSRUN" doctor --json
is "$rc" 1 "no user namespaces and no Landlock: exit 1"
is "$(json 'd["verdict"]')" "unavailable" "... the verdict is unavailable"
like "$(json 'c["landlock"]["detail"]')" "ENOSYS" "... Landlock's reason: ENOSYS"
is "$(json '[g["name"] for g in d["best_effort"] if g["holds"] and g["name"] in ("files-write", "files-hidden", "protected-git-paths", "ptrace", "signals")]')" "[]" \
	"... and best-effort mode keeps none of Landlock's guarantees"
like "$(json '{g["name"]: g for g in d["best_effort"]}["files-write"]["detail"]')" "refuses to run" "... it refuses to run"
run "$R" --max-userns 0 --deny-landlock -- "$NSRUN" doctor
like "$out" "^verdict: unavailable: " "... in the text too"
like "$out" "^OK      egress: --allow-host is refused here" "... and egress says --allow-host is refused"

# ---- a seccomp filter like Docker's -------------------------------------
run "$R" --deny-userns EPERM -- "$NSRUN" doctor --json
is "$rc" 2 "a seccomp filter denying CLONE_NEWUSER: exit 2"
like "$(json 'c["userns"]["detail"]')" "a seccomp filter denies unshare\(CLONE_NEWUSER\).*EPERM.*Seccomp: 2" "... the reason names the seccomp filter"
like "$(json 'c["userns"]["fix"]')" "seccomp profile" "... the fix is the seccomp profile"
is "$(json 'c["clone3"]["ok"], c["seccomp"]["ok"]')" "(False, True)" "... clone3 fails (ENOSYS, an optional extra); a filter still loads"
like "$(json 'c["clone3"]["detail"]')" "ENOSYS.*seccomp filter" "... clone3's reason: ENOSYS from a filter"

# ---- kernel.unprivileged_userns_clone=0 ---------------------------------
# This kernel has no such sysctl: a tmpfs over /proc/sys/kernel provides
# it, and the filter gives the EPERM the sysctl would.
run "$R" --fake-sysctl unprivileged_userns_clone=0 --deny-userns EPERM -- "$NSRUN" doctor --json
is "$rc" 2 "kernel.unprivileged_userns_clone=0: exit 2"
like "$(json 'c["userns"]["detail"]')" "^kernel\.unprivileged_userns_clone is 0" "... the reason names the sysctl, before the filter"
like "$(json 'c["userns"]["fix"]')" "unprivileged_userns_clone=1" "... the fix sets it"

# ---- AppArmor's restriction (Ubuntu 23.10+) ------------------------------
# The namespace is created, then a mount fails with EPERM; the sysctl is
# faked as above.
run "$R" --fake-sysctl apparmor_restrict_unprivileged_userns=1 --deny-mount -- "$NSRUN" doctor --json
is "$rc" 2 "AppArmor's restriction: exit 2"
is "$(json 'c["userns"]["ok"], c["uid-map"]["ok"], c["userns-mount"]["ok"]')" "(True, True, False)" "... userns and the maps work, the mount fails"
like "$(json 'c["userns-mount"]["detail"]')" "^AppArmor restricts unprivileged user namespaces .*mounting a tmpfs fails: .*EPERM" "... the reason names AppArmor and the step"
like "$(json 'c["userns-mount"]["fix"]')" "install-apparmor.*apparmor_parser -r .*/apparmor.d/nsrun" "... the fix loads nsrun's profile"

# ---- nesting --------------------------------------------------------------
run "$R" --nest-max -- "$NSRUN" doctor --json
is "$rc" 2 "user namespaces nested as deep as the kernel allows: exit 2"
like "$err" "nested [0-9]+ user namespaces, then: No space left on device" "... (the helper nested until ENOSPC)"
like "$(json 'c["userns"]["detail"]')" "ENOSPC.*nested 32 deep" "... the reason mentions the nesting depth"
run "$R" --deny-userns EUSERS -- "$NSRUN" doctor --json
like "$(json 'c["userns"]["detail"]')" "^user namespaces are nested too deeply .*EUSERS" "EUSERS (older kernels' nesting error) is named"
run "$R" --deny-userns EINVAL -- "$NSRUN" doctor --json
like "$(json 'c["userns"]["detail"]')" "EINVAL.*although the kernel has user namespaces" "EINVAL with /proc/self/ns/user present is not blamed on CONFIG_USER_NS"

# ---- overlay stacking -----------------------------------------------------
mkdir "$d/src"
echo lower > "$d/src/f"
# /proc bound read-write: the doctor inside writes its probes' id maps.
S="--ro-bind / / --unshare-user --bind /proc /proc"
run "$NSRUN" $S --overlay-src "$d/src" --tmp-overlay /mnt --chdir /mnt -- "$NSRUN" doctor
is "$rc" 0 "inside one overlay: still full (exit 0)"
like "$out" "^OK      overlay-depth: cwd /mnt: on an overlay, 1 more level;" "... the cwd has one overlay level left"
run "$NSRUN" $S --overlay-src "$d/src" --tmp-overlay /mnt -- \
	"$NSRUN" $S --overlay-src /mnt --tmp-overlay /mnt --chdir /mnt -- "$NSRUN" doctor
is "$rc" 2 "inside an overlay on an overlay: degraded (exit 2)"
like "$out" "^FAILED  overlay-depth: cwd /mnt: on stacked overlays, no more levels;.* — fix: .*--no-overlay" "... no level left, and the fix is --no-overlay"
like "$out" "^verdict: degraded: .*--no-overlay" "... the verdict says so"
like "$out" "^OK      sandbox: already inside: nsrun " "... and the sandbox check sees nsrun"

# ---- the hint on launch failures -----------------------------------------
run "$R" --max-userns 0 -- "$NSRUN" --unshare-user $BASE true
is "$rc:$err" "1:nsrun: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC); run \"nsrun doctor\" for details" \
	"a clone failure points to nsrun doctor"
run "$R" --deny-userns EPERM -- "$NSRUN" --unshare-user $BASE true
like "$err" "^nsrun: No permissions to create a new namespace.*; run \"nsrun doctor\" for details$" "... EPERM too"
run "$R" --fake-sysctl apparmor_restrict_unprivileged_userns=1 --deny-mount -- "$NSRUN" --unshare-user $BASE true
is "$err" "nsrun: Failed to make / slave: Operation not permitted; run \"nsrun doctor\" for details" "... a mount failing with EPERM too"
ln -s "$NSRUN" "$d/bwrap"
run "$R" --max-userns 0 -- "$d/bwrap" --unshare-user $BASE true
is "$rc:$err" "1:bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)" \
	"as bwrap the message stays bwrap's exact text"
run "$NSRUN" $BASE --bind "$d/nonexistent" /x true
is "$err" "nsrun: Can't find source path $d/nonexistent: No such file or directory" "other errors get no hint"
mkdir "$d/proj"
run env NSRUN_DATADIR="$NSR_STAGE" "$R" --max-userns 0 -- "$NSRUN" --project "$d/proj" --state-dir "$d/state" -- true
is "$rc:$err" "125:nsrun: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC); run \"nsrun doctor\" for details; --sandbox=best-effort runs without user namespaces (Landlock and seccomp)" \
	"project mode's launch failure points to nsrun doctor and best-effort mode"

# A static nsrun (configure's default) loads libmount with the C library on
# disk; when that is not the one it was built with, glibc can abort inside
# dlopen. A child tries first: the hook makes it abort, and doctor must
# then say why the mount table cannot be read, and what fixes it, instead
# of dying.
if [ -n "${NSR_TEST_HOOKS:-}" ]; then
	run env NSRUN_TEST_LIBMOUNT_ABORT=1 "$NSRUN" doctor
	is "$rc" 0 "a libmount that cannot be loaded does not end doctor"
	like "$out" "^FAILED  cgroup: \[optional\] cannot read the mount table: this static nsrun cannot load libmount.so.1 with the C library installed now, not the one it was built with — fix: rebuild nsrun, or configure it with --disable-static-pie$" \
		"... its check says why, and what fixes it"
	unlike "$err" "Abort|core dumped" "... and the child that tried left no trace"
else
	for c in "doctor goes on" "its check says why" "no trace"; do
		skip "libmount that cannot be loaded: $c" "NSRUN_TEST_LIBMOUNT_ABORT needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
	done
fi

cd / && rm -rf "$d"
done_testing
