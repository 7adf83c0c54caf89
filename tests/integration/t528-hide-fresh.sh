#!/bin/sh
# issue 28: the hidden paths are looked up anew at each run, and a dir that
# many of hide.list's paths share is listed once instead of one lookup per
# path. A secret made after a run (in a dir listed then, in a dir missing
# then, below a dir the listing lacked) is hidden by the next run, and so is
# a path added to hide.list between two runs; files beside them stay
# readable.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
own_home_and_data "$d"
P=$d/p
mkdir -p "$P" "$H/.config" "$H/.cache"
echo fine > "$H/.config/unrelated"
echo fine > "$H/.beside"

# Each named file, or "-" when it cannot be read.
show='for f in "$@"; do cat "$f" 2>/dev/null || echo -; done'
files="$H/.netrc $H/.config/gh/hosts.yml $H/.aws/credentials $H/.local/share/keyrings/login.keyring
$H/.config/gcloud/credentials.db $H/my-own-secret $H/.config/unrelated $H/.beside"

run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c "$show" sh $files
is "$rc" 0 "a first run, with none of the secrets there"
is "$(echo "$out" | tr '\n' ' ')" "- - - - - - fine fine " "... reads what is there"

# Made since: in the home (listed), below .config (there, without gh), below
# dirs that were missing (.aws, .local, .config/gcloud).
for f in .netrc .config/gh/hosts.yml .aws/credentials .local/share/keyrings/login.keyring \
	.config/gcloud/credentials.db my-own-secret; do
	mkdir -p "$H/$(dirname "$f")"
	echo "leak $f" > "$H/$f"
done
run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c "$show" sh $files
is "$rc" 0 "the next run"
is "$(echo "$out" | grep leak | grep -v my-own-secret)" "" "every secret made since the last run is hidden"
is "$(echo "$out" | grep -c fine)" 2 "... and the files beside them are readable"
like "$out" "leak my-own-secret" "a file hide.list does not name is readable"

# A path added to hide.list counts from the next run on.
echo '~/my-own-secret' >> "$data/profiles/hide.list"
run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c "$show" sh $files
is "$(echo "$out" | grep leak)" "" "a path added to hide.list is hidden by the next run"
is "$(echo "$out" | grep -c fine)" 2 "... and nothing else is"

rm -rf "$d"
done_testing
