# strict: for code you do not trust at all (nsrun-profile(5)).
#
# On top of project mode's defaults (see the agent profile): the home is an
# empty tmpfs (only the projects show through), the strict seccomp policy is
# stacked on the default one, no network (the default policy already refuses nested sandboxes), nothing of
# the host shared beyond the read-only system dirs.
home hide
seccomp-policy strict
unshare-net
# Nothing a profile could add that shares more: no share-net, no rw, no
# allow-nested. A user's own --share-net or --rw on the command line still
# wins; a site forbids them in /etc/nsrun/config ("forbid share-net").
