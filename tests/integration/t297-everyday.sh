#!/bin/sh
# Everyday use: help, version, typos, usage lines, exit statuses, relative
# paths in path options.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj; mkdir -p "$P"
NS="--state-dir $d/state"

run "$NSRUN" -h
like "$rc:$out" "^0:usage: " "-h shows the help"
run "$NSRUN" -V
like "$rc:$out" "^0:nsrun [0-9]" "-V shows the version"
run "$NSRUN" version
like "$rc:$out" "^0:nsrun [0-9]" "nsrun version too"
run "$NSRUN" help
like "$rc:$out" "^0:usage: " "nsrun help shows the help"
run "$NSRUN" help history
like "$rc:$out" "^0:usage: nsrun history" "nsrun help SUBCOMMAND shows the subcommand's help"
run "$NSRUN" histroy
is "$rc:$err" "125:nsrun: unknown command \"histroy\"; did you mean \"history\"? (\"nsrun help\" lists them)" "a typo of a subcommand gets a suggestion, not execvp"
run "$NSRUN" no-such-subcommand-or-program
like "$rc:$err" "^125:nsrun: unknown command \"no-such-subcommand-or-program\"" "an unknown word is an unknown command"
run "$NSRUN" -p "$P" $NS
is "$rc:$(printf '%s\n' "$err" | wc -l)" "125:1" "-p DIR with no command: one line of usage, exit 125"
like "$err" "^usage: .*-p DIR .*COMMAND" "... which is the usage"
run "$NSRUN" -p "$P" $NS --no-such-option -- true
is "$rc" "125" "an unknown option in project mode exits 125"
run "$NSRUN" -p "$P" $NS --home bogus -- true
is "$rc" "125" "a bad option value in project mode exits 125"

# Relative paths in --hide, --ro and --rw are relative to the current dir.
mkdir -p "$d/lib" "$P/sub"; echo secret > "$P/.env"; echo lib > "$d/lib/l"
run sh -c "cd '$P' && '$NSRUN' -p . $NS --hide .env --ro ../lib -- sh -c 'cat .env; cat ../lib/l; echo x > ../lib/w 2>/dev/null || echo ro'"
is "$rc:$out" "0:lib
ro" "--hide .env and --ro ../lib work relative to the current dir"
# It failed twice under a loaded CI run (exit 125, no output) and never by
# hand: say why, should it again.
[ "$rc" = 0 ] || diag "stderr: $err"

# When the sandbox cannot be built, --report still gets a JSON document.
"$NSR_HELPERS/nsr-restrict" --max-userns 0 -- "$NSRUN" -p "$P" $NS --report "$d/fail.json" -- true 2>/dev/null
rc=$?
is "$rc" "125" "no user namespaces, --sandbox=required: 125"
run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["projects"][0]; print(d["outcome"], p["outcome"], "namespace" in p["errors"][0])' "$d/fail.json"
is "$out" "failed failed True" "... and the --report file is a JSON document with the error"
run "$NSRUN" -p "$P" $NS --report "$d/nf.json" -- /nonexistent/cmd
run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["outcome"], d["projects"][0]["errors"][0])' "$d/nf.json"
is "$out" "failed execvp /nonexistent/cmd: No such file or directory" "a command not found: the report says so too"

# nsrun diff with no RUN: the latest run of the project at the current dir.
D=$d/diffp; mkdir -p "$D/sub"; echo old > "$D/f"
"$NSRUN" -p "$D" $NS --keep -- sh -c 'echo new > f' 2>/dev/null
run sh -c "cd '$D/sub' && '$NSRUN' diff $NS"
like "$rc $(printf "%s" "$out" | tr "\n" " ")" "^0 .*[+]new" "nsrun diff without RUN, inside the project: the latest run's diff"
run sh -c "cd '$d' && '$NSRUN' diff $NS -p '$D'"
like "$rc $(printf "%s" "$out" | tr "\n" " ")" "^0 .*[+]new" "... and with -p DIR"
run sh -c "cd / && '$NSRUN' diff $NS"
like "$rc:$err" "^1:nsrun: diff: no run of a project at /" "... and outside any project, says so"
# history --limit N
for i in 1 2 3; do "$NSRUN" -p "$D" $NS -- true 2>/dev/null; done
run "$NSRUN" history $NS -p "$D" --limit 2
is "$rc:$(printf '%s\n' "$out" | grep -c .)" "0:2" "history --limit 2 lists the two newest runs"
run "$NSRUN" history $NS -p "$D" --limit 0
like "$rc:$err" "^125:.*--limit takes a number of runs" "... and refuses --limit 0"

# A nested run without --allow-nested: the message says why, and no sysctl.
N=$d/nested; mkdir -p "$N"
run "$NSRUN" -p "$N" $NS --ro "$NSR_STAGE" -- "$NSRUN" -p "$N" --state-dir /tmp/nsr-inner -- true
like "$err" "nested sandbox failed .*--allow-nested" "a nested run names --allow-nested as the reason"
unlike "$err" "sysctl|unprivileged_userns_clone|/proc/sys" "... and no sysctl or internal path"

# A command that meets no network hears why, and how to allow it.
run "$NSRUN" -p "$P" $NS -- python3 -c 'import socket
try: socket.create_connection(("192.0.2.1", 80), 2)
except OSError as e: print(e.errno)'
is "$out" "101" "inside, a connect fails with ENETUNREACH"
like "$err" "tried to reach the network \(1 connection found no route: ENETUNREACH\).*--share-net" "... and the summary says the network was off and how to allow it"
run "$NSRUN" -p "$P" $NS -- true
unlike "$err" "reach the network" "... a command that does not try hears nothing"

# nsrun diff of a committed run shows what it applied.
A=$d/applied; mkdir -p "$A"; echo before > "$A/m"; echo gone > "$A/g"
run "$NSRUN" -p "$A" $NS -- sh -c 'echo after > m; rm g; echo fresh > c'
run sh -c "cd '$A' && '$NSRUN' diff $NS"
flat=$(printf '%s' "$out" | tr '\n' ' ')
like "$rc $flat" "^0 # .*what it applied.*-before.*[+]after" "nsrun diff of a committed run shows the applied modification"
like "$flat" "[+]fresh" "... the created file"
like "$flat" "-gone" "... and the deleted one"
done_testing
