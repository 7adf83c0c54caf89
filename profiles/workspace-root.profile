# workspace-root: the project is / (nsrun-profile(5)).
#
# For services that expect the workspace to be the root of the file system:
# the one project is mounted as /, with the host's /usr, /etc and libraries
# (and the /bin, /sbin, /lib* symlinks of a merged-/usr host) read-only
# beneath it, a fresh /dev, /proc, /tmp and /run, and nothing else of the
# host: no home (HOME is /tmp), no /var, no /srv. Writes anywhere else under /
# are the project's changes, reported and applied as usual; the mount points
# live in a layer of their own and never show up as changes.
#
#   nsrun --profile workspace-root -p ~/src/service -- ./serve
workspace-root
