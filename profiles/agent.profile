# agent: project mode's defaults, written out (nsrun-profile(5)).
#
# Every project-mode run already does all of this; the file is here to be
# read and copied: "nsrun profile show agent", then start your own from it
# in ~/.config/nsrun/profiles/NAME.profile. Applied with --profile agent,
# it sets the lines below back to these defaults, over what a config file
# said (a site enforces with "forbid", not with defaults).
#
# Built in, not options (see nsrun(1), PROJECT MODE):
#   the host read-only (/ bound read-only); a fresh /dev, /proc, /tmp and
#   /var/tmp; /run an empty read-only tmpfs with a private $XDG_RUNTIME_DIR;
#   the paths in hide.list hidden; variables matching env-deny.list dropped;
#   .git/hooks, .git/config and .nsrun read-only, and changes to them
#   dropped at apply; every namespace unshared, the network included; all
#   capabilities dropped; the "default" seccomp policy.

# The home: visible, writes go to a throwaway layer.
home overlay
# The namespace sandbox or nothing (exit 125).
sandbox required
# Retention of runs and backups in the state dir.
keep-days 7
backup-limit 2G
# A best-effort or --no-overlay run refuses to snapshot more than this.
snapshot-limit 1G

# Examples of what one adds (uncomment in a copy):
# hide ~/.config/some-tool/token.json
# ro ~/.gitconfig
# keep-env TERM_PROGRAM_TOKEN
# share-net
