/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/projfloor: the floor under "nsrun --project P -- /bin/true" over a
 * plain full launch, without nsrun: the kernel and file system work that
 * project mode adds, and nothing else (no options, no profile, no lists,
 * no checks, no report).
 *
 *   bench-projfloor base DIR                  a full launch's shape
 *   bench-projfloor project DIR BPF HIDE...   the same, plus project mode
 *   bench-projfloor full DIR                  base, plus what the rest of a
 *                                             bwrap-compatible full launch
 *                                             must do (below)
 *
 * base: clone into new user, mount, pid, net, ipc, uts and cgroup
 * namespaces; the id maps; a private tree, "/" bound read-only on a fresh
 * root with /proc; pivot_root; pid 1 forks /bin/true with no capabilities
 * and no_new_privs, waits for it, exits with its status; the parent waits.
 *
 * project adds what the project sandbox holds beyond that (the plan
 * "nsrun --project P --trace-bwrap" prints) and what a run must record:
 *   before the clone  the run dir, by one rename of one made ahead
 *                     (DIR/spare: p0/upper, p0/work; four mkdirs when
 *                     there is none yet), and its record,
 *                     written and renamed into place;
 *   in the sandbox    one tmpfs for /tmp, /var/tmp and /run (binds), a
 *                     tmpfs on /run/user/UID, /run read-only, $HOME under
 *                     an overlay with a throwaway upper layer, DIR/proj
 *                     under an overlay with the run's upper and work dirs,
 *                     each HIDE path covered by /dev/null read-only, two
 *                     read-only tmpfs (the state dir and nsrun's cache);
 *   the command       the BPF program (nsrun seccomp compile -o BPF
 *                     default) and a Landlock domain scoping signals and
 *                     abstract sockets;
 *   after it          the mount namespace held for a background process
 *                     to drop; the upper dir read (empty: nothing
 *                     changed); the record appended; the layers renamed
 *                     into the run's trash; a detached process that
 *                     removes the trash and makes the next spare.
 *
 * full adds to base what "--unshare-all --dev /dev --proc /proc
 * --die-with-parent --new-session" needs beyond it, as bwrap does it: the
 * loopback brought up (one netlink message); /dev as a tmpfs with the six
 * host nodes bound onto files in it, the stdio, fd and core symlinks, the
 * shm and pts dirs, a devpts instance (which needs uid 0 mapped, hence
 * the map to 0 and then a second user namespace that maps the caller's
 * ids back) and its ptmx link; the parent-death signal in pid 1 and in the
 * command. bench/check runs it beside nsrun's full launch, as information.
 *
 * PROJFLOOR_SHOW="shell code" runs that instead of /bin/true, to check
 * what the sandbox holds (bench/README.md shows such a check).
 *
 * Compare "base" and "project" in one hyperfine run (bench/README.md,
 * "Project mode, the floor"). Each step is the cheapest form of what nsrun
 * must do, with classic mount(2) calls and no error recovery: a step that
 * fails ends the run with status 125, loudly. Not a test: it never fails a
 * build. Built by "make bench-projfloor". */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Landlock ABI 6's ruleset attributes (older headers lack "scoped"). */
struct ll_ruleset_attr {
        uint64_t handled_access_fs, handled_access_net, scoped;
};
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL               (1ULL << 1)

#define ROOT "/tmp/root"

static const char *dir, *bpf_path;
static uid_t outer_uid;
static gid_t outer_gid;
static char **hide;
static int n_hide;
static bool project, full;
static char run_name[32];

static void die(const char *what) {
        fprintf(stderr, "bench-projfloor: %s: %s\n", what, strerror(errno));
        _exit(125);
}

static void put(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                die(path);
        close(fd);
}

/* The run's record, as a run's meta: the first a small file put in place
 * by a rename, the final one appended to it. */
static void record(int run_fd, const char *state, bool append) {
        char text[512];
        int n = snprintf(text, sizeof(text),
                         "version 1\nstate %s\nkind run\nstart 1764201600.000000000\nowner %d\nproject %s/proj\n"
                         "argv /bin/true\nend\n",
                         state, (int) getpid(), dir);
        if (append) {
                int fd = openat(run_fd, "meta", O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || write(fd, text, (size_t) n) != n || close(fd) < 0)
                        die("record");
                return;
        }
        int fd = openat(run_fd, "meta.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, text, (size_t) n) != n || close(fd) < 0 ||
            renameat(run_fd, "meta.tmp", run_fd, "meta") < 0)
                die("record");
}

static void mnt(const char *src, const char *dst, const char *type, unsigned long flags, const char *data) {
        if (mount(src, dst, type, flags, data) < 0)
                die(dst);
}

static void rdonly(const char *path) {
        struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, 0, &a, sizeof(a)) < 0)
                die(path);
}

static void project_mounts(const char *run) {
        char p[8192], q[8192], o[4 * 8192];
        const char *home = getenv("HOME");
        /* One tmpfs: /tmp, and /var/tmp and /run bound from it. */
        snprintf(p, sizeof(p), ROOT "/tmp");
        mnt("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
        snprintf(q, sizeof(q), ROOT "/tmp/.var-tmp");
        if (mkdir(q, 01777) < 0)
                die(q);
        snprintf(p, sizeof(p), ROOT "/var/tmp");
        mnt(q, p, NULL, MS_BIND, NULL);
        snprintf(q, sizeof(q), ROOT "/tmp/.run");
        if (mkdir(q, 0755) < 0)
                die(q);
        snprintf(p, sizeof(p), ROOT "/run");
        mnt(q, p, NULL, MS_BIND, NULL);
        snprintf(q, sizeof(q), ROOT "/run/user");
        if (mkdir(q, 0755) < 0)
                die(q);
        snprintf(q, sizeof(q), ROOT "/run/user/%d", (int) getuid());
        if (mkdir(q, 0700) < 0)
                die(q);
        mnt("tmpfs", q, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700");
        snprintf(p, sizeof(p), ROOT "/run");
        rdonly(p);
        /* $HOME under an overlay whose upper layer is thrown away. */
        snprintf(q, sizeof(q), ROOT "/tmp/.home");
        if (mkdir(q, 0700) < 0)
                die(q);
        snprintf(p, sizeof(p), ROOT "/tmp/.home/u");
        if (mkdir(p, 0755) < 0)
                die(p);
        snprintf(p, sizeof(p), ROOT "/tmp/.home/w");
        if (mkdir(p, 0700) < 0)
                die(p);
        snprintf(o, sizeof(o), "lowerdir=%s,upperdir=%s/u,workdir=%s/w,userxattr", home, q, q);
        snprintf(p, sizeof(p), ROOT "%s", home);
        mnt("overlay", p, "overlay", 0, o);
        /* The project under an overlay with the run's layers. */
        snprintf(o, sizeof(o), "lowerdir=%s/proj,upperdir=%s/p0/upper,workdir=%s/p0/work,userxattr", dir, run, run);
        snprintf(p, sizeof(p), ROOT "%s/proj", dir);
        mnt("overlay", p, "overlay", 0, o);
        /* Each hidden path: /dev/null, read-only. */
        for (int i = 0; i < n_hide; i++) {
                snprintf(p, sizeof(p), ROOT "%s", hide[i]);
                mnt("/dev/null", p, NULL, MS_BIND, NULL);
                rdonly(p);
        }
        /* The state dir and nsrun's cache: empty, read-only. */
        snprintf(p, sizeof(p), ROOT "%s/state", dir);
        mnt("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755");
        snprintf(p, sizeof(p), ROOT "%s/cache", dir);
        mnt("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755");
}

/* full: lo up, by one RTM_NEWLINK and its ack. */
static void loopback_up(void) {
        struct {
                struct nlmsghdr nh;
                struct ifinfomsg ifi;
        } req = { .nh = { .nlmsg_len = sizeof(req),
                          .nlmsg_type = RTM_NEWLINK,
                          .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
                          .nlmsg_seq = 1 },
                  .ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 1, .ifi_flags = IFF_UP, .ifi_change = IFF_UP } };
        char ack[256] __attribute__((aligned(NLMSG_ALIGNTO)));
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0 || send(fd, &req, sizeof(req), 0) != (ssize_t) sizeof(req) || recv(fd, ack, sizeof(ack), 0) <= 0)
                die("loopback");
        struct nlmsghdr *h = (struct nlmsghdr *) ack;
        struct nlmsgerr *e = NLMSG_DATA(h);
        if (h->nlmsg_type != NLMSG_ERROR || e->error) {
                errno = h->nlmsg_type == NLMSG_ERROR ? -e->error : EPROTO;
                die("loopback");
        }
        close(fd);
}

/* full: --dev /dev. */
static void dev_mounts(void) {
        static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
        char p[128], h[64];
        mnt("tmpfs", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
                snprintf(p, sizeof(p), ROOT "/dev/%s", nodes[i]);
                snprintf(h, sizeof(h), "/dev/%s", nodes[i]);
                int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
                if (fd < 0)
                        die(p);
                close(fd);
                mnt(h, p, NULL, MS_BIND, NULL);
        }
        static const char *const links[][2] = { { "/proc/self/fd/0", "stdin" },  { "/proc/self/fd/1", "stdout" },
                                                { "/proc/self/fd/2", "stderr" }, { "/proc/self/fd", "fd" },
                                                { "/proc/kcore", "core" },       { "pts/ptmx", "ptmx" } };
        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
                snprintf(p, sizeof(p), ROOT "/dev/%s", links[i][1]);
                if (symlink(links[i][0], p) < 0)
                        die(p);
        }
        if (mkdir(ROOT "/dev/shm", 0755) < 0 || mkdir(ROOT "/dev/pts", 0755) < 0)
                die("/dev dirs");
        mnt("devpts", ROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620");
}

/* full: the caller's ids again, in a second user namespace. */
static void nest_userns(uid_t uid, gid_t gid) {
        char map[64];
        if (unshare(CLONE_NEWUSER) < 0)
                die("unshare user ns");
        snprintf(map, sizeof(map), "%d 0 1", (int) uid);
        put("/proc/self/uid_map", map);
        put("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "%d 0 1", (int) gid);
        put("/proc/self/gid_map", map);
}

static void confine_command(const struct sock_fprog *prog) {
        if (project) {
                struct ll_ruleset_attr ra = { .scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL };
                int lfd = (int) syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
                if (lfd < 0 || syscall(SYS_landlock_restrict_self, lfd, 0) < 0)
                        die("landlock");
                close(lfd);
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
                        die("seccomp");
        }
        for (int c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        die("capbset");
        struct {
                unsigned v;
                int pid;
        } h = { 0x20080522, 0 };
        unsigned d[6] = { 0 };
        if (syscall(SYS_capset, &h, d) < 0)
                die("capset");
}

static int sandbox(void *arg) {
        const struct sock_fprog *prog = arg;
        char run[8192];
        snprintf(run, sizeof(run), "%s/%s", dir, run_name);
        char c;
        if (read(0, &c, 1) != 1) /* the maps are written */
                _exit(125);
        if (full)
                loopback_up();
        mnt(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
        mnt("tmpfs", "/tmp", "tmpfs", 0, "mode=0755");
        if (mkdir(ROOT, 0755) < 0)
                die(ROOT);
        mnt("/", ROOT, NULL, MS_BIND | MS_REC, NULL);
        struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
        if (syscall(SYS_mount_setattr, AT_FDCWD, ROOT, AT_RECURSIVE, &a, sizeof(a)) < 0)
                die("ro /");
        mnt("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        if (project)
                project_mounts(run);
        if (full)
                dev_mounts();
        if (chdir(ROOT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                die("pivot_root");
        if (full) {
                nest_userns(outer_uid, outer_gid);
                if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                        die("pdeathsig");
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                die("no_new_privs");
        pid_t cmd = fork();
        if (cmd == 0) {
                if (full && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                        die("pdeathsig");
                setsid();
                confine_command(prog);
                /* To see what the sandbox holds: PROJFLOOR_SHOW="sh code". */
                const char *show = getenv("PROJFLOOR_SHOW");
                if (show)
                        execl("/bin/sh", "sh", "-c", show, (char *) NULL);
                execl("/bin/true", "true", (char *) NULL);
                die("execve");
        }
        int st = 0;
        if (cmd < 0 || waitpid(cmd, &st, 0) != cmd)
                die("wait");
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static struct sock_fprog load_bpf(void) {
        struct sock_fprog prog = { 0 };
        int fd = open(bpf_path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % 8)
                die(bpf_path);
        struct sock_filter *f = malloc((size_t) st.st_size);
        if (!f || read(fd, f, (size_t) st.st_size) != st.st_size)
                die(bpf_path);
        close(fd);
        prog.len = (unsigned short) (st.st_size / 8);
        prog.filter = f;
        return prog;
}

/* A run dir: p0/upper, p0/work. */
static int make_run_dir(int dfd, const char *name) {
        char p[96];
        if (mkdirat(dfd, name, 0700) < 0)
                return -1;
        snprintf(p, sizeof(p), "%s/p0", name);
        if (mkdirat(dfd, p, 0700) < 0)
                return -1;
        snprintf(p, sizeof(p), "%s/p0/upper", name);
        if (mkdirat(dfd, p, 0755) < 0)
                return -1;
        snprintf(p, sizeof(p), "%s/p0/work", name);
        return mkdirat(dfd, p, 0700);
}

/* What a run's background process does, detached: drop the sandbox's
 * mounts, remove the trash (the overlay's work dir holds an empty "work"
 * once unmounted), make the next run's dir. */
static void background(int dfd, int mnt_fd) {
        pid_t pid = fork();
        if (pid != 0)
                return;
        setsid();
        close(mnt_fd);
        static const char *const gone[] = { "trash/work/work", "trash/work/index",
                                            "trash/work",      "trash/upper",
                                            "trash",           "p0" };
        char path[128], tmp[64];
        for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", run_name, gone[i]);
                (void) unlinkat(dfd, path, AT_REMOVEDIR);
        }
        snprintf(path, sizeof(path), "%s/meta", run_name);
        (void) unlinkat(dfd, path, 0);
        (void) unlinkat(dfd, run_name, AT_REMOVEDIR);
        snprintf(tmp, sizeof(tmp), "spare.tmp-%d", (int) getpid());
        if (make_run_dir(dfd, tmp) == 0 && renameat2(dfd, tmp, dfd, "spare", RENAME_NOREPLACE) == 0)
                _exit(0);
        for (size_t i = 0; i < 3; i++) {
                static const char *const sub[] = { "p0/upper", "p0/work", "p0" };
                snprintf(path, sizeof(path), "%s/%s", tmp, sub[i]);
                (void) unlinkat(dfd, path, AT_REMOVEDIR);
        }
        (void) unlinkat(dfd, tmp, AT_REMOVEDIR);
        _exit(0);
}

int main(int argc, char **argv) {
        if (argc < 3 ||
            (strcmp(argv[1], "base") != 0 && strcmp(argv[1], "project") != 0 && strcmp(argv[1], "full") != 0) ||
            (strcmp(argv[1], "project") == 0 && argc < 4)) {
                fprintf(stderr, "usage: bench-projfloor base DIR | project DIR BPF [HIDE...] | full DIR\n");
                return 2;
        }
        project = strcmp(argv[1], "project") == 0;
        full = strcmp(argv[1], "full") == 0;
        outer_uid = getuid();
        outer_gid = getgid();
        dir = argv[2];
        struct sock_fprog prog = { 0 };
        int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                die(dir);
        int run_fd = -1;
        if (project) {
                bpf_path = argv[3];
                hide = argv + 4;
                n_hide = argc - 4;
                prog = load_bpf();
                /* The spare, or (the last run's background process is
                 * not done yet) a dir of its own, as nsrun does. */
                snprintf(run_name, sizeof(run_name), "run-%d", (int) getpid());
                if (renameat2(dfd, "spare", dfd, run_name, RENAME_NOREPLACE) < 0 && make_run_dir(dfd, run_name) < 0)
                        die("the run dir");
                run_fd = openat(dfd, run_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (run_fd < 0)
                        die("run");
                record(run_fd, "running", false);
        }
        int go[2];
        if (pipe2(go, O_CLOEXEC) < 0)
                die("pipe");
        static char stack[256 * 1024];
        int saved = dup(0);
        dup2(go[0], 0);
        pid_t child = clone(sandbox, stack + sizeof(stack),
                            CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                                    CLONE_NEWCGROUP | SIGCHLD,
                            &prog);
        dup2(saved, 0);
        close(saved);
        if (child < 0)
                die("clone");
        char path[64], map[64];
        snprintf(map, sizeof(map), "0 %d 1", (int) getuid());
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int) child);
        put(path, map);
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int) child);
        put(path, "deny");
        snprintf(map, sizeof(map), "0 %d 1", (int) getgid());
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int) child);
        put(path, map);
        int mnt_fd = -1;
        if (project) {
                snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) child);
                mnt_fd = open(path, O_RDONLY | O_CLOEXEC);
                if (mnt_fd < 0)
                        die(path);
        }
        if (write(go[1], "g", 1) != 1)
                die("go");
        int st;
        if (waitpid(child, &st, 0) != child)
                die("waitpid");
        if (project) {
                /* Nothing changed: the upper dir is empty. */
                int ufd = openat(run_fd, "p0/upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                DIR *d = ufd >= 0 ? fdopendir(ufd) : NULL;
                if (!d)
                        die("upper");
                for (struct dirent *de; (de = readdir(d));)
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                die("the upper dir is not empty");
                closedir(d);
                if (mkdirat(run_fd, "trash", 0700) < 0 || renameat(run_fd, "p0/work", run_fd, "trash/work") < 0 ||
                    renameat(run_fd, "p0/upper", run_fd, "trash/upper") < 0)
                        die("trash");
                record(run_fd, "committed", true);
                background(dfd, mnt_fd);
                close(mnt_fd);
        }
        return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
}
