#!/bin/sh
# Profile files (nsrun-profile(5)): the shipped profiles run real commands,
# lookup and order, file:line errors, project-local tightening and its
# protection, and a system "forbid" against the user's files and command
# line.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
mkdir -p "$P" "$d/cfg" "$d/etc/nsrun"
NS="--state-dir $d/state"
[ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ] || skip_all "needs a writable HOME"
# The user's config dir, and (test builds) the system's, both under $d.
export XDG_CONFIG_HOME="$d/cfg"
if [ "${NSR_TEST_HOOKS:-}" = 1 ]; then
	export NSRUN_TEST_SYSCONFDIR="$d/etc"
fi
rm -rf "$HOME/.nsr-t600"; mkdir -p "$HOME/.nsr-t600"; echo visible > "$HOME/.nsr-t600/f"

# ---- the shipped profiles ----------------------------------------------------
run "$NSRUN" --profile agent -p "$P" $NS -q -- sh -c 'echo hello > out; cat ~/.nsr-t600/f'
is "$rc:$out" "0:visible" "agent runs a command, with the home visible"
is "$(cat "$P/out" 2>/dev/null)" "hello" "... and its write is applied"
run "$NSRUN" profile show agent
like "$out" "^home overlay +# .*/profiles/agent.profile:[0-9]+$" "profile show agent prints expanded lines with file:line"
like "$out" "^sandbox required +# " "... every line of it"
run "$NSRUN" profile show strict --json
got=$(printf '%s' "$out" | python3 -c 'import json, sys
d = json.load(sys.stdin)
o = d["options"][0]
print(o["option"], o["args"], o["file"].endswith("/profiles/strict.profile"), o["line"] > 0)')
is "$got" "--home ['hide'] True True" "profile show --json: option, args, file and line"

cp "$NSR_HELPERS/nsr-sysprobe" "$P/probe" 2>/dev/null
run "$NSRUN" --profile strict -p "$P" $NS -q -- sh -c 'ls -A ~ | wc -l; ./probe ptrace'
is "$rc:$out" "0:0
ptrace EPERM" "strict: the home is empty and the strict seccomp policy refuses ptrace"
run "$NSRUN" -p "$P" $NS -q -- ./probe ptrace
is "$out" "ptrace ESRCH" "... which the default policy allows (the test can fail)"
rm -f "$P/probe"

W=$d/ws
mkdir -p "$W/sub"; echo marker > "$W/marker"
run sh -c "cd '$W/sub' && '$NSRUN' --profile workspace-root -p '$W' $NS -q -- sh -c 'pwd; cat /marker; ls -A / | tr \"\\n\" \" \"; echo; echo new > /created; touch /etc/x 2>/dev/null || echo etc-ro; /usr/bin/env true && echo usr'"
is "$rc" 0 "workspace-root runs a command"
like "$out" "^/sub
marker
" "workspace-root: the project is /, the cwd its place in it"
like "$out" "(^| )usr( |$)" "... with the host's /usr beneath it"
like "$out" "etc-ro" "... and /etc read-only"
like "$out" "usr$" "... and programs from /usr run"
is "$(cat "$W/created" 2>/dev/null)" "new" "a write to /created lands in the project at apply"
is "$(ls -A "$W" | tr '\n' ' ')" "created marker sub " "... and no mount point (usr, proc, tmp...) comes back as a change"
run "$NSRUN" --profile workspace-root --ro /srv -p "$W" $NS -- true
like "$rc:$err" "^125:.*--ro and --rw cannot be combined with --workspace-root" "--workspace-root refuses --ro"

run "$NSRUN" profile list
like "$out" "^agent +$NSR_STAGE/profiles/agent.profile" "profile list shows the shipped agent"
like "$out" "^strict " "... and strict"
like "$out" "^workspace-root " "... and workspace-root"

# ---- lookup, order, errors -----------------------------------------------
mkdir -p "$d/cfg/nsrun/profiles"
echo secret > "$d/secret"
printf '# mine\nhide %s\nhome hide\n' "'$d/secret'" > "$d/cfg/nsrun/profiles/mine.profile"
run "$NSRUN" --profile mine -p "$P" $NS -q -- sh -c 'cat '"$d/secret"'; ls -A ~ | wc -l'
is "$rc:$out" "0:0" "--profile NAME finds \$XDG_CONFIG_HOME/nsrun/profiles/NAME.profile"
run "$NSRUN" --profile mine --home overlay -p "$P" $NS -q -- cat "$HOME/.nsr-t600/f"
is "$rc:$out" "0:visible" "the command line wins over the profile (--home overlay after home hide)"
run "$NSRUN" --home overlay -p "$P" --profile mine $NS -q -- cat "$HOME/.nsr-t600/f"
is "$rc:$out" "0:visible" "... wherever --profile stands"
printf 'include mine\nhome ro\n' > "$d/two.profile"
run "$NSRUN" --profile "$d/two.profile" -p "$P" $NS -q -- sh -c 'cat ~/.nsr-t600/f; touch ~/.nsr-t600/g 2>/dev/null || echo ro'
is "$rc:$out" "0:visible
ro" "--profile PATH with an include; the later home ro wins"

printf 'hide /tmp\n\nbogus-option\n' > "$d/bad.profile"
run "$NSRUN" --profile "$d/bad.profile" -p "$P" $NS -- true
is "$rc" 125 "a bad profile line exits 125"
like "$err" "bad.profile:3: unknown option \"bogus-option\"" "... and names file:line"
printf 'hide $PATH\n' > "$d/bad.profile"
run "$NSRUN" --profile "$d/bad.profile" -p "$P" $NS -- true
like "$rc:$err" "^125:.*bad.profile:1: .PATH: only .HOME and .XDG_. are expanded" "only \$HOME and \$XDG_* expand"
run "$NSRUN" profile check "$d/bad.profile"
like "$rc:$err" "^125:.*bad.profile:1: " "profile check reports the first error as file:line"
run "$NSRUN" profile check "$d/two.profile"
like "$rc:$out" "^0:.*two.profile: 3 option lines, ok" "profile check counts the lines of a good file, includes expanded"
printf 'include loop.profile\n' > "$d/loop.profile"
run "$NSRUN" --profile "$d/loop.profile" -p "$P" $NS -- true
like "$rc:$err" "^125:.*includes itself" "an include cycle is refused"

# The user config applies to every project-mode run.
printf 'hide %s\n' "$d/secret" > "$d/cfg/nsrun/config"
run "$NSRUN" -p "$P" $NS -q -- cat "$d/secret"
is "$rc:$out" "0:" "\$XDG_CONFIG_HOME/nsrun/config applies without --profile"
run "$NSRUN" --ro-bind / / -- cat "$d/secret"
is "$rc:$out" "0:secret" "... and not to a run outside project mode"
rm -f "$d/cfg/nsrun/config"

printf -- '--project\0%s\0--share-net\0' "$P" > "$d/args"
run "$NSRUN" --args 3 -- true 3<"$d/args"
like "$rc:$err" "^125:.*--project inside an --args file" "--project inside --args is refused (the configs would come too late)"

# ---- project-local tightening ------------------------------------------------
mkdir -p "$P/.nsrun"
echo "token" > "$P/.env"
printf 'hide %s/.env\nhome hide\n' "$P" > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q -- sh -c 'cat .env; ls -A ~ | wc -l'
is "$rc:$out" "0:0" "a tightening .nsrun/profile applies (hide, home hide)"
printf 'hide /srv\nshare-net\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -- true
is "$rc" 125 "a loosening project-local line is refused (exit 125)"
like "$err" "proj/.nsrun/profile:2: --share-net could loosen the sandbox" "... naming file:line and why"
printf 'rw %s\n' "$HOME" > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -- true
like "$rc:$err" "^125:.*profile:1: --rw could loosen" "rw is refused there too"
printf 'home ro\n' > "$P/.nsrun/profile"
run "$NSRUN" --profile mine -p "$P" $NS -- true
like "$rc:$err" "^125:.*--home ro would loosen --home hide" "a home looser than the profile's is refused"

printf 'hide /srv\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q -- sh -c 'echo share-net >> .nsrun/profile 2>/dev/null || echo refused'
is "$out" "refused" ".nsrun is read-only inside the sandbox"
is "$(cat "$P/.nsrun/profile")" "hide /srv" "... and the file is unchanged"
rm -rf "$P/.nsrun"
run "$NSRUN" -p "$P" $NS -- sh -c 'mkdir .nsrun && echo share-net > .nsrun/profile'
is "$rc" 0 "a run may create .nsrun inside"
check "... but it is dropped at apply" test ! -e "$P/.nsrun"
like "$err" "protected: [0-9]+ changes? dropped, e\.g\. \.nsrun" "... and the summary says so"

# ---- forbid in the system config ---------------------------------------------
if [ "${NSR_TEST_HOOKS:-}" != 1 ]; then
	skip "forbid in the system config" "needs a build with --enable-test-hooks (NSRUN_TEST_SYSCONFDIR)"
else
	printf 'forbid share-net\nforbid sandbox=off\n' > "$d/etc/nsrun/config"
	run "$NSRUN" -p "$P" $NS --share-net -- true
	is "$rc" 125 "forbid share-net holds against the command line"
	like "$err" "--share-net is forbidden on this system \\($d/etc/nsrun/config:1\\)" "... with a clear message"
	run "$NSRUN" --ro-bind / / --share-net -- true
	like "$rc:$err" "^125:.*--share-net is forbidden" "... and in a run outside project mode"
	run "$NSRUN" --ro-bind / / -- true
	is "$rc" 0 "... which otherwise runs"
	printf 'share-net\n' > "$d/cfg/nsrun/config"
	run "$NSRUN" -p "$P" $NS -- true
	like "$rc:$err" "^125:.*cfg/nsrun/config:1: --share-net is forbidden" "... and against the user's config"
	rm -f "$d/cfg/nsrun/config"
	printf 'sandbox=off\n' > "$d/off.profile"
	run "$NSRUN" --profile "$d/off.profile" -p "$P" $NS -- true
	like "$rc:$err" "^125:.*off.profile:1: --sandbox=off is forbidden" "forbid sandbox=off holds against a profile"
	run "$NSRUN" -p "$P" $NS --sandbox=off -- true
	is "$rc" 125 "... and the command line"
	run "$NSRUN" -p "$P" $NS -q -- true
	is "$rc" 0 "a run that uses neither still works"
	printf 'forbid share-net\n' > "$d/cfg/nsrun/config"
	run "$NSRUN" -p "$P" $NS -- true
	like "$rc:$err" "^125:.*forbid is only read from the system config" "the user config cannot forbid"
	rm -f "$d/cfg/nsrun/config" "$d/etc/nsrun/config"
fi

rm -rf "$HOME/.nsr-t600" "$d"
done_testing
