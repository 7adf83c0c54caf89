#!/usr/bin/python3
"""Generate small seccomp BPF programs for the parity harness.

usage: gen-seccomp.py NAME OUTFILE

Writes the raw BPF program (an array of struct sock_filter, native
endianness, the format --seccomp / --add-seccomp-fd read) to OUTFILE.
Filters (all default-allow, so the launcher can still execve the probe):

  uname-eperm        uname(2) fails with EPERM
  sethostname-eperm  sethostname(2) fails with EPERM
  unshare-enosys     unshare(2) fails with ENOSYS
  allow              no rule at all (still counts as one loaded filter)

Uses Debian's python3-seccomp (libseccomp bindings); run it with
/usr/bin/python3 so that a pyenv/venv python without the module is not
picked up.
"""
import errno
import sys

import seccomp

FILTERS = {
    "uname-eperm": [("uname", errno.EPERM)],
    "sethostname-eperm": [("sethostname", errno.EPERM)],
    "unshare-enosys": [("unshare", errno.ENOSYS)],
    "allow": [],
}


def main(argv):
    if len(argv) != 3 or argv[1] not in FILTERS:
        sys.stderr.write("usage: gen-seccomp.py {%s} OUTFILE\n"
                         % "|".join(sorted(FILTERS)))
        return 2
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name, err in FILTERS[argv[1]]:
        f.add_rule(seccomp.ERRNO(err), name)
    with open(argv[2], "wb") as out:
        f.export_bpf(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
