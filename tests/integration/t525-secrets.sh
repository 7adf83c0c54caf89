#!/bin/sh
# issue 12.8: credential stores the deny lists used to miss are hidden, and
# environment variables with secrets in their names or URL credentials in
# their values are dropped; PWD and OLDPWD stay.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
H=$d/home
P=$d/p
mkdir -p "$P" "$H"
HOME=$H; export HOME
unset XDG_CONFIG_HOME HF_HOME

# One secret per store, each holding the word "leak".
for f in .config/git/credentials .m2/settings.xml .gradle/gradle.properties .cache/huggingface/token \
	.huggingface/token .codex/auth.json .gemini/oauth_creds.json .config/sops/age/keys.txt .config/op/config \
	.kaggle/kaggle.json .mylogin.cnf .config/pypoetry/auth.toml .yarnrc.yml .config/glab-cli/config.yml \
	.bundle/config .config/composer/auth.json .nuget/NuGet/NuGet.Config .config/doctl/config.yaml \
	.pulumi/credentials.json .config/helm/registry/config.json ".config/Bitwarden CLI/data.json" \
	.config/configstore/firebase-tools.json .sentryclirc .pg_service.conf; do
	mkdir -p "$H/$(dirname "$f")"
	echo "leak $f" > "$H/$f"
done
mkdir -p "$H/.cache/git/credential"; echo leak > "$H/.cache/git/credential/socket"
run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c 'cd ~ && find . -type f -exec cat {} + 2>/dev/null'
is "$rc" 0 "a run reads every file in the home it can"
is "$(echo "$out" | grep leak)" "" "no credential store's content is readable"

# The same store named with --ro is shown: the list is a default.
run "$NSRUN" -p "$P" --state-dir "$d/state" --ro "$H/.m2/settings.xml" -- cat "$H/.m2/settings.xml"
is "$out" "leak .m2/settings.xml" "--ro shows a hidden store again"

# The environment.
run env PWD=/pwd/kept OLDPWD=/old/kept MYSQL_PWD=leak PGPASSFILE=leak SENTRY_DSN=leak OP_SESSION_me=leak \
	BW_SESSION=leak LDAP_PASS=leak PIP_INDEX_URL=https://me:leak@pkgs.example/simple \
	MIRRORS="https://a.example https://u:leak@b.example" PLAIN_URL=https://pkgs.example/simple \
	SSH_URL=ssh://git@example.com/r HARMLESS=ok \
	"$NSRUN" -p "$P" --state-dir "$d/state" -- env
is "$(echo "$out" | grep leak)" "" "variables named like secrets or carrying URL credentials are dropped"
like "$out" "^PWD=$P$" "PWD stays (the sandbox's cwd, as bwrap sets it)"
like "$out" '^OLDPWD=/old/kept$' "OLDPWD stays"
like "$out" '^PLAIN_URL=https://pkgs.example/simple$' "a URL without credentials stays"
like "$out" '^SSH_URL=ssh://git@example.com/r$' "... and one with only a user name"
like "$out" '^HARMLESS=ok$' "other variables stay"
run env PIP_INDEX_URL=https://me:leak@pkgs.example/simple "$NSRUN" -p "$P" --state-dir "$d/state" \
	--keep-env PIP_INDEX_URL -- printenv PIP_INDEX_URL
is "$out" "https://me:leak@pkgs.example/simple" "--keep-env keeps one anyway"

rm -rf "$d"
done_testing
