#!/bin/sh
# Project mode: nothing the sandbox writes may make git, an IDE or a
# permission act on the host. Git dirs at any depth take changes by
# allow-list, a repository the run made keeps a reduced config, the
# core.hooksPath dir and protect.list paths are dropped, modes and ACLs
# are never widened. Every case checks the host, the report's protected
# list and the stderr summary.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v git >/dev/null || skip_all "needs git"
command -v python3 >/dev/null || skip_all "needs python3"
umask 022
d=$(scratch)
NS="--state-dir $d/state"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
# The host's git must not trust (or choke on) anything of the test's own.
export GIT_CONFIG_GLOBAL=/dev/null

n=0
# fresh: a new project with one committed repository at its root.
fresh() {
	n=$((n + 1))
	P=$d/p$n
	mkdir -p "$P"
	git -C "$P" init -q
	echo a > "$P/a"
	git -C "$P" add a
	git -C "$P" commit -qm one
}

# settle: waits (bounded) until the file-time clock has ticked past the
# last host change, which the commit would otherwise take for a change
# made during the run (a conflict: kept aside, not applied).
settle() {
	touch "$d/.t0"; _t0=$(stat -c %z "$d/.t0"); _i=0
	while [ $_i -lt 100000 ]; do
		touch "$d/.t1"
		[ "$(stat -c %z "$d/.t1")" \> "$_t0" ] && return 0
		_i=$((_i + 1))
	done
}

# prot REPORT: "path action" per protected entry, one a line.
prot() {
	python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["projects"][0]["protected"]:
    print(e["path"], e["action"], e.get("requested_mode", ""), e.get("mode", ""), e.get("xattr", ""))' "$1"
}

# 1. .git/commondir redirects config and hooks to a dir the command made.
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r1.json" -- sh -c '
	mkdir -p evil/hooks && printf "#!/bin/sh\necho pwned\n" > evil/hooks/pre-commit
	printf "[core]\n\tfsmonitor = echo pwned\n" > evil/config
	echo ../evil > .git/commondir'
is "$rc" 0 "commondir: the run succeeds"
check "commondir: .git/commondir does not reach the host" test ! -e "$P/.git/commondir"
is "$(git -C "$P" log --format=%s)" "one" "commondir: the host repository still works"
like "$(prot "$d/r1.json")" "^\.git/commondir dropped" "commondir: the report lists it as dropped"
like "$err" "protected: .*dropped, e\.g\. \.git/commondir" "commondir: the stderr summary names it"

# 2. A submodule config under a nested module name.
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r2.json" -- sh -c '
	mkdir -p .git/modules/a/b/hooks
	printf "[core]\n\tfsmonitor = echo pwned\n" > .git/modules/a/b/config
	echo evil > .git/modules/a/b/hooks/post-checkout'
check "modules/a/b/config does not reach the host" test ! -e "$P/.git/modules/a/b/config"
check "... nor modules/a/b/hooks" test ! -e "$P/.git/modules/a/b/hooks/post-checkout"
like "$(prot "$d/r2.json")" "\.git/modules/a/b/config dropped" "modules: the report lists the config"
like "$err" "protected: " "modules: stderr says so"

# 3. A linked worktree made in the sandbox: its admin dir and .git file.
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r3.json" -- sh -c 'git worktree add -q wt 2>&1'
is "$rc" 0 "worktree: git worktree add works inside"
check "worktree: wt/.git (a gitdir pointer) does not reach the host" test ! -e "$P/wt/.git"
check "worktree: .git/worktrees does not reach the host" test ! -e "$P/.git/worktrees"
check "worktree: the checked-out files do" test -f "$P/wt/a"
like "$(prot "$d/r3.json")" "^wt/\.git dropped" "worktree: the report lists wt/.git"

# 4. A .git file pointing at a git dir the command made, with a bad config.
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r4.json" -- sh -c '
	git init -q --bare store && git -C store config core.fsmonitor "echo pwned" &&
	echo evil > store/hooks/post-checkout && mkdir sub && echo "gitdir: ../store" > sub/.git'
check "gitdir file: sub/.git does not reach the host" test ! -e "$P/sub/.git"
check "gitdir file: store/hooks does not reach the host" test ! -e "$P/store/hooks"
unlike "$(cat "$P/store/config" 2>&1)" "fsmonitor" "gitdir file: store/config lost core.fsmonitor"
like "$(prot "$d/r4.json")" "^store/config config_reduced" "gitdir file: the report lists the reduced config"

# 5. A repository made deep in the project: hooks dropped, config reduced.
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r5.json" -- sh -c '
	mkdir -p x/y/z && cd x/y/z && git init -q && git config core.pager "echo pwned" &&
	git config alias.st "!echo pwned" && echo evil > .git/hooks/post-checkout && echo b > b && git add b &&
	git commit -qm nested'
check "nested repo: no hooks on the host" test ! -e "$P/x/y/z/.git/hooks"
is "$(git -C "$P/x/y/z" log --format=%s 2>&1)" "nested" "nested repo: git log works on the host"
keys=$(git -C "$P/x/y/z" config --list --local 2>&1 | cut -d= -f1 | sort | tr '\n' ' ')
is "$keys" "core.bare core.filemode core.logallrefupdates core.repositoryformatversion " \
	"nested repo: the config has only allowed keys"
like "$(prot "$d/r5.json")" "x/y/z/\.git/hooks/post-checkout dropped" "nested repo: the report lists the hook"

# 6. git clone inside keeps working after the commit, without its hooks.
fresh
git init -q --bare "$P/origin.git"
git -C "$P" push -q "$P/origin.git" HEAD:refs/heads/main
git -C "$P/origin.git" symbolic-ref HEAD refs/heads/main
settle; run "$NSRUN" -p "$P" $NS --report "$d/r6.json" -- sh -c '
	git clone -q --no-local origin.git clone && git -C clone config core.sshCommand "echo pwned" &&
	git -C clone config remote.evil.url "ext::sh -c pwned" && echo evil > clone/.git/hooks/pre-commit'
is "$(git -C "$P/clone" log --format=%s 2>&1)" "one" "clone: git log works on the host"
keys=$(git -C "$P/clone" config --list --local 2>&1 | cut -d= -f1 | sort | tr '\n' ' ')
is "$keys" "branch.main.merge branch.main.remote core.bare core.filemode core.logallrefupdates core.repositoryformatversion remote.origin.fetch remote.origin.url " \
	"clone: the config keeps only allowed keys (no sshCommand, no ext:: remote)"
check "clone: no hooks on the host" test ! -e "$P/clone/.git/hooks"
is "$(git -C "$P/clone" status --porcelain 2>&1)" "" "clone: git status on the host is clean"
like "$(prot "$d/r6.json")" "clone/\.git/config config_reduced" "clone: the report lists the reduced config"
like "$err" "new git config reduced" "clone: stderr says so"

# 7. core.hooksPath in the host's config: that dir is protected like hooks.
fresh
mkdir "$P/.githooks"; echo good > "$P/.githooks/pre-commit"
git -C "$P" config core.hooksPath .githooks
settle; run "$NSRUN" -p "$P" $NS --report "$d/r7.json" -- sh -c 'echo evil > .githooks/pre-commit; echo evil > .githooks/post-merge; echo ok > ok'
is "$(cat "$P/.githooks/pre-commit")" "good" "hooksPath: the existing hook is untouched"
check "hooksPath: a new hook does not reach the host" test ! -e "$P/.githooks/post-merge"
check "hooksPath: other changes do" test -f "$P/ok"
like "$(prot "$d/r7.json")" "\.githooks/pre-commit dropped" "hooksPath: the report lists it"
like "$err" "core\.hooksPath" "hooksPath: stderr gives the reason"
# core.hooksPath naming the work tree itself: its hook names.
fresh
git -C "$P" config core.hooksPath .
settle; run "$NSRUN" -p "$P" $NS --report "$d/r7c.json" -- sh -c 'echo evil > pre-commit; echo ok > README2'
check "hooksPath=.: a pre-commit file at the root does not reach the host" test ! -e "$P/pre-commit"
check "hooksPath=.: other files do" test -f "$P/README2"
like "$(prot "$d/r7c.json")" "^pre-commit dropped" "hooksPath=.: the report lists it"
# husky: .husky is on protect.list as well.
fresh
mkdir "$P/.husky"; echo good > "$P/.husky/pre-commit"
git -C "$P" config core.hooksPath .husky
settle; run "$NSRUN" -p "$P" $NS --report "$d/r7b.json" -- sh -c 'echo evil > .husky/pre-commit'
is "$(cat "$P/.husky/pre-commit")" "good" "husky: .husky/pre-commit is untouched"
like "$(prot "$d/r7b.json")" "\.husky/pre-commit dropped" "husky: the report lists it"

# 8. Files host tools run on their own (protect.list).
fresh
settle; run "$NSRUN" -p "$P" $NS --report "$d/r8.json" -- sh -c '
	mkdir -p .vscode .claude sub && echo "{}" > .vscode/tasks.json && echo "{}" > .claude/settings.json &&
	echo "echo pwned" > sub/.envrc && echo "{}" > .mcp.json && echo fine > .vscode.txt'
check "protect.list: .vscode/tasks.json does not reach the host" test ! -e "$P/.vscode/tasks.json"
check "protect.list: .claude/settings.json does not" test ! -e "$P/.claude/settings.json"
check "protect.list: sub/.envrc (any depth) does not" test ! -e "$P/sub/.envrc"
check "protect.list: .mcp.json does not" test ! -e "$P/.mcp.json"
check "protect.list: a file not on it does" test -f "$P/.vscode.txt"
like "$(prot "$d/r8.json")" "\.vscode/tasks\.json dropped" "protect.list: the report lists tasks.json"
# The user's own additions.
mkdir -p "$d/xdg/nsrun"; echo "mine/" > "$d/xdg/nsrun/protect.list"
settle; run env XDG_CONFIG_HOME="$d/xdg" "$NSRUN" -p "$P" $NS -- sh -c 'mkdir mine && echo x > mine/x'
check "protect.list: the user's entries add to it" test ! -e "$P/mine"

# 9. Modes and ACLs are never widened; chmod +x is applied.
fresh
mkdir "$P/src"; chmod 0755 "$P/src"; echo f > "$P/f"; chmod 0644 "$P/f"; echo 'echo hi' > "$P/s.sh"; chmod 0644 "$P/s.sh"
settle; run "$NSRUN" -p "$P" $NS --report "$d/r9.json" -- sh -c '
	chmod 0777 src; chmod 0666 f; chmod +x s.sh; echo n > n; chmod 2777 n; mkdir -p new newacl; chmod 1777 new
	python3 -c "
import os, struct
e = lambda tag, perm: struct.pack(\"<HHI\", tag, perm, 0xffffffff)
acl = struct.pack(\"<I\", 2) + e(1, 7) + e(4, 5) + e(0x20, 7)
try:
    for p in (\"src\", \"newacl\"):
        os.setxattr(p, \"system.posix_acl_default\", acl)
    print(\"acl set\")
except OSError as x:
    print(\"no acl:\", x)"'
is "$(stat -c %a "$P/src")" "755" "modes: chmod 0777 of a dir is not applied"
is "$(stat -c %a "$P/f")" "644" "modes: chmod 0666 of a file is not applied"
is "$(stat -c %a "$P/s.sh")" "755" "modes: chmod +x of a script is applied"
is "$(stat -c %a "$P/n")" "755" "modes: a new file gets no setgid, group or other write"
is "$(stat -c %a "$P/new")" "755" "modes: a new dir gets no sticky bit, group or other write"
pr=$(prot "$d/r9.json")
like "$pr" "^f mode_reduced 0666 0644" "modes: the report lists the reduced mode"
like "$err" "modes? reduced" "modes: stderr says so"
case $out in
"acl set")
	run python3 -c 'import os, sys; print(" ".join(sorted(os.listxattr(sys.argv[1]) + os.listxattr(sys.argv[2]))))' "$P/src" "$P/newacl"
	unlike "$out" "posix_acl" "ACL: the default ACL is not applied, on an old dir or a new one"
	like "$pr" "^newacl xattr_dropped +system\.posix_acl_default" "ACL: the report lists it" ;;
*) skip "ACL: the default ACL is not applied, on an old dir or a new one" "cannot set an ACL in the sandbox here: $out"
   skip "ACL: the report lists it" "no ACL" ;;
esac

# An ACL the host file had stays when the sandbox changes the content.
fresh
echo one > "$P/keepacl"
run python3 -c '
import os, struct, sys
e = lambda tag, perm, i=0xffffffff: struct.pack("<HHI", tag, perm, i)
acl = struct.pack("<I", 2) + e(1, 6) + e(2, 4, os.getuid()) + e(4, 4) + e(0x10, 4) + e(0x20, 4)
try:
    os.setxattr(sys.argv[1], "system.posix_acl_access", acl); print("acl set")
except OSError as x:
    print("no acl:", x)' "$P/keepacl"
if [ "$out" = "acl set" ]; then
	settle; run "$NSRUN" -p "$P" $NS --report "$d/r9b.json" -- sh -c 'echo two >> keepacl'
	is "$(cat "$P/keepacl" | tr '\n' ' ')" "one two " "ACL: the content change is applied"
	run python3 -c 'import os, sys; print(" ".join(os.listxattr(sys.argv[1])))' "$P/keepacl"
	like "$out" "system\.posix_acl_access" "ACL: the host's own ACL stays"
else
	skip "ACL: the content change is applied" "cannot set an ACL here: $out"
	skip "ACL: the host's own ACL stays" "no ACL"
fi

# 10. A kept run committed later goes through the same filter.
fresh
mkdir "$P/dir"; chmod 0755 "$P/dir"
settle; run "$NSRUN" -p "$P" $NS --keep --report "$d/r10.json" -- sh -c '
	mkdir -p .git/modules/m && echo "[core] fsmonitor = x" > .git/modules/m/config; chmod 0777 dir; echo y > y'
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$d/r10.json")
run "$NSRUN" diff $NS "$id"
like "$out" "protected \.git/modules/m/config \(will not be applied" "kept: diff shows the dropped change"
like "$out" "mode dir 0755 -> 0777" "kept: diff shows the mode change"
like "$out" "protected dir \(mode 0777 requested, 0755 will be applied\)" "kept: diff shows the mode reduction"
run "$NSRUN" commit $NS "$id"
is "$rc" 0 "kept: nsrun commit RUN works"
check "kept: the module config does not reach the host" test ! -e "$P/.git/modules/m/config"
is "$(stat -c %a "$P/dir")" "755" "kept: the dir's mode is not widened"
check "kept: the other change is applied" test -f "$P/y"
like "$err" "protected: " "kept: commit says so on stderr"

# 11. --no-overlay: the changes are live, the protected ones are put back.
fresh
echo one > "$P/keepacl"
run python3 -c '
import os, struct, sys
e = lambda tag, perm, i=0xffffffff: struct.pack("<HHI", tag, perm, i)
acl = struct.pack("<I", 2) + e(1, 6) + e(2, 4, os.getuid()) + e(4, 4) + e(0x10, 4) + e(0x20, 4)
try:
    os.setxattr(sys.argv[1], "system.posix_acl_access", acl); print("acl set")
except OSError as x:
    print("no acl:", x)' "$P/keepacl"
acl=$out
settle; run "$NSRUN" -p "$P" $NS --no-overlay --report "$d/r11.json" -- sh -c '
	echo ../x > .git/commondir; mkdir sub && git -C sub init -q && echo evil > sub/.git/hooks/pre-commit;
	chmod 0666 a; echo z > z; echo two >> keepacl'
check "no-overlay: .git/commondir is put back" test ! -e "$P/.git/commondir"
check "no-overlay: a new repo's hook is removed" test ! -e "$P/sub/.git/hooks/pre-commit"
is "$(stat -c %a "$P/a")" "644" "no-overlay: the mode is reduced"
check "no-overlay: other changes stay" test -f "$P/z"
like "$(prot "$d/r11.json")" "^\.git/commondir dropped" "no-overlay: the report lists it"
if [ "$acl" = "acl set" ]; then
	run python3 -c 'import os, sys; print(" ".join(os.listxattr(sys.argv[1])))' "$P/keepacl"
	like "$out" "system\.posix_acl_access" "no-overlay: the host's own ACL stays on a modified file"
else
	skip "no-overlay: the host's own ACL stays on a modified file" "cannot set an ACL here: $acl"
fi

done_testing
