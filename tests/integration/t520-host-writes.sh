#!/bin/sh
# issue 12.1: files nsrun writes on the host (the --report file, seccomp
# compile -o) are opened before the command runs and written as a new file
# renamed into place: a symlink the command leaves at the name, or a
# directory it swaps for a symlink, never redirects the write.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
isjson() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }

# The command plants report.json -> a dotfile; the commit applies the link.
# Every dir exists well before the runs: a dir made in the run's first
# clock tick would count as changed on the host during the run.
mkdir -p "$d/p1" "$d/home" "$d/p2/out" "$d/p3/out" "$d/elsewhere"
sleep 0.05
P=$d/p1
echo 'orig rc' > "$d/home/.bashrc"; echo 'orig in-project' > "$P/rc"
run "$NSRUN" -p "$P" $NS --report "$P/report.json" -- sh -c "ln -s '$d/home/.bashrc' report.json"
is "$rc" 0 "a run that plants a symlink at the report's name succeeds"
is "$(cat "$d/home/.bashrc")" "orig rc" "the symlink's target outside the project is untouched"
check "the report is a regular file now, not the planted link" test -f "$P/report.json" -a ! -L "$P/report.json"
check "... holding the JSON report" isjson "$P/report.json"

run "$NSRUN" -p "$P" $NS --report "$P/r2.json" -- sh -c 'ln -s rc r2.json'
is "$(cat "$P/rc")" "orig in-project" "a link to a file inside the project is not written through either"
check "... the report replaced the link" test -f "$P/r2.json" -a ! -L "$P/r2.json"

# A symlink at the name before the run (an earlier run left it): refused
# before the command starts.
ln -s "$d/home/.bashrc" "$P/old.json"
run "$NSRUN" -p "$P" $NS --report "$P/old.json" -- sh -c 'touch ran'
is "$rc" 125 "a report name that is already a symlink is refused"
like "$err" 'old.json.*symbolic link' "... saying why"
check "... before the command runs" test ! -e "$P/ran"
is "$(cat "$d/home/.bashrc")" "orig rc" "... and its target is untouched"

# The report's directory swapped for a symlink to another directory.
P=$d/p2
run "$NSRUN" -p "$P" $NS --report "$P/out/r.json" -- sh -c "rm -r out && ln -s '$d/elsewhere' out"
check "nothing is written into the directory the swapped-in link points to" test ! -e "$d/elsewhere/r.json"
is "$rc" 125 "the report cannot be written where asked: nsrun's failure"
like "$err" 'directory was replaced' "... saying why"

# The report's directory made anew (no symlink on the way): written there.
P=$d/p3
run "$NSRUN" -p "$P" $NS --report "$P/out/r.json" -- sh -c 'rm -r out && mkdir out && echo x > out/y'
is "$rc" 0 "a report dir the command made anew is fine"
check "... and gets the report" isjson "$P/out/r.json"

# A pipe still works (opened before the run), and /dev/stdout too.
run sh -c "\"$NSRUN\" -p \"$d/p1\" $NS --report /dev/stdout -- true | cat"
like "$out" '"projects"' "--report /dev/stdout writes the report to the pipe"

# seccomp compile -o through a planted symlink.
ln -s "$d/home/.bashrc" "$d/out.bpf"
run "$NSRUN" seccomp compile default -o "$d/out.bpf"
is "$rc" 1 "seccomp compile -o refuses a symlink"
is "$(cat "$d/home/.bashrc")" "orig rc" "... and writes nothing through it"
run "$NSRUN" seccomp compile default -o "$d/new.bpf"
check "seccomp compile -o still writes a new file" test -s "$d/new.bpf" -a ! -L "$d/new.bpf"

rm -rf "$d"
done_testing
