#!/bin/sh
# issue 23.6: every file of the protect.list survey (docs/protected-files.md)
# that a project run writes stays off the host and is listed as protected.
# Each entry is written twice, where the list says it is read: at the root
# (over a file the host has: the host's content must stay) and, for an
# entry read at any depth, in a subdirectory (a new file: it must not
# appear). Files next to them, and root-only entries deeper down, reach
# the host. The table is the test's own, not read from protect.list.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null || skip_all "needs python3"
umask 022
d=$(scratch)
P=$d/p
mkdir -p "$P"
unset XDG_CONFIG_HOME

# "any PATH": read at any depth; "root PATH": at the project root only.
entries='
any .husky/pre-commit
any .husky/_/h
any .githooks/pre-push
any lefthook.yml
any lefthook.yaml
any lefthook.toml
any lefthook.json
any .lefthook.yml
any .lefthook.yaml
any lefthook-local.yml
any .lefthook-local.yml
any .config/lefthook.yml
any .config/lefthook-local.yml
any .lefthook/pre-commit/run.sh
any .lefthook-local/pre-commit/run.sh
any .pre-commit-config.yaml
any .pre-commit-config.yml
any .pre-commit-hooks.yaml
any .overcommit.yml
any .git-hooks/pre_commit/x.rb
any .simple-git-hooks.json
any .simple-git-hooks.cjs
any simple-git-hooks.js
any captainhook.json
any .lintstagedrc
any .lintstagedrc.json
any lint-staged.config.mjs
any .vscode/tasks.json
any .vscode/settings.json
any .vscode/launch.json
any .vscode/mcp.json
any .vscode/extensions.json
any app.code-workspace
any .idea/workspace.xml
any .idea/watcherTasks.xml
any .idea/runConfigurations/x.xml
any .idea/misc.xml
any app.iml
any app.ipr
any app.iws
any .run/x.run.xml
any .fleet/run.json
any .zed/settings.json
any .zed/tasks.json
any .helix/languages.toml
any .exrc
any .vimrc
any _vimrc
any .gvimrc
any .nvimrc
any .nvim.lua
any .lvimrc
any .vim/coc-settings.json
any .dir-locals.el
any .dir-locals-2.el
any app.sublime-project
any .externalToolBuilders/b.launch
any .project
any nbproject/project.properties
any .devcontainer/devcontainer.json
any .devcontainer/other/devcontainer.json
any .devcontainer.json
any .envrc
any .envrc.local
any .envrc.private
any .env
any .env.local
any .env.development.local
any .direnv/python-3.12/bin/python
any .direnv/flake-profile-a.rc
any flake.nix
any flake.lock
any shell.nix
root default.nix
any devenv.nix
any devenv.yaml
any devenv.lock
any devbox.json
any mise.toml
any .mise.toml
any mise.local.toml
any .mise.local.toml
any mise.dev.toml
any .mise.dev.toml
any mise/config.toml
any mise/config.local.toml
any .mise/config.toml
any .config/mise.toml
any .config/mise/config.toml
any .config/mise/conf.d/x.toml
any .rtx.toml
any .rtx.local.toml
any .tool-versions
any .nvmrc
any .node-version
any .python-version
any .ruby-version
any .go-version
any .java-version
any .terraform-version
any .perl-version
any .php-version
any .sdkmanrc
any rust-toolchain
any rust-toolchain.toml
any .cargo/config
any .cargo/config.toml
any gradle/wrapper/gradle-wrapper.properties
any gradle/wrapper/gradle-wrapper.jar
any .mvn/wrapper/maven-wrapper.properties
any .mvn/jvm.config
any .mvn/extensions.xml
any .npmrc
any .yarnrc
any .yarnrc.yml
any .pnpmfile.cjs
any bunfig.toml
any .claude/settings.json
any .claude/settings.local.json
any .claude/commands/x.md
any .mcp.json
any CLAUDE.md
any CLAUDE.local.md
any .cursor/mcp.json
any .cursor/hooks.json
any .cursorrules
any .gemini/settings.json
any GEMINI.md
any .qwen/settings.json
any QWEN.md
any .codex/config.toml
any AGENTS.md
any AGENTS.override.md
any .aider.conf.yml
any .aider.conf.yaml
any .aider.model.settings.yml
any .aider.model.metadata.json
any .continue/config.yaml
any .continue/mcpServers/x.yaml
any .continuerc.json
any .windsurf/rules/x.md
any .windsurfrules
any .clinerules
any .cline/mcp.json
any .roo/mcp.json
any .roomodes
any .roorules
any .kilocode/mcp.json
any .kiro/hooks/x.kiro.hook
any .amazonq/mcp.json
any .junie/guidelines.md
any .augment/rules/x.md
any .augment-guidelines
any .trae/rules/x.md
any .goosehints
any .aiassistant/rules/x.md
any opencode.json
any opencode.jsonc
any .opencode/plugin/x.js
any crush.json
any .crush.json
any CRUSH.md
any WARP.md
any AGENT.md
any .openhands/setup.sh
any .factory/settings.json
root .rules
root .github/copilot-instructions.md
root .github/instructions/x.instructions.md
root .github/prompts/x.prompt.md
root .github/chatmodes/x.chatmode.md
root .github/agents/x.md
root .github/copilot/x.json
any Guardfile
any Tiltfile
any tilt_config.json
any modd.conf
any skaffold.yaml
any devspace.yaml
any .air.toml
any nodemon.json
any reflex.conf
any bacon.toml
'
# Files beside them that are the project's content and reach the host,
# and root-only entries below the root.
plain='
src/main.c
package.json
lefthook
.environment
.env.example
envrc
.vscode-notes
docs/AGENTS.txt
my.claude.md
sub/default.nix
sub/.rules
sub/.github/copilot-instructions.md
'
SUB=pkg/app
paths=
IFS='
'
for line in $entries; do
	where=${line%% *} f=${line#* }
	mkdir -p "$P/$(dirname "$f")"
	echo host > "$P/$f"
	paths="$paths$f
"
	[ "$where" = any ] && paths="$paths$SUB/$f
"
done
unset IFS
printf '%s' "$paths" > "$d/paths"
printf '%s\n' $plain > "$d/plain"

# One run writes every entry and every plain file (the list on its stdin);
# its report lists what was protected.
{ cat "$d/paths"; echo "-- plain"; cat "$d/plain"; } > "$d/list"
run "$NSRUN" -p "$P" --state-dir "$d/state" --report "$d/r.json" -- sh -c '
	c=sandbox
	while IFS= read -r f; do
		[ "$f" = "-- plain" ] && { c=new; continue; }
		[ -n "$f" ] || continue
		mkdir -p "$(dirname "$f")" && echo $c > "$f" || echo "cannot write $f"
	done' < "$d/list"
is "$rc" 0 "the run writes every entry"
[ "$rc" = 0 ] || diag "$err"
is "$out" "" "every entry is writable inside"
python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["projects"][0]["protected"]:
    print(e["path"])' "$d/r.json" > "$d/protected" 2>/dev/null

IFS='
'
for line in $entries; do
	where=${line%% *} f=${line#* }
	is "$(cat "$P/$f")" host "$where: $f keeps the host's content"
	if grep -Fxq -- "$f" "$d/protected"; then ok "$where: $f is listed as protected"; else
		not_ok "$where: $f is listed as protected"; fi
	[ "$where" = any ] || continue
	check "$where: $SUB/$f does not reach the host" test ! -e "$P/$SUB/$f"
	if grep -Fxq -- "$SUB/$f" "$d/protected"; then ok "$where: $SUB/$f is listed as protected"; else
		not_ok "$where: $SUB/$f is listed as protected"; fi
done
for f in $plain; do
	is "$(cat "$P/$f" 2>/dev/null)" new "not protected: $f reaches the host"
done
unset IFS

rm -rf "$d"
done_testing
