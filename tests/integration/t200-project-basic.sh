#!/bin/sh
# Project mode: the overlay, the change summary, the report, apply,
# --discard and --keep, cwd, exit statuses, bad projects.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
S=$d/state
mkdir -p "$P/sub" "$P/gone/deep"
echo keep > "$P/keep"; echo old > "$P/mod"; echo bye > "$P/del"; echo x > "$P/gone/deep/f"
NS="--state-dir $S"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

run "$NSRUN" -p "$P" $NS --report "$d/r.json" -- sh -c 'echo new > new; echo changed > mod; rm del; rm -r gone; mkdir -p made/inner; echo in > made/inner/f; pwd'
is "$rc" 0 "project mode runs the command"
is "$out" "$P" "the command starts in the project root"
like "$err" "^nsrun: $P: 4 created, 1 modified, 2 deleted; committed \(run [0-9A-Za-z.-]+\)$" "the summary line on stderr"
is "$(cat "$P/new"):$(cat "$P/mod"):$(cat "$P/made/inner/f")" "new:changed:in" "created and modified files are applied"
check "deleted files are gone" test ! -e "$P/del" -a ! -e "$P/gone"
is "$(cat "$P/keep")" "keep" "untouched files stay"
is "$(json "$d/r.json" 'd["version"], d["outcome"], d["exit_code"], d["signal"]')" "(1, 'committed', 0, None)" "report: version, outcome, exit_code, signal"
is "$(json "$d/r.json" 'sorted((c["path"], c["change"], c["type"]) for c in d["projects"][0]["changes"])')" \
   "[('del', 'deleted', 'file'), ('gone', 'deleted', 'dir'), ('made', 'created', 'dir'), ('made/inner', 'created', 'dir'), ('made/inner/f', 'created', 'file'), ('mod', 'modified', 'file'), ('new', 'created', 'file')]" \
   "report: every change with its kind and type"
is "$(json "$d/r.json" '[c["descendants"] for c in d["projects"][0]["changes"] if c["path"] == "gone"]')" "[2]" "report: a deleted dir is one entry with its descendants"
is "$(json "$d/r.json" '[c["mode"] for c in d["projects"][0]["changes"] if c["path"] == "new"][0]')" "0644" "report: mode as an octal string"
like "$(json "$d/r.json" 'd["started_at"]')" "^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$" "report: started_at in RFC 3339"
like "$(json "$d/r.json" 'd["layers"]')" "'userns', 'mountns', 'pidns', 'netns'.*'overlay', 'seccomp'" "report: the layers that applied"
is "$(json "$d/r.json" 'd["command"]')" "['sh', '-c', 'echo new > new; echo changed > mod; rm del; rm -r gone; mkdir -p made/inner; echo in > made/inner/f; pwd']" "report: the command"

run "$NSRUN" -p "$P" $NS --discard --report "$d/r2.json" -- sh -c 'echo d > discarded'
like "$err" "1 created; discarded" "--discard reports the change"
check "--discard applies nothing" test ! -e "$P/discarded"
is "$(json "$d/r2.json" 'd["outcome"]')" "discarded" "--discard: outcome discarded"

run "$NSRUN" -p "$P" $NS --keep -- sh -c 'echo k > kept'
like "$err" "run [0-9A-Za-z.-]+ kept" "--keep keeps the run and says so"
check "--keep applies nothing" test ! -e "$P/kept"

run "$NSRUN" -p "$P" $NS -- sh -c 'echo partial > partial; exit 3'
is "$rc" 3 "the command's exit status is nsrun's"
is "$(cat "$P/partial" 2>/dev/null)" "partial" "a failing command's changes still apply"
run "$NSRUN" -p "$P" $NS --report "$d/r3.json" -- sh -c 'echo s > sig; kill -TERM $$'
is "$rc" 143 "a command killed by a signal: 128+N"
is "$(json "$d/r3.json" 'd["exit_code"], d["signal"], d["outcome"]')" "(None, 'SIGTERM', 'committed')" "report: signal name, exit_code null; still applied"
is "$(cat "$P/sig" 2>/dev/null)" "s" "... and its changes applied"

mkdir -p "$d/elsewhere"
run sh -c "cd '$P/sub' && '$NSRUN' -p '$P' $NS -- pwd"
is "$out" "$P/sub" "the caller's cwd is kept when it is inside the project"
run sh -c "cd '$d/elsewhere' && '$NSRUN' -p '$P' $NS -- pwd"
is "$out" "$P" "otherwise the command starts in the project root"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo $NSRUN'
is "$out" "1" "NSRUN=1 inside"

run "$NSRUN" -p "$P" $NS -- /nonexistent/cmd
is "$rc" 127 "a command that is not found: 127"
like "$err" "execvp /nonexistent/cmd: No such file or directory" "... with a message"
run "$NSRUN" -p "$P" $NS -- /etc/passwd
is "$rc" 126 "a command that cannot be executed: 126"
run "$NSRUN" -p "$d/missing" $NS -- true
is "$rc:$err" "125:nsrun: project $d/missing: No such file or directory" "a missing project: 125"
run "$NSRUN" -p "$P/keep" $NS -- true
is "$rc:$err" "125:nsrun: project $P/keep: Not a directory" "a project that is a file"
run "$NSRUN" -p / $NS -- true
is "$rc:$err" "125:nsrun: project / is the whole host; name a directory" "the project /"
run "$NSRUN" -p "$P" -p "$P/sub" $NS -- true
is "$rc:$err" "125:nsrun: projects $P and $P/sub overlap: one is inside the other" "nested projects"
run "$NSRUN" -p "$P" --state-dir "$P/.state" -- true
like "$rc:$err" "^125:nsrun: the state dir $P/.state is inside the project $P, .*--state-dir" "a state dir inside the project"
check "... and nothing was created" test ! -e "$P/.state"
run "$NSRUN" --keep -- true
is "$rc:$err" "125:nsrun: --keep only works in project mode (--project DIR)" "project options need --project (a usage error: 125)"
run "$NSRUN" -p "$P" $NS --keep --discard -- true
is "$rc:$err" "125:nsrun: --keep and --discard cannot be combined" "--keep and --discard conflict"

# Two projects, each at its own path.
Q=$d/other; mkdir -p "$Q"
run "$NSRUN" -p "$P" -p "$Q" $NS -- sh -c "echo 1 > '$P/two1'; echo 2 > '$Q/two2'"
is "$(cat "$P/two1"):$(cat "$Q/two2")" "1:2" "two projects both apply"
is "$(echo "$err" | grep -c ': 1 created; committed')" "2" "one summary line per project"

# --trace-bwrap shows the expanded profile and creates nothing.
run "$NSRUN" -p "$P" $NS --trace-bwrap -- make
like "$out" "^bwrap .*--ro-bind / / .*--overlay-src $P --overlay $S/runs/[^ ]+/p0/upper $S/runs/[^ ]+/p0/work $P .*-- make" "--trace-bwrap shows the project overlay"
like "$out" "# nsrun-only: after the command" "--trace-bwrap names the nsrun-only steps"
is "$(ls "$S/runs" | wc -l)" "$(ls "$S/runs" | wc -l)" "sanity"
before=$(ls "$S/runs" | wc -l)
"$NSRUN" -p "$P" $NS --trace-bwrap -- make >/dev/null
is "$(ls "$S/runs" | wc -l)" "$before" "--trace-bwrap creates no run"
rm -rf "$d"
done_testing
