#!/bin/sh
# Project mode: the change set through the real binary. Classification,
# odd names (newlines, bytes that are not UTF-8), files chmodded to 000,
# a 100k-file project, a 3000-file run, and the EOVERFLOW explanation.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
changes() { python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for c in sorted(d["projects"][0]["changes"], key=lambda c: c["path"]):
    print(c["path"], c["change"], c["type"], c.get("target", ""))' "$1"; }

P=$d/cls; mkdir -p "$P/dir" "$P/gone"
echo same > "$P/rw"; echo t > "$P/touched"; echo m > "$P/mode"; echo f > "$P/f2d"; ln -s old "$P/link"
echo x > "$P/gone/a"; echo keep > "$P/dir/k"
sleep 0.05
run "$NSRUN" -p "$P" $NS --report "$d/c.json" -- sh -c '
	exec 3<>rw; exec 3>&-;                 # opened read-write, nothing written
	touch touched; chmod 600 mode;
	rm f2d; mkdir f2d; ln -sfn new link;
	rm -r gone; touch dir;                 # a dir whose only change is its mtime
	echo secret > locked; chmod 000 locked'
is "$rc" 0 "the command ran"
is "$(changes "$d/c.json")" "f2d type_changed dir 
gone deleted dir 
link modified symlink new
locked created file 
mode metadata_changed file 
touched metadata_changed file " "each path is classified; copy-ups that changed nothing and a dir's mtime are not reported"
is "$(stat -c %a "$P/locked")" "0" "a file chmodded to 000 inside is captured and applied with its mode"
chmod 600 "$P/locked"; is "$(cat "$P/locked")" "secret" "... with its contents"
is "$(readlink "$P/link")" "new" "a retargeted symlink is applied"

# Names with a newline and with bytes that are not UTF-8.
P=$d/names; mkdir -p "$P"
run "$NSRUN" -p "$P" $NS --report "$d/n.json" -v -- sh -c 'printf x > "$(printf "new\nline")"; printf y > "$(printf "bad\377name")"'
is "$(python3 -c '
import json, sys, base64
d = json.load(open(sys.argv[1]))
for c in sorted(d["projects"][0]["changes"], key=lambda c: c["path"]):
    print(ascii(c["path"]), ascii(base64.b64decode(c["path_b64"])) if "path_b64" in c else "-")' "$d/n.json")" \
"'bad\\ufffdname' b'bad\\xffname'
'new\\nline' -" "report: a non-UTF-8 name gets U+FFFD and the exact bytes in path_b64; a newline is escaped"
check "both odd names are applied" test -e "$P/$(printf 'new\nline')" -a -e "$P/$(printf 'bad\377name')"
like "$err" 'created +bad\\xffname' "--verbose lists the changes with odd bytes escaped"

# A 100k-file project: the scan costs what changed, not what is there.
P=$d/big; mkdir -p "$P"
# hard links make 100k entries quickly (one seed per dir: ext4 allows
# 65000 links to one inode)
python3 -c "
import os, sys
for d in range(100):
    dd = os.path.join(sys.argv[1], str(d))
    os.mkdir(dd)
    open(os.path.join(dd, '0'), 'w').close()
    for f in range(1, 1000):
        os.link(os.path.join(dd, '0'), os.path.join(dd, str(f)))
" "$P"
run "$NSRUN" -p "$P" $NS --report "$d/b.json" -- sh -c 'echo changed > 5/5; rm 7/7; echo n > 9/new'
is "$(changes "$d/b.json" | tr '\n' ';')" "5/5 modified file ;7/7 deleted file ;9/new created file ;" "a 100k-file project: exactly the three changes"

# A run that creates 3000 files.
P=$d/many; mkdir -p "$P"
run "$NSRUN" -p "$P" $NS --report "$d/m.json" -- sh -c 'mkdir out; i=0; while [ $i -lt 3000 ]; do echo $i > out/f$i; i=$((i+1)); done'
is "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["projects"][0]["changes"]))' "$d/m.json")" "3001" "a 3000-file run: every file reported"
is "$(ls "$P/out" | wc -l)" "3000" "... and applied"

# Files of other owners cannot be copied up inside a user namespace: nsrun
# copies those the user may write beforehand (t800); the others stay
# unchangeable. Only root can make such a file, so the root run sets it up
# and runs nsrun as "nobody".
if is_root; then
	P=$d/foreign; mkdir -p "$P" "$d/nstate"
	echo data > "$P/rootfile"; chmod 666 "$P/rootfile"
	echo ro > "$P/readonly"; chmod 644 "$P/readonly"
	chown nobody "$P" "$d/nstate"
	run setpriv --reuid=nobody --regid=nogroup --clear-groups env NSRUN_DATADIR="$NSRUN_DATADIR" HOME=/nonexistent \
		"$NSRUN" -p "$P" --state-dir "$d/nstate" -- sh -c 'echo x >> rootfile; mv readonly moved'
	is "$(cat "$P/rootfile" | tr '\n' ' '):$(stat -c %u "$P/rootfile")" "data x :0" \
		"a root-owned file of mode 666 is written, and stays root's"
	like "$err" "Value too large for defined data type" "a root-owned file nobody may write: moving it sees EOVERFLOW"
	like "$err" "readonly .owned by uid 0. and maybe more are not yours" "... and nsrun explains why"
else
	skip "EOVERFLOW explanation" "only root can make a root-owned file in a project (the root run covers it)"
fi
rm -rf "$d"
done_testing
