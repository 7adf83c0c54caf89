/*
 * probe.c - describe the sandbox this program runs in.
 *
 * Part of the nsrun differential parity harness (tests/parity/run).  The
 * harness runs the very same command line under the reference bwrap and
 * under nsrun, with this program as the sandboxed command, and diffs the
 * two outputs.  The output must therefore be:
 *
 *   - deterministic: nothing that changes from one run to the next (mount
 *     ids, device numbers, inode numbers, host pids, timestamps, random
 *     temp-file names) may be printed;
 *   - line oriented: one fact per line, "section.key: value", so that a
 *     unified diff points straight at the difference;
 *   - self-contained: statically linked if possible, no dependency on
 *     anything inside the sandbox except what it reports on.
 *
 * Usage:
 *   probe --exec-as ARGV0 PROGRAM [ARGS...]
 *       helper mode for the harness: execv(PROGRAM) with argv[0] set to
 *       ARGV0 (the launchers are run as "bwrap", like a PATH lookup would).
 *   probe [--host-uid N] [--host-gid N] [--ns SPEC] [--only LIST]
 *         [--exit N] [--kill SIG] [--] [PATH...]
 *
 *   --host-uid/--host-gid  the caller's real uid/gid on the host; used to
 *                          replace the outer id column of uid_map/gid_map
 *                          by HOSTUID/HOSTGID.  Fallback: env PROBE_HOST_UID
 *                          and PROBE_HOST_GID (argv wins: --clearenv would
 *                          remove the env vars).
 *   --ns SPEC              the caller's namespace inodes, "mnt=4026531841,
 *                          net=...". Fallback: env PROBE_NS.
 *   --only LIST            comma separated sections to print (default all):
 *                          id,caps,host,ns,proc,env,fds,net,mounts,paths
 *   --exit N               exit with status N after printing
 *   --kill SIG             after printing, kill itself with signal SIG
 *                          (number or name such as TERM)
 *   PATH...                paths to describe (lstat, type, mode, owner,
 *                          access, a real write attempt, small contents).
 *                          "ls:PATH" lists a directory's entries instead.
 *
 * Mount table normalisation (section "mount"):
 *   /proc/self/mountinfo is read and, for each mount, printed as
 *     mount MOUNTPOINT#K fstype=T opts=ro,nosuid,... root=R sopts=S
 *           parent=P#J prop=...
 *   - mount ids, parent ids and device numbers are never printed.  The
 *     parent is identified by its mount point plus "#J", J being the index
 *     of that mount among all mounts on the same mount point in mountinfo
 *     order (0 = lowest in the stack).  The mount that has no parent in
 *     the table (the root of the namespace) gets "parent=-".
 *   - the root column (path inside the source filesystem) is printed for
 *     bind mounts of real filesystems (it tells which host path was bound)
 *     but suppressed for tmpfs, where it contains implementation details
 *     (bwrap's "/newroot" base, "/bindfileXXXXXX//deleted" names).
 *   - per-mount options are reduced to ro|rw, nosuid, nodev, noexec and the
 *     atime flavour; superblock options are printed as they are (they are
 *     stable on one machine: tmpfs size=, mode=; devpts ptmxmode= ...).
 *   - propagation is reduced to shared/master/unbindable/private with
 *     the peer group numbers dropped.
 *   - a mount that is overmounted (another mount sits on its root), or
 *     whose parent chain contains such a mount, or whose mount point the
 *     probe cannot stat for lack of search permission, ends with
 *     " hidden": the sandboxed command cannot reach it by path.
 *   - lines are then sorted *stably* by mount point.  This removes
 *     differences in the interleaving of unrelated mounts (e.g. two
 *     implementations creating /proc and /dev in different orders), while
 *     keeping the relative order of mounts stacked on the same mount point,
 *     which is what decides what is visible.  Together with the parent
 *     label this describes the tree completely without depending on the
 *     global creation order.
 *   - every mount is printed, including host submounts carried along by a
 *     recursive bind of "/"; they are identical for both implementations
 *     on one machine.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#define MAX_PATHS 256
#define MAX_MOUNTS 4096

static const char *host_uid_str;
static const char *host_gid_str;
static const char *ns_spec;
static char *only_list;

/* ------------------------------------------------------------------ */
/* helpers                                                              */

static const char *errno_name(int e)
{
  switch (e)
    {
    case 0: return "ok";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case ETXTBSY: return "ETXTBSY";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EROFS: return "EROFS";
    case EMLINK: return "EMLINK";
    case EPIPE: return "EPIPE";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ENETDOWN: return "ENETDOWN";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EUSERS: return "EUSERS";
    case EOVERFLOW: return "EOVERFLOW";
    default:
      {
        static char buf[32];
        snprintf (buf, sizeof buf, "errno%d", e);
        return buf;
      }
    }
}

static int section_enabled(const char *name)
{
  const char *p;
  size_t n = strlen (name);

  if (only_list == NULL)
    return 1;
  p = only_list;
  while (*p)
    {
      const char *end = strchr (p, ',');
      size_t len = end ? (size_t) (end - p) : strlen (p);
      if (len == n && strncmp (p, name, n) == 0)
        return 1;
      if (end == NULL)
        break;
      p = end + 1;
    }
  return 0;
}

/* Print a string with anything non-printable escaped, so that every fact
 * stays on one line. */
static void print_escaped(const char *s, size_t len)
{
  size_t i;
  for (i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c == '\\')
        fputs ("\\\\", stdout);
      else if (c == '"')
        fputs ("\\\"", stdout);
      else if (c == '\n')
        fputs ("\\n", stdout);
      else if (c == '\t')
        fputs ("\\t", stdout);
      else if (c < 0x20 || c >= 0x7f)
        printf ("\\x%02x", c);
      else
        putchar (c);
    }
}

static char *read_file(const char *path, size_t *len_out)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  char *buf = NULL;
  size_t len = 0, cap = 0;

  if (fd < 0)
    return NULL;
  for (;;)
    {
      ssize_t r;
      if (cap - len < 4096)
        {
          char *nb;
          cap = cap ? cap * 2 : 8192;
          nb = realloc (buf, cap + 1);
          if (nb == NULL)
            {
              free (buf);
              close (fd);
              return NULL;
            }
          buf = nb;
        }
      r = read (fd, buf + len, cap - len);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          free (buf);
          close (fd);
          return NULL;
        }
      if (r == 0)
        break;
      len += (size_t) r;
    }
  close (fd);
  buf[len] = '\0';
  if (len_out)
    *len_out = len;
  return buf;
}

static int have_proc(void)
{
  return access ("/proc/self/status", R_OK) == 0;
}

/* ------------------------------------------------------------------ */
/* ids                                                                  */

static void print_map(const char *file, const char *label, const char *host_id,
                      const char *token)
{
  char *data = read_file (file, NULL);
  char *line, *save = NULL;

  if (data == NULL)
    {
      printf ("%s: unreadable (%s)\n", label, errno_name (errno));
      return;
    }
  if (data[0] == '\0')
    printf ("%s: empty\n", label);
  for (line = strtok_r (data, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char inner[32], outer[32], count[32];
      if (sscanf (line, "%31s %31s %31s", inner, outer, count) != 3)
        continue;
      printf ("%s: %s %s %s\n", label, inner,
              (host_id && strcmp (outer, host_id) == 0) ? token : outer, count);
    }
  free (data);
}

static void section_id(void)
{
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  gid_t groups[NGROUPS_MAX];
  int n, i;
  char *sg_data;

  if (getresuid (&ru, &eu, &su) == 0)
    printf ("id.uid: %u %u %u\n", (unsigned) ru, (unsigned) eu, (unsigned) su);
  if (getresgid (&rg, &eg, &sg) == 0)
    printf ("id.gid: %u %u %u\n", (unsigned) rg, (unsigned) eg, (unsigned) sg);
  n = getgroups (NGROUPS_MAX, groups);
  printf ("id.groups:");
  if (n < 0)
    printf (" error %s", errno_name (errno));
  for (i = 0; i < n; i++)
    printf (" %u", (unsigned) groups[i]);
  printf ("\n");

  if (!have_proc ())
    {
      printf ("id.maps: unknown (no /proc)\n");
      return;
    }
  print_map ("/proc/self/uid_map", "id.uid_map", host_uid_str, "HOSTUID");
  print_map ("/proc/self/gid_map", "id.gid_map", host_gid_str, "HOSTGID");
  sg_data = read_file ("/proc/self/setgroups", NULL);
  if (sg_data)
    {
      sg_data[strcspn (sg_data, "\n")] = '\0';
      printf ("id.setgroups: %s\n", sg_data);
      free (sg_data);
    }
  else
    printf ("id.setgroups: unreadable (%s)\n", errno_name (errno));
}

/* ------------------------------------------------------------------ */
/* capabilities and other /proc/self/status facts                       */

static void section_caps(void)
{
  static const char *const keys[] = {
    "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
    "NoNewPrivs", "Seccomp", "Seccomp_filters", "SigBlk", "SigIgn",
  };
  char *data;
  size_t k;
  int pdeath = -1;

  if (prctl (PR_GET_PDEATHSIG, &pdeath, 0, 0, 0) == 0)
    printf ("prctl.pdeathsig: %d\n", pdeath);
  printf ("prctl.no_new_privs: %d\n", prctl (PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  printf ("prctl.dumpable: %d\n", prctl (PR_GET_DUMPABLE, 0, 0, 0, 0));

  data = read_file ("/proc/self/status", NULL);
  if (data == NULL)
    {
      printf ("status: unknown (no /proc)\n");
      return;
    }
  for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
    {
      char *line = data;
      size_t klen = strlen (keys[k]);
      while (line && *line)
        {
          char *nl = strchr (line, '\n');
          if (strncmp (line, keys[k], klen) == 0 && line[klen] == ':')
            {
              char *v = line + klen + 1;
              while (*v == ' ' || *v == '\t')
                v++;
              printf ("status.%s: %.*s\n", keys[k],
                      (int) (nl ? (size_t) (nl - v) : strlen (v)), v);
              break;
            }
          line = nl ? nl + 1 : NULL;
        }
    }
  free (data);
}

/* ------------------------------------------------------------------ */
/* hostname, session, umask                                             */

static void section_host(void)
{
  struct utsname u;
  mode_t m;
  char cwd[PATH_MAX];
  pid_t child;

  if (uname (&u) == 0)
    {
      printf ("host.hostname: %s\n", u.nodename);
      printf ("host.domainname: %s\n", u.domainname);
    }
  else
    printf ("host.hostname: error %s\n", errno_name (errno));

  if (getcwd (cwd, sizeof cwd))
    printf ("host.cwd: %s\n", cwd);
  else
    printf ("host.cwd: error %s\n", errno_name (errno));

  m = umask (022);
  umask (m);
  printf ("host.umask: %04o\n", (unsigned) m);

  printf ("host.session_leader: %s\n", getsid (0) == getpid () ? "yes" : "no");
  printf ("host.pgrp_leader: %s\n", getpgrp () == getpid () ? "yes" : "no");

  /* Can a nested user namespace be created? (--disable-userns) */
  fflush (stdout);
  child = fork ();
  if (child == 0)
    {
      if (unshare (CLONE_NEWUSER) == 0)
        _exit (0);
      _exit (errno & 0x7f);
    }
  else if (child > 0)
    {
      int st = 0;
      while (waitpid (child, &st, 0) < 0 && errno == EINTR)
        ;
      if (WIFEXITED (st))
        printf ("host.nested_userns: %s\n", errno_name (WEXITSTATUS (st)));
      else
        printf ("host.nested_userns: child-killed\n");
    }
  else
    printf ("host.nested_userns: fork-failed %s\n", errno_name (errno));
}

/* ------------------------------------------------------------------ */
/* namespaces, pids                                                     */

static const char *const ns_names[] = { "cgroup", "ipc", "mnt", "net", "pid", "user", "uts" };

/* Return 1 if pid ns is new, 0 if same, -1 if unknown */
static int pid_ns_state = -1;

static int lookup_ns(const char *name, unsigned long long *out)
{
  const char *p = ns_spec;
  size_t n = strlen (name);

  while (p && *p)
    {
      if (strncmp (p, name, n) == 0 && p[n] == '=')
        {
          *out = strtoull (p + n + 1, NULL, 10);
          return 1;
        }
      p = strchr (p, ',');
      if (p)
        p++;
    }
  return 0;
}

static void compute_ns(int print)
{
  size_t i;

  if (access ("/proc/self/ns", F_OK) != 0)
    {
      if (print)
        printf ("ns: unknown (no /proc)\n");
      return;
    }
  for (i = 0; i < sizeof ns_names / sizeof ns_names[0]; i++)
    {
      char path[64];
      struct stat st;
      unsigned long long host_ino;
      const char *state;

      snprintf (path, sizeof path, "/proc/self/ns/%s", ns_names[i]);
      if (stat (path, &st) != 0)
        state = errno == ENOENT ? "unsupported" : errno_name (errno);
      else if (!lookup_ns (ns_names[i], &host_ino))
        state = "unknown (no reference)";
      else
        state = ((unsigned long long) st.st_ino == host_ino) ? "same" : "new";

      if (strcmp (ns_names[i], "pid") == 0)
        {
          if (strcmp (state, "same") == 0)
            pid_ns_state = 0;
          else if (strcmp (state, "new") == 0)
            pid_ns_state = 1;
        }
      if (print)
        printf ("ns.%s: %s\n", ns_names[i], state);
    }
}

static const char *probe_argv0 = "";

static void section_proc(void)
{
  int in_new_ns = pid_ns_state;

  printf ("proc.argv0: ");
  print_escaped (probe_argv0, strlen (probe_argv0));
  printf ("\n");

  if (in_new_ns < 0)
    /* no /proc: a process in a fresh pid namespace has a tiny pid,
     * a process on the host never does. */
    in_new_ns = getpid () < 100;
  if (in_new_ns)
    printf ("proc.pid: %d\nproc.ppid: %d\n", (int) getpid (), (int) getppid ());
  else
    printf ("proc.pid: host-pid\nproc.ppid: host-pid\n");
}

/* ------------------------------------------------------------------ */
/* environment                                                          */

extern char **environ;

static int cmp_str(const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static int env_excluded(const char *kv)
{
  /* Variables that describe the harness's host session rather than the
   * sandbox. The harness launches with a clean environment, so this list
   * is only a safety net. */
  static const char *const excl[] = {
    "_=", "SHLVL=", "OLDPWD=", "TERM=", "COLUMNS=", "LINES=", "SSH_",
    "XDG_", "DISPLAY=", "WAYLAND_", "DBUS_", "MAIL=", "LS_COLORS=", "LOGNAME=",
    "PROBE_NS=", "PROBE_HOST_UID=", "PROBE_HOST_GID=",
  };
  size_t i;
  for (i = 0; i < sizeof excl / sizeof excl[0]; i++)
    if (strncmp (kv, excl[i], strlen (excl[i])) == 0)
      return 1;
  return 0;
}

static void section_env(void)
{
  size_t n = 0, i;
  char **copy;

  for (n = 0; environ && environ[n]; n++)
    ;
  copy = calloc (n + 1, sizeof *copy);
  if (copy == NULL)
    return;
  for (i = 0; i < n; i++)
    copy[i] = environ[i];
  qsort (copy, n, sizeof *copy, cmp_str);
  printf ("env.count: %zu\n", n);
  for (i = 0; i < n; i++)
    {
      if (env_excluded (copy[i]))
        continue;
      printf ("env: ");
      print_escaped (copy[i], strlen (copy[i]));
      printf ("\n");
    }
  free (copy);
}

/* ------------------------------------------------------------------ */
/* file descriptors                                                     */

static void section_fds(void)
{
  int fd;
  printf ("fds:");
  for (fd = 0; fd < 1024; fd++)
    {
      int fl = fcntl (fd, F_GETFD);
      if (fl < 0)
        continue;
      printf (" %d%s", fd, (fl & FD_CLOEXEC) ? "(cloexec)" : "");
    }
  printf ("\n");
  printf ("fds.stdin_tty: %s\n", isatty (0) ? "yes" : "no");
}

/* ------------------------------------------------------------------ */
/* network                                                              */

static void section_net(void)
{
  struct if_nameindex *ifs, *it;
  int s;
  struct sockaddr_in sin;
  char **names = NULL;
  size_t n = 0, i;

  s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifs = if_nameindex ();
  if (ifs == NULL)
    printf ("net.interfaces: error %s\n", errno_name (errno));
  else
    {
      for (it = ifs; it->if_index != 0; it++)
        n++;
      names = calloc (n + 1, sizeof *names);
      for (i = 0, it = ifs; names && it->if_index != 0; it++, i++)
        names[i] = it->if_name;
      if (names)
        {
          qsort (names, n, sizeof *names, cmp_str);
          for (i = 0; i < n; i++)
            {
              struct ifreq ifr;
              memset (&ifr, 0, sizeof ifr);
              snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "%s", names[i]);
              if (s >= 0 && ioctl (s, SIOCGIFFLAGS, &ifr) == 0)
                printf ("net.if.%s: %s%s%s\n", names[i],
                        (ifr.ifr_flags & IFF_UP) ? "UP" : "DOWN",
                        (ifr.ifr_flags & IFF_RUNNING) ? ",RUNNING" : "",
                        (ifr.ifr_flags & IFF_LOOPBACK) ? ",LOOPBACK" : "");
              else
                printf ("net.if.%s: flags-error %s\n", names[i], errno_name (errno));
            }
        }
      free (names);
      if_freenameindex (ifs);
    }
  if (s >= 0)
    close (s);

  s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    {
      printf ("net.connect_127.0.0.1:1: socket-error %s\n", errno_name (errno));
      return;
    }
  memset (&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons (1);
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (connect (s, (struct sockaddr *) &sin, sizeof sin) == 0)
    printf ("net.connect_127.0.0.1:1: connected\n");
  else
    printf ("net.connect_127.0.0.1:1: %s\n", errno_name (errno));
  close (s);
}

/* ------------------------------------------------------------------ */
/* mounts                                                               */

struct mnt
{
  int id, parent;
  char *mountpoint;
  char *root;
  char *fstype;
  char *opts;     /* normalised per-mount options */
  char *sopts;    /* superblock options */
  char *prop;
  int stack_index; /* index among mounts on the same mount point */
  long pidx;       /* index of the parent mount, -1 if not in the table */
  int covered;     /* another mount sits on top of this one's root */
  size_t order;
};

static int cmp_mnt(const void *a, const void *b)
{
  const struct mnt *x = a, *y = b;
  int c = strcmp (x->mountpoint, y->mountpoint);
  if (c)
    return c;
  return x->order < y->order ? -1 : (x->order > y->order ? 1 : 0);
}

static char *norm_opts(const char *opts)
{
  char *copy = strdup (opts), *tok, *save = NULL;
  char out[256] = "";
  const char *rw = "rw";
  int nosuid = 0, nodev = 0, noexec = 0;
  const char *atime = "";

  for (tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save))
    {
      if (strcmp (tok, "ro") == 0)
        rw = "ro";
      else if (strcmp (tok, "nosuid") == 0)
        nosuid = 1;
      else if (strcmp (tok, "nodev") == 0)
        nodev = 1;
      else if (strcmp (tok, "noexec") == 0)
        noexec = 1;
      else if (strcmp (tok, "noatime") == 0 || strcmp (tok, "relatime") == 0
               || strcmp (tok, "strictatime") == 0)
        atime = tok[0] == 'n' ? "noatime" : (tok[0] == 'r' ? "relatime" : "strictatime");
      /* nodiratime, lazytime etc. are not reported */
    }
  snprintf (out, sizeof out, "%s%s%s%s%s%s", rw,
            nosuid ? ",nosuid" : "", nodev ? ",nodev" : "", noexec ? ",noexec" : "",
            atime[0] ? "," : "", atime);
  free (copy);
  return strdup (out);
}

static char *norm_prop(char **fields, int nfields)
{
  int shared = 0, master = 0, unbindable = 0, i;
  char out[64];

  for (i = 0; i < nfields; i++)
    {
      if (strncmp (fields[i], "shared:", 7) == 0)
        shared = 1;
      else if (strncmp (fields[i], "master:", 7) == 0)
        master = 1;
      else if (strcmp (fields[i], "unbindable") == 0)
        unbindable = 1;
      /* propagate_from:N is a peer-group number too: dropped */
    }
  if (!shared && !master && !unbindable)
    return strdup ("private");
  snprintf (out, sizeof out, "%s%s%s%s%s", shared ? "shared" : "",
            (shared && master) ? "," : "", master ? "master" : "",
            ((shared || master) && unbindable) ? "," : "", unbindable ? "unbindable" : "");
  return strdup (out);
}

static void section_mounts(void)
{
  char *data = read_file ("/proc/self/mountinfo", NULL);
  char *line, *save = NULL;
  struct mnt *m;
  size_t n = 0, i, j;

  if (data == NULL)
    {
      printf ("mount: unknown (no /proc)\n");
      return;
    }
  m = calloc (MAX_MOUNTS, sizeof *m);
  if (m == NULL)
    return;

  for (line = strtok_r (data, "\n", &save); line && n < MAX_MOUNTS;
       line = strtok_r (NULL, "\n", &save))
    {
      char *f[64];
      int nf = 0, sep = -1, k;
      char *tok, *s2 = NULL;

      for (tok = strtok_r (line, " ", &s2); tok && nf < 64; tok = strtok_r (NULL, " ", &s2))
        f[nf++] = tok;
      for (k = 6; k < nf; k++)
        if (strcmp (f[k], "-") == 0)
          {
            sep = k;
            break;
          }
      if (nf < 10 || sep < 0 || sep + 3 > nf)
        continue;
      m[n].id = atoi (f[0]);
      m[n].parent = atoi (f[1]);
      m[n].root = f[3];
      m[n].mountpoint = f[4];
      m[n].opts = norm_opts (f[5]);
      m[n].prop = norm_prop (f + 6, sep - 6);
      m[n].fstype = f[sep + 1];
      m[n].sopts = f[sep + 3];
      m[n].order = n;
      n++;
    }

  for (i = 0; i < n; i++)
    {
      int k = 0;
      for (j = 0; j < i; j++)
        if (strcmp (m[j].mountpoint, m[i].mountpoint) == 0)
          k++;
      m[i].stack_index = k;
    }

  for (i = 0; i < n; i++)
    {
      m[i].pidx = -1;
      for (j = 0; j < n; j++)
        if (j != i && m[j].id == m[i].parent)
          {
            m[i].pidx = (long) j;
            if (strcmp (m[j].mountpoint, m[i].mountpoint) == 0)
              m[j].covered = 1;
            break;
          }
    }

  for (i = 0; i < n; i++)
    {
      const struct mnt *p = m[i].pidx >= 0 ? &m[m[i].pidx] : NULL;
      char parent[PATH_MAX + 16];
      int is_tmpfs = strcmp (m[i].fstype, "tmpfs") == 0;
      int hidden = m[i].covered;
      long c, steps;

      /* hidden: this mount is overmounted, or some ancestor is overmounted
       * by a mount other than the one on the path down to this mount; then
       * nothing of it can be reached by path from inside the sandbox */
      for (c = (long) i, steps = 0; !hidden && m[c].pidx >= 0 && steps <= (long) n;
           c = m[c].pidx, steps++)
        {
          const struct mnt *pm = &m[m[c].pidx];
          if (pm->covered && strcmp (pm->mountpoint, m[c].mountpoint) != 0)
            hidden = 1;
        }
      /* unreachable as well: a directory on the way to the mount point
       * denies search to the sandboxed user (EACCES), e.g. a host
       * submount under a 0700 directory carried along by --ro-bind / / */
      if (!hidden)
        {
          struct stat st;
          if (stat (m[i].mountpoint, &st) != 0 && errno == EACCES)
            hidden = 1;
        }
      if (p)
        snprintf (parent, sizeof parent, "%s#%d", p->mountpoint, p->stack_index);
      else
        snprintf (parent, sizeof parent, "-");
      /* Reuse the root field to hold the full formatted line. */
      {
        char *buf;
        if (asprintf (&buf, "mount %s#%d fstype=%s opts=%s root=%s sopts=%s parent=%s prop=%s%s",
                      m[i].mountpoint, m[i].stack_index, m[i].fstype, m[i].opts,
                      is_tmpfs ? "-" : m[i].root, m[i].sopts, parent, m[i].prop,
                      hidden ? " hidden" : "") < 0)
          buf = NULL;
        m[i].root = buf;
      }
    }

  qsort (m, n, sizeof *m, cmp_mnt);
  printf ("mount.count: %zu\n", n);
  for (i = 0; i < n; i++)
    {
      if (m[i].root)
        printf ("%s\n", m[i].root);
      free (m[i].root);
      free (m[i].opts);
      free (m[i].prop);
    }
  free (m);
  free (data);
}

/* ------------------------------------------------------------------ */
/* paths                                                                */

static const char *type_name(mode_t mode)
{
  if (S_ISREG (mode)) return "file";
  if (S_ISDIR (mode)) return "dir";
  if (S_ISLNK (mode)) return "symlink";
  if (S_ISCHR (mode)) return "char";
  if (S_ISBLK (mode)) return "block";
  if (S_ISFIFO (mode)) return "fifo";
  if (S_ISSOCK (mode)) return "socket";
  return "unknown";
}

static void describe_ls(const char *path)
{
  DIR *d = opendir (path);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, cap = 0, i;

  if (d == NULL)
    {
      printf ("ls %s: error %s\n", path, errno_name (errno));
      return;
    }
  while ((de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      if (n == cap)
        {
          char **nn;
          cap = cap ? cap * 2 : 64;
          nn = realloc (names, cap * sizeof *names);
          if (nn == NULL)
            break;
          names = nn;
        }
      names[n++] = strdup (de->d_name);
    }
  closedir (d);
  if (n)
    qsort (names, n, sizeof *names, cmp_str);
  printf ("ls %s:", path);
  for (i = 0; i < n; i++)
    {
      struct stat st;
      char full[PATH_MAX];
      const char *tc = "?";
      snprintf (full, sizeof full, "%s/%s", path, names[i]);
      if (lstat (full, &st) == 0)
        tc = S_ISDIR (st.st_mode) ? "/" : S_ISLNK (st.st_mode) ? "@"
           : S_ISCHR (st.st_mode) ? "%" : S_ISBLK (st.st_mode) ? "#"
           : S_ISFIFO (st.st_mode) ? "|" : S_ISSOCK (st.st_mode) ? "=" : "";
      printf (" %s%s", names[i], tc);
      free (names[i]);
    }
  printf ("\n");
  free (names);
}

static void describe_path(const char *path)
{
  struct stat st;

  if (strncmp (path, "ls:", 3) == 0)
    {
      describe_ls (path + 3);
      return;
    }

  if (lstat (path, &st) != 0)
    {
      printf ("path %s: missing %s\n", path, errno_name (errno));
      return;
    }
  printf ("path %s: %s mode=%04o owner=%u:%u", path, type_name (st.st_mode),
          (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid, (unsigned) st.st_gid);

  if (S_ISLNK (st.st_mode))
    {
      char target[PATH_MAX];
      ssize_t r = readlink (path, target, sizeof target - 1);
      struct stat tst;
      if (r >= 0)
        {
          target[r] = '\0';
          printf (" target=\"");
          print_escaped (target, (size_t) r);
          printf ("\"");
        }
      printf (" resolves=%s\n", stat (path, &tst) == 0 ? type_name (tst.st_mode) : errno_name (errno));
      return;
    }

  if (S_ISCHR (st.st_mode) || S_ISBLK (st.st_mode))
    printf (" rdev=%u:%u", major (st.st_rdev), minor (st.st_rdev));

  printf (" r=%s", access (path, R_OK) == 0 ? "ok" : errno_name (errno));
  printf (" w=%s", access (path, W_OK) == 0 ? "ok" : errno_name (errno));
  printf (" x=%s", access (path, X_OK) == 0 ? "ok" : errno_name (errno));

  /* a real write attempt, which also sees read-only mounts that access()
   * may not report the same way */
  if (S_ISDIR (st.st_mode))
    {
      char tmp[PATH_MAX];
      int fd;
      snprintf (tmp, sizeof tmp, "%s/.parity-probe-write-test", path);
      fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0)
        {
          close (fd);
          unlink (tmp);
          printf (" write=ok");
        }
      else
        printf (" write=%s", errno_name (errno));
    }
  else
    {
      int fd = open (path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (fd >= 0)
        {
          close (fd);
          printf (" write=ok");
        }
      else
        printf (" write=%s", errno_name (errno));
    }

  if (S_ISREG (st.st_mode))
    {
      printf (" size=%lld", (long long) st.st_size);
      if (st.st_size <= 4096)
        {
          size_t len;
          char *data = read_file (path, &len);
          if (data)
            {
              if (len <= 96)
                {
                  printf (" content=\"");
                  print_escaped (data, len);
                  printf ("\"");
                }
              else
                {
                  /* FNV-1a 64 */
                  uint64_t h = 1469598103934665603ULL;
                  size_t i;
                  for (i = 0; i < len; i++)
                    {
                      h ^= (unsigned char) data[i];
                      h *= 1099511628211ULL;
                    }
                  printf (" fnv64=%016llx", (unsigned long long) h);
                }
              free (data);
            }
          else
            printf (" content=%s", errno_name (errno));
        }
    }
  printf ("\n");
}

/* ------------------------------------------------------------------ */

static int parse_signal(const char *s)
{
  static const struct { const char *name; int sig; } sigs[] = {
    { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "ABRT", SIGABRT },
    { "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
    { "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
  };
  size_t i;
  if (isdigit ((unsigned char) s[0]))
    return atoi (s);
  if (strncmp (s, "SIG", 3) == 0)
    s += 3;
  for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    if (strcmp (s, sigs[i].name) == 0)
      return sigs[i].sig;
  return -1;
}

static void usage(void)
{
  fprintf (stderr,
           "usage: probe [--host-uid N] [--host-gid N] [--ns SPEC] [--only LIST]\n"
           "             [--exit N] [--kill SIG] [--] [PATH...]\n");
  exit (2);
}

int main(int argc, char **argv)
{
  const char *paths[MAX_PATHS];
  size_t npaths = 0, i;
  int exit_status = 0, kill_sig = 0;
  int argi;

  if (argc >= 4 && strcmp (argv[1], "--exec-as") == 0)
    {
      const char *prog = argv[3];
      argv[3] = argv[2];
      execv (prog, argv + 3);
      fprintf (stderr, "probe: exec %s: %s\n", prog, strerror (errno));
      return 127;
    }

  probe_argv0 = argv[0] ? argv[0] : "(null)";
  host_uid_str = getenv ("PROBE_HOST_UID");
  host_gid_str = getenv ("PROBE_HOST_GID");
  ns_spec = getenv ("PROBE_NS");

  for (argi = 1; argi < argc; argi++)
    {
      const char *a = argv[argi];
      if (strcmp (a, "--") == 0)
        {
          argi++;
          break;
        }
      if (strncmp (a, "--", 2) != 0)
        break;
      if (argi + 1 >= argc)
        usage ();
      if (strcmp (a, "--host-uid") == 0)
        host_uid_str = argv[++argi];
      else if (strcmp (a, "--host-gid") == 0)
        host_gid_str = argv[++argi];
      else if (strcmp (a, "--ns") == 0)
        ns_spec = argv[++argi];
      else if (strcmp (a, "--only") == 0)
        only_list = argv[++argi];
      else if (strcmp (a, "--exit") == 0)
        exit_status = atoi (argv[++argi]);
      else if (strcmp (a, "--kill") == 0)
        {
          kill_sig = parse_signal (argv[++argi]);
          if (kill_sig <= 0)
            usage ();
        }
      else
        usage ();
    }
  for (; argi < argc && npaths < MAX_PATHS; argi++)
    paths[npaths++] = argv[argi];

  setvbuf (stdout, NULL, _IOFBF, 1 << 16);
  printf ("probe: v1\n");

  compute_ns (0);
  if (section_enabled ("id"))
    section_id ();
  if (section_enabled ("caps"))
    section_caps ();
  if (section_enabled ("host"))
    section_host ();
  if (section_enabled ("ns"))
    compute_ns (1);
  if (section_enabled ("proc"))
    section_proc ();
  if (section_enabled ("env"))
    section_env ();
  if (section_enabled ("fds"))
    section_fds ();
  if (section_enabled ("net"))
    section_net ();
  if (section_enabled ("mounts"))
    section_mounts ();
  if (section_enabled ("paths"))
    for (i = 0; i < npaths; i++)
      describe_path (paths[i]);

  printf ("probe: end\n");
  fflush (stdout);

  if (kill_sig > 0)
    {
      signal (kill_sig, SIG_DFL);
      kill (getpid (), kill_sig);
      /* pid 1 of a pid namespace ignores signals it has no handler for */
      printf ("probe: survived signal %d\n", kill_sig);
      fflush (stdout);
    }
  return exit_status;
}
