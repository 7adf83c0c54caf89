#!/bin/sh
# Every project-mode failure has a documented kind, in the report as
# {"error": {"kind", "message", "hint"}}: what an agent maps to its own
# modes (sandbox required, preferred, disabled). The report is written even
# when the command line or a profile did not parse.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null || skip_all "needs python3 to read the JSON"
d=$(scratch)
P=$d/proj
S=$d/state
mkdir -p "$P"
R=$NSR_HELPERS/nsr-restrict

# kind FILE: "outcome exit_code kind" of a report (exit_code is the
# command's: none ran), and whether message and
# hint are non-empty strings
kind() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
e = r.get("error") or {}
print(r.get("outcome"), r.get("exit_code"), e.get("kind"),
      "msg" if isinstance(e.get("message"), str) and e["message"] else "nomsg",
      "hint" if isinstance(e.get("hint"), str) and e["hint"] else "nohint")' "$1" 2>&1
}

rm -f "$d/r.json"
run "$NSRUN" -p "$d/missing" --state-dir "$S" --report "$d/r.json" -- true
is "$rc" 125 "a missing project exits 125"
is "$(kind "$d/r.json")" "failed None project-missing msg hint" "a missing project: kind project-missing"

printf 'timout 5\n' > "$d/bad.profile"
rm -f "$d/r.json"
run "$NSRUN" --profile "$d/bad.profile" -p "$P" --state-dir "$S" --report="$d/r.json" -- true
is "$rc" 125 "a bad profile exits 125"
is "$(kind "$d/r.json")" "failed None config-invalid msg hint" "a bad profile: kind config-invalid"
like "$(cat "$d/r.json")" 'bad.profile:1: unknown option' "its message names FILE:LINE"

run "$NSRUN" -p "$P" --state-dir "$S" --timeout abc --report-fd 3 -- true 3>"$d/r3.json"
is "$rc" 125 "a bad value exits 125"
is "$(kind "$d/r3.json")" "failed None usage msg hint" "a bad value on the command line: kind usage (--report-fd too)"

if [ -x "$R" ]; then
	rm -f "$d/r.json"
	run "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" --state-dir "$S" --report "$d/r.json" -- true
	is "$rc" 125 "refused user namespaces exit 125"
	is "$(kind "$d/r.json")" "failed None userns-refused msg hint" "refused user namespaces: kind userns-refused"
	like "$(cat "$d/r.json")" 'doctor' "its hint points to nsrun doctor"
else
	skip "refused user namespaces: kind userns-refused" "the nsr-restrict helper was not built"
	skip "its hint points to nsrun doctor" "the nsr-restrict helper was not built"
fi

# A session cannot have best-effort mode: the refusal says why (not
# "--keep needs the overlay": no --keep was given) and what works instead.
if [ -x "$R" ]; then
	run "$R" --deny-userns EPERM -- "$NSRUN" session start --sandbox=best-effort -p "$P" --state-dir "$S"
	is "$rc" 125 "session start in best-effort mode without user namespaces exits 125"
	like "$err" "sessions need the namespace sandbox with an overlay, and here user namespaces are refused" \
		"it says the real reason"
	like "$err" "one-shot run instead \\(nsrun --sandbox=best-effort" "it says what to do instead"
	unlike "$err" "--keep" "it does not blame a --keep nobody gave"
else
	for t in "exits 125" "the real reason" "what to do" "no --keep"; do
		skip "best-effort session: $t" "the nsr-restrict helper was not built"
	done
fi
run "$NSRUN" session start --no-overlay -p "$P" --state-dir "$S"
is "$rc:$err" "125:nsrun: sessions need the overlay, which --no-overlay turns off: start the session without it" \
	"a session with --no-overlay: the real reason"

# nsrun profile check checks what a run would check, and names FILE:LINE.
printf 'share-net\n# a comment\nallow-host example.org\n' > "$d/net.profile"
run sh -c "cd '$P' && '$NSRUN' profile check '$d/net.profile'"
is "$rc" 125 "profile check: options that exclude each other fail"
like "$err" "net.profile:3: --allow-host .*--share-net" "profile check: share-net with allow-host, at FILE:LINE"
printf 'share-net\nro-bind %s/nowhere /x\n' "$d" > "$d/src.profile"
run sh -c "cd '$P' && '$NSRUN' profile check '$d/src.profile'"
is "$rc" 125 "profile check: a missing bind source fails"
like "$err" "src.profile:2: Can't find source path $d/nowhere" "profile check: the missing source, at FILE:LINE"
printf 'share-net\nro-bind %s /x\n' "$P" > "$d/good.profile"
run sh -c "cd / && '$NSRUN' profile check '$d/good.profile'"
is "$rc:$out" "0:$d/good.profile: 2 option lines, ok" "profile check: a good profile passes (from / too)"

# The subcommands' --json output ends with the same error object on failure.
jkind() {
	printf '%s\n' "$1" | tail -1 | python3 -c 'import json, sys
e = json.load(sys.stdin)["error"]
print(e["kind"], "msg" if e["message"] else "nomsg")' 2>&1
}
run "$NSRUN" history --json --bogus
is "$rc:$(jkind "$out")" "125:usage msg" "history --json: a usage error as a JSON error object"
run "$NSRUN" session start --json -p "$d/missing" --state-dir "$S"
is "$rc:$(jkind "$out")" "125:project-missing msg" "session start --json: a missing project, by kind"
run "$NSRUN" profile show --json "$d/none.profile"
is "$rc:$(jkind "$out")" "125:config-invalid msg" "profile show --json: a profile that cannot be read, by kind"
if [ -x "$R" ]; then
	run "$R" --deny-userns EPERM -- "$NSRUN" session start --json -p "$P" --state-dir "$S"
	is "$rc:$(jkind "$out")" "125:userns-refused msg" "session start --json: refused user namespaces, by kind"
else
	skip "session start --json: refused user namespaces, by kind" "the nsr-restrict helper was not built"
fi
run "$NSRUN" history --json --state-dir "$S"
unlike "$out" '"error"' "a subcommand that works has no error object"

# A run that works has no error member.
rm -f "$d/r.json"
run "$NSRUN" -p "$P" --state-dir "$S" --report "$d/r.json" -- true
is "$rc" 0 "a good run"
is "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("error" in r, r["outcome"])' "$d/r.json")" \
	"False committed" "a good run's report has no error"
done_testing
