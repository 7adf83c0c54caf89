#!/bin/sh
# Configuration that lives in a project (issue 23, item 1): every file nsrun
# reads as its own configuration that lies inside a project the run can
# write (a --profile path and what it includes, a --seccomp-policy path and
# the policies beside it, an --args file, the user's nsrun config dir) is
# protected like .nsrun/profile: read-only inside, its changes dropped at
# commit and listed in "protected", in one-shot runs and in sessions. A
# profile named by path inside a project is read like .nsrun/profile:
# tightening lines only, with the reason and what to do instead.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
mkdir -p "$P/conf" "$d/cfg"
export XDG_CONFIG_HOME="$d/cfg"
NS="--state-dir $d/state"
[ -n "${HOME:-}" ] && [ -d "$HOME" ] || skip_all "needs a HOME"

# protected REPORT PATH: the JSON report lists PATH as dropped
protected() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = [e for pr in d["projects"] for e in pr.get("protected", [])]
sys.exit(0 if any(e.get("path") == sys.argv[2] and e.get("action") == "dropped" for e in p) else 1)
EOF
}

# ---- a --profile path inside the project --------------------------------------
printf 'hide /srv\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS --report '$d/r1.json' -- \
	sh -c 'echo share-net >> conf/ci.profile 2>/dev/null || echo refused'"
is "$rc:$out" "0:refused" "a --profile path inside the project is read-only inside"
is "$(cat "$P/conf/ci.profile")" "hide /srv" "... and the file is unchanged for the next run"

printf 'share-net\nrw %s\n' "$HOME" > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS -- true"
is "$rc" 125 "a loosening line in a --profile inside the project is refused (exit 125)"
like "$err" "conf/ci.profile:1: --share-net could loosen the sandbox, and the sandbox can write this file" \
	"... naming file:line and why"
like "$err" "give it on the command line or in a profile outside the project" "... and what to do instead"
run "$NSRUN" profile check -p "$P" "$P/conf/ci.profile"
like "$rc:$err" "^125:.*ci.profile:1: --share-net could loosen" "profile check -p DIR reads a file inside DIR as the run does"
run "$NSRUN" profile check "$P/conf/ci.profile"
is "$rc" 0 "... and without -p as an ordinary profile"
printf 'include strict\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS -- true"
like "$rc:$err" "^125:.*ci.profile:1: include is refused in a profile inside a project" \
	"include is refused there, as in .nsrun/profile"
printf 'home hide\nkill-after 1h\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS -- true"
like "$rc:$err" "^125:.*ci.profile:2: --kill-after 1h would loosen" "its limits are compared with the value in force"
printf 'home hide\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS -q --home overlay -- sh -c 'ls -A ~ | wc -l'"
is "$rc:$out" "0:0" "a tightening line of it applies, against the command line too"

# An outside profile that includes a file of the project by path: that file
# is the project's all the same.
printf 'include %s\n' "$P/conf/ci.profile" > "$d/outer.profile"
printf 'share-net\n' > "$P/conf/ci.profile"
run "$NSRUN" --profile "$d/outer.profile" -p "$P" $NS -- true
like "$rc:$err" "^125:.*ci.profile:1: --share-net could loosen" "a project file included by path is read the same way"

# With live writes too; the files beside it stay the run's.
printf 'hide /srv\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./conf/ci.profile -p . $NS --no-overlay --report '$d/r2.json' -- \
	sh -c 'echo share-net > conf/new.profile; echo share-net >> conf/ci.profile 2>/dev/null; true'"
is "$(cat "$P/conf/ci.profile")" "hide /srv" "--no-overlay: the profile is unchanged"
is "$(cat "$P/conf/new.profile" 2>/dev/null)" "share-net" "... while the files beside it are the run's"

# A --profile named through a symlink in the project: the link is the
# project's too (a run that repoints it is dropped).
mkdir -p "$d/h"
printf 'hide /srv\n' > "$d/h/x.profile"
ln -s "$d/h/x.profile" "$P/link.profile"
run sh -c "cd '$P' && '$NSRUN' --profile ./link.profile -p . $NS --report '$d/r6.json' -- \
	sh -c 'echo share-net > evil.profile; rm -f link.profile; ln -s evil.profile link.profile'"
is "$(readlink "$P/link.profile")" "$d/h/x.profile" "a symlink the --profile was read through keeps its target"
check "... and the repointing is listed in protected" protected "$d/r6.json" link.profile
rm -f "$P/link.profile" "$P/evil.profile"

# ---- an --args file, a --seccomp-policy path ----------------------------------
printf -- '--unshare-net\0' > "$P/conf/args"
run "$NSRUN" -p "$P" $NS --report "$d/r3.json" --args 3 -- sh -c "printf -- '--share-net\\0' > '$P/conf/args' 2>/dev/null || echo refused" 3<"$P/conf/args"
is "$rc:$out" "0:refused" "an --args file inside the project is read-only inside"
is "$(od -An -c "$P/conf/args" | tr -d ' \n')" '--unshare-net\0' "... and unchanged"

mkdir -p "$P/pol"
printf 'include default\n' > "$P/pol/my.policy"
run "$NSRUN" -p "$P" $NS --seccomp-policy "$P/pol/my.policy" --report "$d/r4.json" -- \
	sh -c "echo 'allow ptrace' > '$P/pol/my.policy' 2>/dev/null || echo refused; echo '# planted' > '$P/pol/default.policy'"
is "$rc:$out" "0:refused" "a --seccomp-policy path inside the project is read-only inside"
check "... and a policy planted beside it (an include would find it) is dropped at commit" test ! -e "$P/pol/default.policy"
check "... and listed in the report's protected changes" protected "$d/r4.json" pol/default.policy

# ---- the user's nsrun config dir inside the project -------------------------------
H=$d/home
mkdir -p "$H/.config"
run env XDG_CONFIG_HOME="$H/.config" "$NSRUN" -p "$H" $NS --report "$d/r5.json" -- sh -c \
	"mkdir -p '$H/.config/nsrun/profiles' && echo share-net > '$H/.config/nsrun/profiles/strict.profile' && echo share-net > '$H/.config/nsrun/config'"
is "$rc" 0 "a run on a project holding the user's config dir may write there inside"
check "... but a profile it plants there is dropped at commit" test ! -e "$H/.config/nsrun/profiles/strict.profile"
check "... and so is a config" test ! -e "$H/.config/nsrun/config"
check "... listed in protected" protected "$d/r5.json" .config/nsrun/config
like "$err" "protected: [0-9]+ changes? dropped" "... and the summary says so"

# The config dir as a symlink into a project: what it resolves to is protected.
mkdir -p "$d/h3/.config" "$P/mycfg"
ln -s "$P/mycfg" "$d/h3/.config/nsrun"
run env XDG_CONFIG_HOME="$d/h3/.config" "$NSRUN" -p "$P" $NS -q -- sh -c \
	"mkdir -p '$P/mycfg/profiles' 2>/dev/null && echo share-net > '$P/mycfg/profiles/strict.profile'; true"
check "a config dir linked into the project takes no planted profile" test ! -e "$P/mycfg/profiles/strict.profile"
rm -rf "$P/mycfg"

# A kept run, committed later by another nsrun, drops the same changes.
run env XDG_CONFIG_HOME="$H/.config" "$NSRUN" -p "$H" $NS --keep --report "$d/r7.json" -- sh -c \
	"mkdir -p '$H/.config/nsrun' && echo share-net > '$H/.config/nsrun/config' && echo y > '$H/y'"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$d/r7.json" 2>/dev/null)
run "$NSRUN" commit $NS "$id"
is "$rc" 0 "a kept run: nsrun commit RUN works"
check "... the config it planted does not reach the host" test ! -e "$H/.config/nsrun/config"
check "... and its other change does" test -f "$H/y"

# ---- a --rw path is written live: the file is bound read-only in it ---------------
mkdir -p "$d/w"
printf 'hide /srv\n' > "$d/w/x.profile"
run "$NSRUN" --profile "$d/w/x.profile" -p "$P" --rw "$d/w" $NS -q -- \
	sh -c "echo share-net >> '$d/w/x.profile' 2>/dev/null || echo refused; echo ok > '$d/w/other'"
is "$rc:$out" "0:refused" "a --profile in a --rw path is read-only inside"
is "$(cat "$d/w/x.profile"):$(cat "$d/w/other" 2>/dev/null)" "hide /srv:ok" "... while the rest of the --rw path is the run's"
mkdir -p "$d/w/a/b"
printf 'hide /srv\n' > "$d/w/a/b/y.profile"
run "$NSRUN" --profile "$d/w/a/b/y.profile" -p "$P" --rw "$d/w" $NS -q -- \
	sh -c "cd '$d/w' && mv a a2 2>/dev/null; mkdir -p a/b && echo share-net > a/b/y.profile 2>/dev/null; true"
is "$(cat "$d/w/a/b/y.profile"):$(ls "$d/w" | tr '\n' ' ')" "hide /srv:a other x.profile " \
	"... and the dirs on its way cannot be renamed to plant another under its name"

# ---- sessions ---------------------------------------------------------------------
printf 'hide /srv\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' session start --profile ./conf/ci.profile -p . $NS"
if [ "$rc" != 0 ]; then
	not_ok "session start with a --profile inside the project"; diag "$err"
else
	id=$out
	run "$NSRUN" exec --state-dir "$d/state" "$id" -- sh -c "echo share-net >> '$P/conf/ci.profile' 2>/dev/null || echo refused"
	is "$out" "refused" "session: the --profile inside the project is read-only inside"
	run "$NSRUN" session stop --state-dir "$d/state" --commit "$id"
	is "$(cat "$P/conf/ci.profile")" "hide /srv" "session: the profile is unchanged after the commit"
fi
printf 'share-net\n' > "$P/conf/ci.profile"
run sh -c "cd '$P' && '$NSRUN' session start --profile ./conf/ci.profile -p . $NS"
like "$rc:$err" "^125:.*ci.profile:1: --share-net could loosen" "session start reads it with the same rules"
[ "$rc" = 0 ] && "$NSRUN" session stop --state-dir "$d/state" --discard "$out" >/dev/null 2>&1
done_testing
