/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building the sandbox root.
 *
 * The order of work:
 *   1. Make every mount we inherited a slave, so nothing we do propagates
 *      back to the host while host changes still reach us.
 *   2. Clone every bind source into a detached mount tree (open_tree) and
 *      set its flags there with one recursive mount_setattr: no mountinfo
 *      parsing, no per-submount remounts. This happens first, while the
 *      host tree is untouched, so a source such as "/" never contains our
 *      own scratch mounts, and each source is resolved exactly once.
 *   3. Mount the new root tmpfs on /tmp of the old root (invisible later),
 *      or, when an op needs room for files of its own, a scratch tmpfs
 *      there and the new root on /tmp/newroot inside it. Ops marked
 *      NSR_OPF_SHARED_TMP get dirs of one more tmpfs, /tmp/shared, bound
 *      where they go, so that all of them together hold at most its size.
 *   4. Run the ops in order. Destinations are resolved with
 *      RESOLVE_IN_ROOT against the new root, so a symlink made by an earlier
 *      op can never point a later mount outside the sandbox.
 *   5. pivot_root into the new root and detach the old one.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/syscalls.h"
#include "base/timing.h"
#include "sandbox/overlay.h"
#include "sandbox/rootfs-internal.h"
#include "sandbox/rootfs.h"

#define SCRATCH      "/tmp"
#define NEWROOT_NAME "newroot"
#define SHARED_NAME  "shared"

const char *rootfs_mount_strerror(int e) {
        if (e == ENOSPC)
                return "Limit exceeded (ENOSPC). (Hint: Check that /proc/sys/fs/mount-max is sufficient, typically "
                       "100000)";
        return strerror(e);
}

/* "message: strerror", where ENOSPC gets bwrap's hint about mount-max. */
int rootfs_mount_error(nsr_error *err, int e, const char *fmt, ...) {
        char msg[NSR_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return nsr_error_setx(err, e, "%s: %s", msg, rootfs_mount_strerror(e));
}

int rootfs_bind_error(nsr_error *err, int e, const char *src, const char *dest) {
        return rootfs_mount_error(err, e, "Can't bind mount %s on %s: Unable to mount source on destination", src,
                                  dest);
}

/* "/newroot/" + dest without its leading slashes: the spelling bwrap uses in
 * its messages. */
static char *newroot_path(const char *dest) {
        while (*dest == '/')
                dest++;
        return nsr_asprintf("/newroot/%s", dest);
}

/* Mode for missing parents of an op, from the op's perms (0 for ops that
 * take none): 0755 minus the group and other bits the op's own mode lacks. */
mode_t rootfs_parent_mode(const nsr_op *op) {
        mode_t perms = nsr_op_perms(op);
        mode_t m = 0755;
        if ((perms & 0070) == 0)
                m &= ~0050;
        if ((perms & 0007) == 0)
                m &= ~0005;
        return m;
}

int rootfs_open_in_root(int root, const char *path, int flags) {
        const char *p = path;
        while (*p == '/')
                p++;
        if (!*p)
                p = ".";
        int fd = nsr_openat2(root, p, (uint64_t) flags | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
        return fd < 0 ? -errno : fd;
}

/* Opens the parent of dest as an O_PATH dir, creating missing components
 * with mode. *ret_name points into the normalised copy returned in
 * *ret_norm. */
/* Walks parent from the top, creating missing components with mode. Each
 * prefix is resolved from the root again, so symlinks inside resolve as the
 * sandbox would see them. */
static int make_parents(int root, const char *parent, mode_t mode) {
        _cleanup_close_ int cur = rootfs_open_in_root(root, "/", O_PATH | O_DIRECTORY);
        if (cur < 0)
                return cur;
        size_t plen = strlen(parent);
        for (size_t i = 1; i <= plen; i++) {
                if (i < plen && parent[i] != '/')
                        continue;
                _cleanup_free_ char *prefix = nsr_strndup(parent, i);
                int next = rootfs_open_in_root(root, prefix, O_PATH | O_DIRECTORY);
                if (next == -ENOENT) {
                        const char *comp = strrchr(prefix, '/');
                        comp = comp ? comp + 1 : prefix;
                        if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST)
                                return -errno;
                        next = rootfs_open_in_root(root, prefix, O_PATH | O_DIRECTORY);
                }
                if (next < 0)
                        return next;
                safe_close(cur);
                cur = next;
        }
        return TAKE_FD(cur);
}

/* Opens the parent of dest as an O_PATH dir, creating missing components
 * with mode. *ret_name points into the normalised copy returned in
 * *ret_norm. */
int rootfs_open_parent(int root, const char *dest, mode_t mode, char **ret_norm, const char **ret_name) {
        _cleanup_free_ char *norm = nsr_path_normalize(dest);
        char *slash = strrchr(norm, '/');
        const char *name;
        _cleanup_free_ char *parent = NULL;
        if (!slash) {
                parent = nsr_strdup("/");
                name = norm;
        } else {
                parent = nsr_strndup(norm, (size_t) (slash - norm));
                if (!*parent) {
                        free(parent);
                        parent = nsr_strdup("/");
                }
                name = slash + 1;
        }

        int fd = rootfs_open_in_root(root, parent, O_PATH | O_DIRECTORY);
        if (fd == -ENOENT)
                fd = make_parents(root, parent, mode);
        if (fd < 0)
                return fd;
        *ret_name = name;
        *ret_norm = TAKE_PTR(norm);
        return fd;
}

/* Opens the destination of op the way bwrap 0.12 does (its fix for
 * GHSA-pxhw-h44j-8pfx): the parents are resolved inside the new root, so
 * an absolute symlink among them leads to the same place inside, never
 * out, and missing ones are made; the last component is never followed.
 * It is made when missing (a dir with perms, or a file with perms, 0444
 * when perms < 0) and opened O_NOFOLLOW. A mount onto a symlink is
 * refused, because the mount would follow it. writable: a DEST_FILE is
 * truncated and returned open for writing (--file). */
int rootfs_open_dest(builder *b, const nsr_op *op, dest_kind kind, int perms, bool writable, bool is_mount,
                     nsr_error *err) {
        _cleanup_free_ char *norm = NULL;
        const char *name = NULL;
        _cleanup_close_ int parent = rootfs_open_parent(b->root, op->dest, rootfs_parent_mode(op), &norm, &name);
        if (parent < 0)
                return nsr_error_set(err, -parent, "Can't mkdir parents for %s", op->dest);
        if (!*name)
                name = ".";
        int fd = -1;
        if (kind == DEST_DIR) {
                /* Most dirs exist already (in the bound tree, or made for
                 * an op before): an open that only a dir (never a symlink)
                 * passes spares the mkdir and the fstat. Anything else
                 * takes the long way, for its error message. */
                fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0)
                        return fd;
                if (mkdirat(parent, name, perms >= 0 ? (mode_t) perms : 0755) < 0 && errno != EEXIST)
                        return nsr_error_set(err, errno, "Can't create file %s", op->dest);
        } else if (kind == DEST_FILE && writable) {
                fd = openat(parent, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_TRUNC,
                            perms >= 0 ? (mode_t) perms : 0444);
                return fd < 0 ? nsr_error_set(err, errno, "Can't create file %s", op->dest) : fd;
        } else if (kind == DEST_FILE) {
                /* Most files to mount on exist (a hidden secret, a bound
                 * config): opened as they are, made only when missing. */
                fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT) {
                        fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                                    perms >= 0 ? (mode_t) perms : 0444);
                        if (fd < 0 && errno != EEXIST)
                                return nsr_error_set(err, errno, "Can't create file %s", op->dest);
                        fd = safe_close(fd);
                }
        }
        if (fd < 0)
                fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "Can't create file %s", op->dest);
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int e = errno;
                safe_close(fd);
                return nsr_error_set(err, e, "Can't get type of dest %s", op->dest);
        }
        mode_t type = st.st_mode & S_IFMT;
        if ((is_mount && type == S_IFLNK) || (kind == DEST_DIR && type != S_IFDIR) ||
            (kind == DEST_FILE && type == S_IFDIR))
                safe_close(fd);
        if (is_mount && type == S_IFLNK)
                return nsr_error_setx(err, EINVAL, "Can't mount on symlink destination %s", op->dest);
        if (kind == DEST_DIR && type != S_IFDIR)
                return nsr_error_setx(err, ENOTDIR, "Destination is not a directory %s", op->dest);
        if (kind == DEST_FILE && type == S_IFDIR)
                return nsr_error_setx(err, EISDIR, "Destination is not a file %s", op->dest);
        return fd;
}

int rootfs_attach(int tree, int target) {
        if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        return 0;
}

/* fsopen + options + fsmount: a new detached superblock mount. */
int rootfs_new_fs(const char *type, const char *const *opts, unsigned attrs) {
        _cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
        if (fs < 0)
                return -errno;
        /* The mount table shows the source as bwrap's mount(2) calls do. */
        if (fsconfig(fs, FSCONFIG_SET_STRING, "source", type, 0) < 0)
                return -errno;
        for (size_t i = 0; opts && opts[i]; i += 2) {
                int r = opts[i + 1] ? fsconfig(fs, FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0)
                                    : fsconfig(fs, FSCONFIG_SET_FLAG, opts[i], NULL, 0);
                if (r < 0)
                        return -errno;
        }
        if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return -errno;
        int mnt = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
        return mnt < 0 ? -errno : mnt;
}

/* Whether open_tree_attr(2) may be tried: not once it failed as a kernel
 * without it fails (or a filter that refuses what it does not know), nor
 * under the test hook that acts as a kernel before 6.15. */
static int tree_attr = -1; /* not known yet */

static bool tree_attr_usable(void) {
        if (tree_attr < 0)
                tree_attr = !nsr_test_hook_on("NSRUN_TEST_NO_DETACHED");
        return tree_attr;
}

int rootfs_clone_tree(int dirfd, const char *path, bool recursive, unsigned attrs) {
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
        if (!*path)
                flags |= AT_EMPTY_PATH;
        /* The clone and its flags in one call where the kernel has it (a
         * hidden file's bind, each of /dev's nodes): one system call less
         * per mount. */
        if (attrs && tree_attr_usable()) {
                struct mount_attr attr = { .attr_set = attrs };
                int fd = nsr_open_tree_attr(dirfd, path, flags, &attr);
                if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
                        return fd >= 0 ? fd : -errno;
                tree_attr = 0;
        }
        _cleanup_close_ int tree = open_tree(dirfd, path, flags);
        if (tree < 0)
                return -errno;
        if (attrs) {
                struct mount_attr attr = { .attr_set = attrs };
                if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof(attr)) < 0)
                        return -errno;
        }
        return TAKE_FD(tree);
}

static bool op_is_bind(nsr_op_type t) {
        return t == NSR_OP_BIND || t == NSR_OP_RO_BIND || t == NSR_OP_DEV_BIND || t == NSR_OP_BIND_FD ||
               t == NSR_OP_RO_BIND_FD;
}

static bool op_is_overlay(nsr_op_type t) {
        return t == NSR_OP_OVERLAY || t == NSR_OP_TMP_OVERLAY || t == NSR_OP_RO_OVERLAY;
}

size_t nsr_mount_fds_needed(const nsr_plan *plan) {
        size_t n = 10;
        for (size_t i = 0; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                if (op_is_bind(op->type))
                        n += 2; /* the tree and its source */
                if (op->type == NSR_OP_PROC)
                        n++;
                if (op->type == NSR_OP_DEV)
                        n += ROOTFS_KERN_MAX;
                if (op_is_overlay(op->type))
                        n += nsr_strv_length(op->overlay_srcs) + 2;
        }
        return n;
}

static int open_source(const char *src, nsr_error *err) {
        int fd = open(src, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "Can't find source path %s", src);
        return fd;
}

static char *fd_real_path(int fd) {
        char link[64], buf[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, sizeof(buf) - 1);
        if (n < 0)
                return nsr_strdup("?");
        buf[n] = '\0';
        return nsr_strdup(buf);
}

/* The caller's fd names a mount of the caller's mount namespace, which
 * open_tree cannot clone from ours. Find the same file by its path in our
 * copy of the tree and make sure it is the same inode, as bwrap does. */
static int reopen_fd_here(int fd, nsr_error *err) {
        struct stat a, b;
        if (fstat(fd, &a) < 0)
                /* bwrap resolves /proc/self/fd/N, which does not exist for
                 * a closed fd. */
                return nsr_error_setx(err, ENOENT, "Can't find source path /proc/self/fd/%d: %s", fd,
                                      strerror(errno == EBADF ? ENOENT : errno));
        _cleanup_free_ char *path = fd_real_path(fd);
        if (path[0] != '/')
                return nsr_error_setx(err, ENOENT, "Can't find source path /proc/self/fd/%d: No such file or directory",
                                      fd);
        int here = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        if (here < 0)
                return nsr_error_set(err, errno, "Can't find source path %s", path);
        if (fstat(here, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
                safe_close(here);
                return nsr_error_setx(err, EBUSY, "Race condition binding dirfd");
        }
        return here;
}

/* An --overlay op's upper and work dirs, opened (named for messages only
 * when one is needed: overlay_shown). */
static int open_upper_work(const nsr_op *op, prepared *pr, nsr_error *err) {
        pr->upper_fd = open_source(op->source, err);
        if (pr->upper_fd < 0)
                return pr->upper_fd;
        pr->work_fd = open_source(op->workdir, err);
        if (pr->work_fd < 0)
                return pr->work_fd;
        return 0;
}

/* The part of path below the gate's dir, or NULL when it is not below. */
static const char *below_gate(const builder *b, const char *path) {
        const char *under = b->ctx->gate_under;
        size_t n = under ? strlen(under) : 0;
        if (b->gate_dir < 0 || !path || n == 0 || strncmp(path, under, n) != 0 || path[n] != '/' || !path[n + 1])
                return NULL;
        return path + n + 1;
}

static int take_slots(builder *b, nsr_error *err);

/* The monitor's byte on ctx->gate_fd, once. The monitor sends the slots
 * first: they are taken before, so that it never waits on a full pipe
 * while this waits for it. */
static int pass_gate(builder *b, nsr_error *err) {
        char c;
        if (b->ctx->gate_fd < 0 || b->gate_passed)
                return 0;
        int r = take_slots(b, err);
        if (r < 0)
                return r;
        if (nsr_read_full(b->ctx->gate_fd, &c, 1) != 1)
                return nsr_error_setx(err, EIO, "the monitor did not make the sandbox's layers");
        b->gate_passed = true;
        return 0;
}

/* A gated --overlay op's upper and work dirs, from the gate's dir, once the
 * monitor made them. */
static int open_gated(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        int r = pass_gate(b, err);
        if (r < 0)
                return r;
        pr->upper_fd = openat(b->gate_dir, below_gate(b, op->source), O_PATH | O_CLOEXEC);
        if (pr->upper_fd < 0)
                return nsr_error_set(err, errno, "Can't find source path %s", op->source);
        pr->work_fd = openat(b->gate_dir, below_gate(b, op->workdir), O_PATH | O_CLOEXEC);
        if (pr->work_fd < 0)
                return nsr_error_set(err, errno, "Can't find source path %s", op->workdir);
        return 0;
}

/* Whether ops[i + 1] is a --remount-ro of the dest that ops[i], a bind or
 * a tmpfs, mounts on: bwrap users and project mode's hidden paths pair
 * them. The flag then goes on the new mount before it is attached
 * (fold_remount), unless the op mounts nothing (a -try bind whose source
 * is missing), when the --remount-ro runs as its own op. */
static bool remount_follows(const nsr_plan *plan, size_t i) {
        if (i + 1 >= plan->n_ops || plan->ops[i + 1].type != NSR_OP_REMOUNT_RO)
                return false;
        const nsr_op *op = &plan->ops[i];
        if ((!op_is_bind(op->type) && op->type != NSR_OP_TMPFS) || !op->dest || !plan->ops[i + 1].dest)
                return false;
        _cleanup_free_ char *a = nsr_path_normalize(op->dest);
        _cleanup_free_ char *b = nsr_path_normalize(plan->ops[i + 1].dest);
        return streq(a, b);
}

/* A bind whose source is a path, checked against neither a dev and inode
 * nor allowed to be missing: one that may share its source's lookup. */
static bool source_shareable(const nsr_op *op) {
        return op_is_bind(op->type) && op->type != NSR_OP_BIND_FD && op->type != NSR_OP_RO_BIND_FD && op->source &&
               !(op->flags & (NSR_OPF_VERIFY | NSR_OPF_TRY));
}

static size_t source_hash(const char *s) {
        size_t h = 14695981039346656037ULL;
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return h;
}

/* The earlier bind op whose source op i names too (both shareable), or
 * -1: from a table of the first op of each source, made as prepare_sources
 * goes (a plan may have hundreds of binds). */
static ssize_t same_source(builder *b, size_t i) {
        const nsr_op *op = &b->plan->ops[i];
        if (!source_shareable(op))
                return -1;
        size_t cap = b->src_cap, at = source_hash(op->source) & (cap - 1);
        for (; b->src_first[at] >= 0; at = (at + 1) & (cap - 1))
                if (streq(b->plan->ops[b->src_first[at]].source, op->source))
                        return b->src_first[at];
        b->src_first[at] = (ssize_t) i; /* the first: prepared as usual */
        return -1;
}

/* Step 2: resolve and clone every host source, in op order: the binds'
 * sources, the overlays' layers, the host's nodes for --dev and its procfs
 * where --proc takes that one. */
static int prepare_sources(builder *b, nsr_error *err) {
        const nsr_plan *plan = b->plan;
        /* Twice as many slots as ops, a power of two (same_source). */
        for (b->src_cap = 16; b->src_cap < 2 * plan->n_ops; b->src_cap *= 2)
                ;
        b->src_first = nsr_realloc_array(NULL, b->src_cap, sizeof(ssize_t));
        for (size_t k = 0; k < b->src_cap; k++)
                b->src_first[k] = -1;
        for (size_t i = 0; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                prepared *pr = &b->prep[i];
                pr->fold_ro = remount_follows(plan, i);
                if (i == 0 && b->in_place)
                        continue; /* the root itself: see root_in_place */
                if (op->type == NSR_OP_PROC || op->type == NSR_OP_DEV) {
                        int r = op->type == NSR_OP_PROC ? rootfs_prepare_proc(b, op, pr, err)
                                                        : rootfs_prepare_dev(b, op, pr, err);
                        if (r < 0)
                                return r;
                } else if (op_is_bind(op->type)) {
                        unsigned attrs = MOUNT_ATTR_NOSUID;
                        if (op->type != NSR_OP_DEV_BIND)
                                attrs |= MOUNT_ATTR_NODEV;
                        if (op->type == NSR_OP_RO_BIND || op->type == NSR_OP_RO_BIND_FD)
                                attrs |= MOUNT_ATTR_RDONLY;
                        /* A source an earlier bind named too (project mode
                         * binds /dev/null over every hidden file): found
                         * once, cloned once per op. */
                        ssize_t same = same_source(b, i);
                        if (same >= 0) {
                                prepared *first = &b->prep[same];
                                pr->is_dir = first->is_dir;
                                pr->ro_done = !pr->is_dir && pr->fold_ro;
                                int tree = rootfs_clone_tree(first->src_fd, "", true,
                                                             attrs | (pr->ro_done ? MOUNT_ATTR_RDONLY : 0));
                                if (tree < 0) {
                                        _cleanup_free_ char *real = fd_real_path(first->src_fd);
                                        return rootfs_mount_error(err, -tree, "Can't bind mount %s on %s", real,
                                                                  op->dest);
                                }
                                pr->tree = tree;
                                pr->src_of = same;
                                first->src_kept = true;
                                continue;
                        }
                        _cleanup_close_ int src = -1;
                        if (op->type == NSR_OP_BIND_FD || op->type == NSR_OP_RO_BIND_FD) {
                                src = reopen_fd_here(op->fd, err);
                                if (src < 0)
                                        return src;
                        } else {
                                src = open(op->source, O_PATH | O_CLOEXEC);
                                if (src < 0) {
                                        if (errno == ENOENT && (op->flags & NSR_OPF_TRY)) {
                                                pr->skipped = true;
                                                continue;
                                        }
                                        return nsr_error_set(err, errno, "Can't find source path %s", op->source);
                                }
                        }
                        struct stat st;
                        if (fstat(src, &st) < 0)
                                return nsr_error_set(err, errno, "Can't get type of source %s", op->source);
                        if ((op->flags & NSR_OPF_VERIFY) &&
                            (st.st_dev != op->verify_dev || st.st_ino != op->verify_ino))
                                return nsr_error_setx(err, ESTALE, "%s changed while the sandbox was being built",
                                                      op->dest);
                        pr->is_dir = S_ISDIR(st.st_mode);
                        /* The --remount-ro that follows goes on with the
                         * other flags: a file's mount has none below it,
                         * so recursive or not is the same there. */
                        pr->ro_done = !pr->is_dir && pr->fold_ro;
                        if (pr->ro_done)
                                attrs |= MOUNT_ATTR_RDONLY;
                        int tree = rootfs_clone_tree(src, "", true, attrs);
                        if (tree < 0) {
                                _cleanup_free_ char *real = fd_real_path(src);
                                return rootfs_mount_error(err, -tree, "Can't bind mount %s on %s", real, op->dest);
                        }
                        pr->tree = tree;
                        /* Its name only if a message needs it (do_bind). */
                        pr->src_fd = TAKE_FD(src);
                } else if (op_is_overlay(op->type)) {
                        size_t n = nsr_strv_length(op->overlay_srcs);
                        pr->lower_fds = nsr_malloc0(n * sizeof(int));
                        for (size_t k = 0; k < n; k++)
                                pr->lower_fds[k] = -1;
                        pr->n_lower = n;
                        for (size_t k = 0; k < n; k++) {
                                int fd = open_source(op->overlay_srcs[k], err);
                                if (fd < 0)
                                        return fd;
                                pr->lower_fds[k] = fd;
                        }
                        if (op->flags & NSR_OPF_VERIFY) {
                                /* Project mode resolved this dir before it
                                 * created anything; if the path now leads
                                 * elsewhere, something swapped it. */
                                struct stat st;
                                if (n == 0 || fstat(pr->lower_fds[0], &st) < 0 || st.st_dev != op->verify_dev ||
                                    st.st_ino != op->verify_ino)
                                        return nsr_error_setx(err, ESTALE,
                                                              "%s changed while the sandbox was being built", op->dest);
                        }
                        /* Below the gate's dir: opened by do_overlay. */
                        pr->gated =
                                op->type == NSR_OP_OVERLAY && below_gate(b, op->source) && below_gate(b, op->workdir);
                        if (op->type == NSR_OP_OVERLAY && !pr->gated) {
                                int r = open_upper_work(op, pr, err);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        return 0;
}

static void prepared_free(prepared *pr, size_t n) {
        for (size_t i = 0; pr && i < n; i++) {
                safe_close(pr[i].tree);
                for (size_t k = 0; k < pr[i].n_lower; k++)
                        safe_close(pr[i].lower_fds[k]);
                free(pr[i].lower_fds);
                safe_close(pr[i].upper_fd);
                safe_close(pr[i].work_fd);
                for (size_t k = 0; k < ROOTFS_KERN_MAX; k++)
                        safe_close(pr[i].kern[k]);
                safe_close(pr[i].src_fd);
        }
        free(pr);
}

/* bwrap's message for a --remount-ro that failed with e. */
static int remount_error(nsr_error *err, int e, const char *dest) {
        _cleanup_free_ char *n = newroot_path(dest);
        if (e == EINVAL)
                /* Not the root of a mount. */
                return nsr_error_setx(err, EINVAL, "Can't remount readonly on %s: Unable to find \"%s\" in mount table",
                                      dest, n);
        return nsr_error_setx(err, e,
                              "Can't remount readonly on %s: Unable to remount destination \"%s\" with correct "
                              "flags: %s",
                              dest, n, rootfs_mount_strerror(e));
}

/* The --remount-ro that follows a mount's op on its dest (see
 * remount_follows), done on the mount before it is attached: the same
 * flag on the same mount, without resolving the dest once more. */
static int fold_remount(builder *b, int mnt, const nsr_op *op, nsr_error *err) {
        if (!b->fold_ro)
                return 0;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
        if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return remount_error(err, errno, op->dest);
        b->folded = true;
        return 0;
}

static int do_bind(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        if (pr->skipped)
                return 0;
        _cleanup_close_ int target = rootfs_open_dest(b, op, pr->is_dir ? DEST_DIR : DEST_FILE, -1, false, true, err);
        if (target < 0)
                return target;
        int r = 0;
        if (pr->ro_done)
                b->folded = b->fold_ro; /* set with the clone (prepare_sources) */
        else
                r = fold_remount(b, pr->tree, op, err);
        if (r < 0)
                return r;
        r = rootfs_attach(pr->tree, target);
        if (r < 0) {
                _cleanup_free_ char *real =
                        pr->from_null ? nsr_strdup("/dev/null")
                                      : fd_real_path(pr->src_of >= 0 ? b->prep[pr->src_of].src_fd : pr->src_fd);
                return rootfs_bind_error(err, -r, real, op->dest);
        }
        pr->tree = safe_close(pr->tree);
        if (!pr->src_kept)
                pr->src_fd = safe_close(pr->src_fd);
        return 0;
}

static int do_remount_ro(builder *b, const nsr_op *op, nsr_error *err) {
        /* The destination must exist; its parents are made all the same,
         * as bwrap does. */
        _cleanup_close_ int fd = rootfs_open_dest(b, op, DEST_EXISTING, -1, false, true, err);
        if (fd < 0)
                return fd;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return remount_error(err, errno, op->dest);
        return 0;
}

static int fchmod_path(int fd, mode_t mode) {
        /* fsmount() gives an O_PATH fd, which fchmod() refuses; fchmodat2()
         * (Linux 6.6) takes it as is and spares a walk through /proc. */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
        if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
                return 0;
        if (errno != ENOSYS && errno != EINVAL)
                return -1;
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        return chmod(p, mode);
}

/* Whether op draws from the shared tmpfs (see NSR_OPF_SHARED_TMP). */
static bool op_is_shared(const nsr_op *op) {
        return (op->flags & NSR_OPF_SHARED_TMP) &&
               (op->type == NSR_OP_TMPFS || op->type == NSR_OP_DEV || op->type == NSR_OP_TMP_OVERLAY);
}

/* A new dir of the shared tmpfs with exactly mode (no umask), cloned into
 * a detached mount to be attached where the op goes: the clone is the same
 * superblock, so what is written there counts against the one size. */
static int shared_tree(builder *b, mode_t mode) {
        char name[32];
        snprintf(name, sizeof(name), "%u", b->n_shared++);
        if (mkdirat(b->shared, name, 0700) < 0)
                return -errno;
        _cleanup_close_ int fd = openat(b->shared, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fchmod_path(fd, mode) < 0)
                return -errno;
        return rootfs_clone_tree(fd, "", false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

/* A tmpfs for op: a dir of the shared one, or a superblock of its own. */
int rootfs_op_tmpfs(builder *b, const nsr_op *op, mode_t mode) {
        if (op_is_shared(op) && b->shared >= 0)
                return shared_tree(b, mode);
        char m[32], size[32];
        snprintf(m, sizeof(m), "%#o", (unsigned) mode);
        snprintf(size, sizeof(size), "%" PRIu64, op->size);
        const char *opts[] = { "mode", m, op->size ? "size" : NULL, size, NULL };
        return rootfs_new_fs("tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

static int do_tmpfs(builder *b, const nsr_op *op, nsr_error *err) {
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_DIR, -1, false, true, err);
        if (target < 0)
                return target;
        const char *n = op->dest;
        _cleanup_close_ int mnt = rootfs_op_tmpfs(b, op, nsr_op_perms(op));
        if (mnt < 0)
                return rootfs_mount_error(err, -mnt, "Can't mount tmpfs on %s", n);
        int r = fold_remount(b, mnt, op, err);
        if (r < 0)
                return r;
        r = rootfs_attach(mnt, target);
        if (r < 0)
                return rootfs_mount_error(err, -r, "Can't mount tmpfs on %s", n);
        return 0;
}

/* The option string a failed overlay's message shows, in bwrap's layout,
 * each layer named by its host path (bwrap 0.12 shows /proc/self/fd/N
 * there, which tells the user nothing). Made only for a message: each name
 * is a readlink. */
static char *overlay_shown(const nsr_op *op, const prepared *pr, const char *upper_name, const char *work_name) {
        _cleanup_strv_free_ char **top_first = NULL;
        for (size_t k = pr->n_lower; k > 0; k--)
                nsr_strv_push(&top_first, fd_real_path(pr->lower_fds[k - 1]));
        size_t n = nsr_strv_length(top_first);
        if (op->type == NSR_OP_TMP_OVERLAY) {
                _cleanup_free_ char *lower = nsr_overlay_options("", NULL, NULL, top_first, n);
                return nsr_asprintf("upperdir=/%s,workdir=/%s,%s", upper_name, work_name, lower);
        }
        _cleanup_free_ char *upper = NULL, *work = NULL;
        /* A gated op's dirs are named by the op: in place, the gate's dir
         * is a detached clone, whose paths would not name the host's dirs
         * (project mode made them, and they lead nowhere else: below_gate). */
        if (op->type == NSR_OP_OVERLAY) {
                upper = pr->gated ? nsr_strdup(op->source) : fd_real_path(pr->upper_fd);
                work = pr->gated ? nsr_strdup(op->workdir) : fd_real_path(pr->work_fd);
        }
        return nsr_overlay_options("", upper, work, top_first, n);
}

static int do_overlay(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_DIR, -1, false, true, err);
        if (target < 0)
                return target;

        /* The mount goes through fsconfig, one layer at a time, naming
         * each layer by its O_PATH fd. */
        _cleanup_strv_free_ char **fd_paths = NULL;
        for (size_t k = pr->n_lower; k > 0; k--)
                nsr_strv_push(&fd_paths, nsr_asprintf("/proc/self/fd/%d", pr->lower_fds[k - 1]));
        char upper_name[64] = "", work_name[64] = "";
        _cleanup_free_ char *upper = NULL, *work = NULL;
        if (pr->gated && pr->upper_fd < 0) {
                int r = open_gated(b, op, pr, err);
                if (r < 0)
                        return r;
        }
        if (op->type == NSR_OP_OVERLAY) {
                upper = nsr_asprintf("/proc/self/fd/%d", pr->upper_fd);
                work = nsr_asprintf("/proc/self/fd/%d", pr->work_fd);
        } else if (op->type == NSR_OP_TMP_OVERLAY) {
                unsigned i = b->n_tmp_overlay++;
                /* A shared one keeps its layer in the shared tmpfs. */
                bool shared = op_is_shared(op) && b->shared >= 0;
                int dir = shared ? b->shared : b->scratch;
                snprintf(upper_name, sizeof(upper_name), "tmp-overlay-upper-%u", i);
                snprintf(work_name, sizeof(work_name), "tmp-overlay-work-%u", i);
                if (mkdirat(dir, upper_name, 0755) < 0)
                        return nsr_error_set(err, errno, "Creating --tmp-overlay upperdir failed");
                if (mkdirat(dir, work_name, 0755) < 0)
                        return nsr_error_set(err, errno, "Creating --tmp-overlay workdir failed");
                /* By the fd: in place, dir is a detached mount. */
                upper = nsr_asprintf("/proc/self/fd/%d/%s", dir, upper_name);
                work = nsr_asprintf("/proc/self/fd/%d/%s", dir, work_name);
        }
        const char *n = op->dest;

        _cleanup_close_ int fs = fsopen("overlay", FSOPEN_CLOEXEC);
        int r = fs < 0 ? -errno : 0;
        if (r == 0 && fsconfig(fs, FSCONFIG_SET_STRING, "source", "overlay", 0) < 0)
                r = -errno;
        for (size_t k = 0; r == 0 && fd_paths && fd_paths[k]; k++)
                if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", fd_paths[k], 0) < 0)
                        r = -errno;
        if (r == -EINVAL && fs >= 0) {
                /* Kernels before 6.8 have no "lowerdir+": one string. The
                 * fd paths contain none of the characters that need
                 * escaping. */
                _cleanup_free_ char *lower = nsr_overlay_options("", NULL, NULL, fd_paths, nsr_strv_length(fd_paths));
                /* lower is "lowerdir=...,userxattr": take the value. */
                char *comma = strrchr(lower, ',');
                if (comma)
                        *comma = '\0';
                r = fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lower + strlen("lowerdir="), 0) < 0 ? -errno : 0;
        }
        if (r == 0 && upper && fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0)
                r = -errno;
        if (r == 0 && work && fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) < 0)
                r = -errno;
        if (r == 0 && fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
                r = -errno;
        if (r == 0 && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                r = -errno;
        _cleanup_close_ int mnt = -1;
        if (r == 0) {
                /* nosuid and nodev, as bwrap 0.12 mounts its overlays. */
                mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
                if (mnt < 0)
                        r = -errno;
        }
        if (r == 0)
                r = rootfs_attach(mnt, target);
        _cleanup_free_ char *shown = r < 0 ? overlay_shown(op, pr, upper_name, work_name) : NULL;
        if (r == -ELOOP)
                return nsr_error_setxk(
                        err, NSR_ERR_OVERLAY_MOUNT, ELOOP,
                        "Can't make overlay mount on %s with options %s: Overlay directories may not overlap", n,
                        shown);
        if (r < 0) {
                char msg[NSR_ERROR_MSG_MAX];
                snprintf(msg, sizeof(msg), "Can't make overlay mount on %s with options %s", n, shown);
                return nsr_error_setxk(err, NSR_ERR_OVERLAY_MOUNT, -r, "%s: %s", msg, rootfs_mount_strerror(-r));
        }
        return 0;
}

/* A detached tmpfs whose root is 0755. No mode option: the mount table
 * then shows the same options as bwrap's root. */
/* size 0: the kernel's default (half the RAM). */
static int new_tmpfs_0755(int *ret, uint64_t size) {
        char sz[32];
        snprintf(sz, sizeof(sz), "%" PRIu64, size);
        const char *opts[] = { size ? "size" : NULL, sz, NULL };
        int mnt = rootfs_new_fs("tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        if (mnt < 0)
                return mnt;
        if (fchmod_path(mnt, 0755) < 0) {
                int r = -errno;
                close(mnt);
                return r;
        }
        *ret = mnt;
        return 0;
}

/* The scratch tmpfs holds the --tmp-overlay upper layers: its size is
 * theirs when each has one (project mode caps the home layer), else the
 * kernel's default. */
static uint64_t scratch_size(const nsr_plan *plan, const nsr_mount_ctx *ctx) {
        /* The sandbox's resolv.conf (one page) is made there too. */
        uint64_t total = ctx->resolv_conf ? 64 * 1024 : 0;
        for (size_t i = 0; i < plan->n_ops; i++) {
                nsr_op_type t = plan->ops[i].type;
                if (t == NSR_OP_BIND_DATA || t == NSR_OP_RO_BIND_DATA)
                        return 0;
                if (t != NSR_OP_TMP_OVERLAY || op_is_shared(&plan->ops[i]))
                        continue;
                if (!plan->ops[i].size || total > UINT64_MAX / 2)
                        return 0;
                total += plan->ops[i].size;
        }
        return total;
}

/* The shared tmpfs's size: the largest of its ops' (0 when one has none:
 * the kernel's default); *ret_any: whether any op draws from it. */
/* The smallest shared tmpfs that also holds the sandbox's resolv.conf. */
#define RESOLV_CONF_SHARED_MIN (UINT64_C(1) << 20)

static uint64_t shared_size(const nsr_plan *plan, bool *ret_any) {
        uint64_t size = 0;
        bool any = false, unsized = false;
        for (size_t i = 0; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                if (!op_is_shared(op))
                        continue;
                any = true;
                unsized |= !op->size;
                if (op->size > size)
                        size = op->size;
        }
        *ret_any = any;
        return unsized ? 0 : size;
}

/* Whether an op needs room for files of its own in the scratch tmpfs
 * (--bind-data, a --tmp-overlay's layer outside the shared tmpfs,
 * resolv.conf). *ret_shared: whether an op draws from the shared tmpfs,
 * which the pivot mounts in the scratch too. */
static bool plan_needs_files(const nsr_plan *plan, const nsr_mount_ctx *ctx, bool *ret_shared) {
        uint64_t shared = shared_size(plan, ret_shared);
        /* The sandbox's resolv.conf goes in the shared tmpfs when there is
         * one (place_resolv_conf): a superblock less to make, and a
         * detached tree less for pid 1 to let go of before the command
         * runs (a grace period). Not when its page would be a noticeable
         * part of the command's budget (--tmp-size 4k would leave none). */
        if (ctx->resolv_conf && (!*ret_shared || (shared && shared < RESOLV_CONF_SHARED_MIN)))
                return true;
        for (size_t i = 0; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                if (op->type == NSR_OP_BIND_DATA || op->type == NSR_OP_RO_BIND_DATA ||
                    (op->type == NSR_OP_TMP_OVERLAY && !op_is_shared(op)))
                        return true;
        }
        return false;
}

/* The shared tmpfs on /tmp/shared of the old root, beside the new root
 * (in place, a detached mount of its own): never visible itself, only
 * through the dirs bound from it. Its inodes
 * are bounded too (one per 4 KiB of the size): each costs kernel memory
 * that the size does not count, so a sandbox making millions of empty
 * files would reach the host's memory past the size. */
static int mount_shared(builder *b, nsr_error *err) {
        bool any;
        uint64_t size = shared_size(b->plan, &any);
        if (!any)
                return 0;
        char sz[32], inodes[32];
        snprintf(sz, sizeof(sz), "%" PRIu64, size);
        uint64_t n = size / 4096;
        snprintf(inodes, sizeof(inodes), "%" PRIu64, n < 4096 ? 4096 : n);
        const char *opts[] = { "mode", "0755", "size", sz, "nr_inodes", inodes, NULL };
        if (!size)
                opts[2] = NULL; /* unsized: the kernel's defaults for both */
        _cleanup_close_ int mnt = rootfs_new_fs("tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        int r = mnt < 0 ? mnt : 0;
        if (r == 0 && b->in_place)
                b->shared = TAKE_FD(mnt);
        else if (r == 0) {
                if (mkdirat(b->scratch, SHARED_NAME, 0755) < 0 ||
                    move_mount(mnt, "", b->scratch, SHARED_NAME, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
                    (b->shared = openat(b->scratch, SHARED_NAME, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
                        r = -errno;
        }
        if (r < 0)
                return nsr_error_setxk(err, NSR_ERR_USERNS_SETUP, -r, "Failed to mount the shared tmpfs: %s",
                                       rootfs_mount_strerror(-r));
        return 0;
}

/* The new root, through the path it is mounted on (so a mount stacked on
 * it later is seen). */
static int open_root(const builder *b) {
        if (b->scratch >= 0)
                return openat(b->scratch, NEWROOT_NAME, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return open(SCRATCH, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static bool op_targets_root(const char *dest) {
        _cleanup_free_ char *n = nsr_path_normalize(dest);
        return streq(n, "/") || streq(n, ".");
}

static int do_hostname(const nsr_op *op, nsr_error *err) {
        if (sethostname(op->dest, strlen(op->dest)) < 0)
                return nsr_error_set(err, errno, "Can't set hostname to %s", op->dest);
        return 0;
}

static int run_slot(builder *b, const nsr_op *op, nsr_error *err);

static int run_op(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        switch (op->type) {
        case NSR_OP_BIND:
        case NSR_OP_RO_BIND:
        case NSR_OP_DEV_BIND:
        case NSR_OP_BIND_FD:
        case NSR_OP_RO_BIND_FD:
                return do_bind(b, op, pr, err);
        case NSR_OP_REMOUNT_RO:
                return do_remount_ro(b, op, err);
        case NSR_OP_OVERLAY:
        case NSR_OP_TMP_OVERLAY:
        case NSR_OP_RO_OVERLAY:
                return do_overlay(b, op, pr, err);
        case NSR_OP_PROC:
                return rootfs_do_proc(b, op, pr, err);
        case NSR_OP_DEV:
                return rootfs_do_dev(b, op, pr, err);
        case NSR_OP_TMPFS:
                return do_tmpfs(b, op, err);
        case NSR_OP_MQUEUE:
                return rootfs_do_mqueue(b, op, err);
        case NSR_OP_DIR:
                return rootfs_do_dir(b, op, err);
        case NSR_OP_FILE:
                return rootfs_do_file(b, op, err);
        case NSR_OP_BIND_DATA:
        case NSR_OP_RO_BIND_DATA:
                return rootfs_do_bind_data(b, op, err);
        case NSR_OP_SYMLINK:
                return rootfs_do_symlink(b, op, err);
        case NSR_OP_CHMOD:
                return rootfs_do_chmod(b, op, err);
        case NSR_OP_HOSTNAME:
                return do_hostname(op, err);
        case NSR_OP_SLOT:
                return run_slot(b, op, err);
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
        return nsr_error_setx(err, EINVAL, "Unexpected type %d", (int) op->type);
}

/* Whether a slot's op is one a path's hiding makes (project/profile.c,
 * hide and mask_dir): an empty tmpfs, /dev/null bound and then made
 * read-only, a read-only remount, each on an absolute path; in place,
 * never on "/" or /proc, which root_in_place would have refused (a --hide
 * that may name them makes the plan say so: nsr_plan.slots_near_root). */
static bool slot_op_fits(const builder *b, const nsr_plan *sp, size_t j) {
        const nsr_op *op = &sp->ops[j];
        if (!op->dest || op->dest[0] != '/' || (op->flags & (NSR_OPF_TRY | NSR_OPF_VERIFY)))
                return false;
        if (op->type == NSR_OP_DEV_BIND) {
                /* Read-only at once (builder.null_src). */
                if (!op->source || !streq(op->source, "/dev/null") || !remount_follows(sp, j))
                        return false;
        } else if (op->type != NSR_OP_TMPFS && op->type != NSR_OP_REMOUNT_RO)
                return false;
        if (!b->in_place)
                return true;
        _cleanup_free_ char *d = nsr_path_normalize_dotdot(op->dest);
        return !streq(d, "/") && !streq(d, "/proc");
}

/* The hidden files' source, while the host's /dev is as it was: in place,
 * a detached clone of its /dev/null, nosuid and read-only, as each of
 * their binds is (the flags the root gets later do not reach it); for the
 * pivot, which leaves the host's tree alone, the file itself, each clone
 * flagged as it is made. A failure is told only if a bind needs it. */
static void open_null_src(builder *b) {
        unsigned attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_RDONLY;
        int fd = open("/dev/null", O_PATH | O_CLOEXEC);
        if (fd < 0) {
                b->null_src = -errno;
                return;
        }
        if (!b->in_place) {
                b->null_src = fd;
                b->null_attrs = attrs;
                return;
        }
        b->null_src = rootfs_clone_tree(fd, "", true, attrs);
        close(fd);
}

/* Which op of the plan, counted from 1, op i is (and, in a slot, the op
 * it was running there, builder.slot_at) with the slots filled: as the
 * monitor holds the plan, which an error names an op of by that number
 * (project/launching.c). Ops before the first slot keep theirs. */
static unsigned filled_number(const builder *b, size_t i) {
        size_t n = 0;
        for (size_t k = 0; k < i; k++) {
                const nsr_op *op = &b->plan->ops[k];
                if (op->type != NSR_OP_SLOT)
                        n++;
                else if (op->slot < b->n_slots)
                        n += b->slots[op->slot]->n_ops;
        }
        if (b->plan->ops[i].type == NSR_OP_SLOT)
                n += b->slot_at;
        return (unsigned) (n + 1);
}

/* The slots' ops (nsr_mount_ctx.take_slots), once: each checked before
 * any of them is mounted. */
static int take_slots(builder *b, nsr_error *err) {
        if (!b->has_slots || b->slots_taken)
                return 0;
        b->slots_taken = true;
        int r = b->ctx->take_slots(b->ctx->take_slots_data, &b->slots, &b->n_slots, err);
        if (r < 0)
                return r;
        for (size_t k = 0; k < b->n_slots; k++)
                for (size_t j = 0; j < b->slots[k]->n_ops; j++) {
                        const nsr_op *op = &b->slots[k]->ops[j];
                        if (!slot_op_fits(b, b->slots[k], j))
                                return nsr_error_setx(err, EINVAL,
                                                      "a hidden path's mount (%s on %s) does not fit the sandbox's "
                                                      "root: the command did not run",
                                                      nsr_op_type_to_string(op->type), op->dest ? op->dest : "nothing");
                }
        return 0;
}

/* A slot's ops, where the plan holds it. Each is prepared as it runs (a
 * hidden file's bind is a clone of builder.null_src), so thousands of
 * them hold no more fds than one. */
static int run_slot(builder *b, const nsr_op *slot, nsr_error *err) {
        b->slot_at = 0;
        int r = take_slots(b, err);
        if (r < 0)
                return r;
        if (slot->slot >= b->n_slots)
                return nsr_error_setx(err, EINVAL, "the plan's hidden paths have no place: the command did not run");
        const nsr_plan *sp = b->slots[slot->slot];
        for (size_t j = 0; j < sp->n_ops; j++) {
                const nsr_op *op = &sp->ops[j];
                b->slot_at = j;
                prepared pr = { .tree = -1, .upper_fd = -1, .work_fd = -1, .src_fd = -1, .src_of = -1 };
                for (size_t k = 0; k < ROOTFS_KERN_MAX; k++)
                        pr.kern[k] = -1;
                b->fold_ro = pr.fold_ro = remount_follows(sp, j);
                b->folded = false;
                if (op->type == NSR_OP_DEV_BIND) {
                        if (b->null_src < 0)
                                return nsr_error_set(err, -b->null_src, "Can't find source path /dev/null");
                        /* As prepare_sources clones a file's source, its
                         * --remount-ro folded in (slot_op_fits). */
                        pr.from_null = pr.ro_done = true;
                        pr.tree = rootfs_clone_tree(b->null_src, "", true, b->null_attrs);
                        if (pr.tree < 0)
                                return rootfs_mount_error(err, -pr.tree, "Can't bind mount /dev/null on %s", op->dest);
                }
                r = run_op(b, op, &pr, err);
                safe_close(pr.tree);
                if (r < 0)
                        return r;
                /* The pivot's root, covered by a mount on "/" (--hide /). */
                if (op_targets_root(op->dest)) {
                        safe_close(b->root);
                        b->root = open_root(b);
                        if (b->root < 0)
                                return nsr_error_set(err, errno, "Creating newroot failed");
                }
                if (b->folded)
                        j++; /* its --remount-ro is done */
        }
        /* The slot op itself folds nothing into the op after it. */
        b->fold_ro = b->folded = false;
        return 0;
}

/* The sandbox's /etc/resolv.conf, after every op: a file of nsrun's,
 * read-only, mounted on whatever is there. A host whose resolv.conf is a
 * symlink (systemd-resolved's stub-resolv.conf under /run, often absent
 * or different inside) must not decide what the sandbox reads, so the
 * mount goes on the link itself: move_mount onto an O_PATH|O_NOFOLLOW fd
 * of a symlink mounts there, and a lookup that reaches the link crosses
 * into the mount before it would follow the link. A missing file is made
 * (and /etc, in a root that has none). */
static int place_resolv_conf(builder *b, nsr_error *err) {
        static const char name[] = "resolv.conf";
        const char *data = b->ctx->resolv_conf;
        /* The scratch tmpfs, or the shared one (plan_needs_files): the
         * root of either is never visible, only this file's bind. */
        int dir = b->scratch >= 0 ? b->scratch : b->shared;
        _cleanup_close_ int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
        int r = fd < 0 ? -errno : nsr_write_all(fd, data, strlen(data));
        if (r < 0)
                return nsr_error_set(err, -r, "Can't write the sandbox's /etc/resolv.conf");
        _cleanup_close_ int etc = rootfs_open_in_root(b->root, "/etc", O_PATH | O_DIRECTORY);
        if (etc == -ENOENT)
                etc = make_parents(b->root, "/etc", 0755);
        if (etc < 0)
                return nsr_error_set(err, -etc, "Can't open /etc for resolv.conf");
        _cleanup_close_ int target = openat(etc, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (target < 0 && errno == ENOENT) {
                int made = openat(etc, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (made >= 0)
                        close(made);
                target = openat(etc, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        }
        if (target < 0)
                return nsr_error_set(err, errno, "Can't create /etc/resolv.conf");
        struct stat st;
        if (fstat(target, &st) < 0)
                return nsr_error_set(err, errno, "Can't get type of /etc/resolv.conf");
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
                return nsr_error_setx(err, EINVAL, "/etc/resolv.conf is neither a file nor a symlink");
        _cleanup_close_ int tree =
                rootfs_clone_tree(dir, name, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_RDONLY);
        r = tree < 0 ? tree : rootfs_attach(tree, target);
        (void) unlinkat(dir, name, 0);
        if (r < 0)
                return rootfs_mount_error(err, -r, "Can't mount the sandbox's /etc/resolv.conf");
        return 0;
}

/* Whether the root can be built in place: the first op binds the whole "/"
 * on "/", so the tmpfs root would be covered at once and never seen. The
 * mount namespace's own copy of the host's tree is then the root, with
 * that op's flags set on all of it by one recursive mount_setattr. That
 * spares cloning the tree, a tmpfs, the pivot and detaching the old root
 * (0.1 to 0.2 ms, a tenth of a minimal launch), and shows the command the
 * same mounts with the same flags. (Only an unbindable mount, which a bind
 * leaves out, would stay: the command sees what the host shows its user.)
 *
 * What that takes:
 *   - Every host source is cloned before the flags are set, as the build
 *     always does (prepare_sources), and nothing reads the host's tree by
 *     path after that: the kernel's nodes and procfs are prepared too.
 *   - No later op mounts on "/" (a lookup of "/" would not cross into
 *     that mount) or replaces /proc (overlay layers are named through
 *     /proc/self/fd).
 *   - An --overlay's upper dir must stay writable, and it lives on a
 *     mount the flags make read-only: only one below the gate's dir
 *     qualifies, opened from a clone of that dir made first.
 *   - The scratch and shared tmpfs and that clone are detached mounts,
 *     never attached. Each is a tree of its own, since an overlay takes a
 *     layer from a detached mount only at the root of its tree; each tree
 *     costs an RCU grace period when it goes (30 to 40 us here), which is
 *     why the scratch is made only for files (plan_needs_files).
 * The last two need a kernel that clones from and layers overlays on
 * detached mounts (both came in Linux 6.15): detached_usable() asks, and
 * the pivot is kept where it says no. */
static bool root_in_place(const builder *b, bool *ret_gated) {
        const nsr_plan *plan = b->plan;
        *ret_gated = false;
        /* A test hook: the pivot whatever the plan, to compare the two. */
        if (nsr_test_hook_on("NSRUN_TEST_ROOT_PIVOT"))
                return false;
        /* A slot whose ops may land on "/" or /proc (checked as they
         * come: slot_op_fits). */
        if (plan->n_ops == 0 || plan->slots_near_root)
                return false;
        const nsr_op *first = &plan->ops[0];
        if (first->type != NSR_OP_BIND && first->type != NSR_OP_RO_BIND && first->type != NSR_OP_DEV_BIND)
                return false;
        if ((first->flags & NSR_OPF_VERIFY) || !first->source || !first->dest)
                return false;
        _cleanup_free_ char *src = nsr_path_normalize(first->source);
        if (!streq(src, "/") || !op_targets_root(first->dest))
                return false;
        for (size_t i = 1; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                if (op->type == NSR_OP_HOSTNAME || !op->dest)
                        continue;
                _cleanup_free_ char *d = nsr_path_normalize(op->dest);
                if (streq(d, "/") || streq(d, ".") || (streq(d, "/proc") && op->type != NSR_OP_PROC))
                        return false; /* on "/" (op_targets_root), or over /proc */
                if (op->type == NSR_OP_OVERLAY) {
                        if (!below_gate(b, op->source) || !below_gate(b, op->workdir))
                                return false;
                        *ret_gated = true;
                }
        }
        return true;
}

/* Whether this kernel clones from and layers overlays on detached mounts.
 * The release says: trying would cost a detached tree that goes (above). */
static bool detached_usable(void) {
        /* A test hook: as on a kernel before 6.15. */
        return !nsr_test_hook_on("NSRUN_TEST_NO_DETACHED") && nsr_kernel_at_least(6, 15);
}

/* A gated --overlay's dirs come from a detached clone of the gate's dir,
 * made before the flags are set: recursive, so that a run dir on a mount
 * of its own below it is found as by a path. */
static int gate_detached(builder *b, nsr_error *err) {
        int tree = rootfs_clone_tree(b->gate_dir, "", true, 0);
        if (tree < 0)
                return rootfs_mount_error(err, -tree, "Can't bind mount %s", b->ctx->gate_under);
        safe_close(b->gate_dir);
        b->gate_dir = tree;
        return 0;
}

/* The fresh procfs a --proc op mounts, when the caller's writes through
 * ctx.proc_after (its nested namespace's id maps, which need a procfs of
 * its own pid namespace) may go through it: nothing mounted after it may
 * land in it or make it read-only, and no hidden path (a slot, unknown
 * until taken) may either. Its fd, or -1. The build attaches it, so the
 * caller's close of the dup costs nothing; a clone of the host's /proc
 * would be a detached tree, whose last close waits for an RCU grace
 * period (rootfs.h). */
static int fresh_proc_for_ids(const builder *b) {
        const nsr_plan *plan = b->plan;
        if (!b->ctx->proc_after_ids_only || b->has_slots)
                return -1;
        ssize_t at = -1;
        _cleanup_free_ char *procdir = NULL;
        for (size_t i = 1; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                if (op->type == NSR_OP_REMOUNT_RO)
                        return -1;
                if (at < 0 && op->type == NSR_OP_PROC && b->prep[i].proc_fresh && b->prep[i].kern[0] >= 0 && op->dest) {
                        at = (ssize_t) i;
                        procdir = nsr_path_normalize(op->dest);
                        continue;
                }
                if (at >= 0 && op->dest) {
                        _cleanup_free_ char *d = nsr_path_normalize(op->dest);
                        if (nsr_path_under(d, procdir))
                                return -1;
                }
        }
        return at < 0 ? -1 : b->prep[at].kern[0];
}

/* The first op's flags on the namespace's tree, the root from then on. */
static int root_attrs_in_place(builder *b, nsr_error *err) {
        const nsr_op *op = &b->plan->ops[0];
        int *proc = b->ctx->proc_after;
        int fresh = proc && *proc >= 0 ? fresh_proc_for_ids(b) : -1;
        if (fresh >= 0) {
                int c = fcntl(fresh, F_DUPFD_CLOEXEC, 3);
                if (c < 0)
                        return nsr_error_set(err, errno, "Can't access /proc");
                safe_close(*proc);
                *proc = c;
                if (b->ctx->proc_after_fresh)
                        *b->ctx->proc_after_fresh = true;
        } else if (proc && *proc >= 0) {
                /* Recursive: a read-only /proc/sys of a container's stays so. */
                int c = rootfs_clone_tree(*proc, "", true, 0);
                if (c < 0)
                        return rootfs_mount_error(err, -c, "Can't bind mount /proc");
                safe_close(*proc);
                *proc = c;
        }
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID };
        if (op->type != NSR_OP_DEV_BIND)
                attr.attr_set |= MOUNT_ATTR_NODEV;
        if (op->type == NSR_OP_RO_BIND)
                attr.attr_set |= MOUNT_ATTR_RDONLY;
        if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof(attr)) < 0)
                return rootfs_mount_error(err, errno, "Can't bind mount / on %s", op->dest);
        b->root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (b->root < 0)
                return nsr_error_set(err, errno, "Creating newroot failed");
        return 0;
}

/* For the pivot: the scratch tmpfs on /tmp of the old root, with the new
 * root's dir and the shared tmpfs in it. */
static int place_scratch(builder *b, int mnt, nsr_error *err) {
        if (move_mount(mnt, "", AT_FDCWD, SCRATCH, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return nsr_error_setxk(err, NSR_ERR_USERNS_SETUP, errno, "Failed to mount tmpfs: %s",
                                       rootfs_mount_strerror(errno));
        b->scratch = open(SCRATCH, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (b->scratch < 0 || mkdirat(b->scratch, NEWROOT_NAME, 0755) < 0)
                return nsr_error_set(err, errno, "Creating newroot failed");
        return mount_shared(b, err);
}

int nsr_mount_build_root(const nsr_plan *plan, const nsr_mount_ctx *ctx, nsr_error *err) {
        builder b = {
                .plan = plan, .ctx = ctx, .scratch = -1, .root = -1, .shared = -1, .gate_dir = -1, .null_src = -EBADF
        };
        _cleanup_close_ int scratch = -1;
        bool shared = false, files = plan_needs_files(plan, ctx, &shared), gated = false, needs_scratch;
        int r;

        /* What a slot stands for is unknown (a hidden path, say): no root
         * without it. */
        b.has_slots = nsr_plan_has_slots(plan);
        if (b.has_slots && !ctx->take_slots)
                return nsr_error_setx(err, EINVAL, "the plan's hidden paths were never looked up: nothing was mounted");
        b.prep = nsr_malloc0((plan->n_ops + 1) * sizeof(prepared));
        for (size_t i = 0; i < plan->n_ops; i++) {
                b.prep[i] = (prepared){ .tree = -1, .upper_fd = -1, .work_fd = -1, .src_fd = -1, .src_of = -1 };
                for (size_t k = 0; k < ROOTFS_KERN_MAX; k++)
                        b.prep[i].kern[k] = -1;
        }

        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC | MS_SILENT, NULL) < 0) {
                r = nsr_error_setxk(err, NSR_ERR_USERNS_SETUP, errno, "Failed to make / slave: %s",
                                    rootfs_mount_strerror(errno));
                goto out;
        }

        if (ctx->gate_fd >= 0 && ctx->gate_under) {
                b.gate_dir = open(ctx->gate_under, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (b.gate_dir < 0) {
                        r = nsr_error_set(err, errno, "Can't find source path %s", ctx->gate_under);
                        goto out;
                }
        }

        b.in_place = root_in_place(&b, &gated);
        if (b.in_place && (files || shared || gated || b.has_slots))
                b.in_place = detached_usable();

        /* The scratch tmpfs, when an op needs room for files of its own,
         * or, for the pivot, holds the shared tmpfs; a launch that needs
         * none saves making (and tearing down) that superblock. Made
         * detached: in place, it stays so. */
        needs_scratch = files || (shared && !b.in_place);
        if (needs_scratch) {
                r = new_tmpfs_0755(&scratch, scratch_size(plan, ctx));
                if (r < 0) {
                        r = nsr_error_setxk(err, NSR_ERR_USERNS_SETUP, -r, "Failed to mount tmpfs: %s",
                                            rootfs_mount_strerror(-r));
                        goto out;
                }
                if (b.in_place)
                        b.scratch = TAKE_FD(scratch);
        }
        if (b.in_place && gated) {
                r = gate_detached(&b, err);
                if (r < 0)
                        goto out;
        }

        r = prepare_sources(&b, err);
        if (r < 0)
                goto out;
        if (b.has_slots)
                open_null_src(&b);

        if (needs_scratch && !b.in_place)
                r = place_scratch(&b, scratch, err);
        else if (shared && b.in_place)
                r = mount_shared(&b, err);
        if (r < 0)
                goto out;
        if (b.in_place) {
                r = root_attrs_in_place(&b, err);
                if (r < 0) {
                        if (err)
                                err->op = 1;
                        goto out;
                }
        } else {
                /* The new root is a tmpfs on /tmp of the old root (or on
                 * /tmp/newroot of the scratch), which the sandbox never
                 * sees. */
                _cleanup_close_ int mnt = -1;
                r = new_tmpfs_0755(&mnt, 0);
                if (r == 0 && move_mount(mnt, "", b.scratch >= 0 ? b.scratch : AT_FDCWD,
                                         b.scratch >= 0 ? NEWROOT_NAME : SCRATCH, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        r = -errno;
                if (r < 0) {
                        r = nsr_error_setx(err, -r, "setting up newroot bind: %s", rootfs_mount_strerror(-r));
                        goto out;
                }
                b.root = open_root(&b);
                if (b.root < 0) {
                        r = nsr_error_set(err, errno, "Creating newroot failed");
                        goto out;
                }
        }

        /* NSRUN_TIMING says which build it was (t764 checks). */
        nsr_timing_mark_now(plan->timing, b.in_place ? "child: root in place" : "child: root on a tmpfs");
        for (size_t i = b.in_place ? 1 : 0; i < plan->n_ops; i++) {
                b.fold_ro = b.prep[i].fold_ro;
                b.folded = false;
                r = run_op(&b, &plan->ops[i], &b.prep[i], err);
                if (r < 0) {
                        if (err)
                                err->op = filled_number(&b, i);
                        goto out;
                }
                /* A mount on "/" covers the root we hold an fd to; lookups
                 * starting from that fd would not see it. Re-open by path,
                 * which crosses into the top mount. */
                if (plan->ops[i].dest && op_targets_root(plan->ops[i].dest)) {
                        safe_close(b.root);
                        b.root = open_root(&b);
                        if (b.root < 0) {
                                r = nsr_error_set(err, errno, "Creating newroot failed");
                                goto out;
                        }
                }
                if (b.folded)
                        i++; /* its --remount-ro is done */
        }

        if (ctx->resolv_conf) {
                r = place_resolv_conf(&b, err);
                if (r < 0)
                        goto out;
        }
        /* With no --overlay op to wait for, the root is not done before
         * the monitor is. */
        r = pass_gate(&b, err);
        if (r < 0)
                goto out;

        /* Into the new root. pivot_root(".", ".") stacks the old root on
         * top of the new one; detaching "." then removes it, scratch
         * included, without ever needing a path for it. In place, the
         * root is where it was. */
        if (!b.in_place) {
                if (fchdir(b.root) < 0) {
                        r = nsr_error_set(err, errno, "chdir /newroot");
                        goto out;
                }
                if (nsr_pivot_root(".", ".") < 0) {
                        r = nsr_error_set(err, errno, "pivot_root(/newroot)");
                        goto out;
                }
                if (umount2(".", MNT_DETACH) < 0) {
                        r = nsr_error_set(err, errno, "umount old root");
                        goto out;
                }
        }
        if (chdir("/") < 0) {
                r = nsr_error_set(err, errno, "chdir /");
                goto out;
        }
        r = 0;
        if (b.in_place && ctx->detached_out) {
                int *out = ctx->detached_out;
                out[0] = TAKE_FD(b.scratch);
                out[1] = TAKE_FD(b.shared);
                if (gated)
                        out[2] = TAKE_FD(b.gate_dir);
                /* The hidden files' source, a detached clone in place
                 * (open_null_src): its close here was an RCU grace period
                 * on the child's way to the command. */
                if (b.null_src >= 0)
                        out[3] = TAKE_FD(b.null_src);
        }
out:
        prepared_free(b.prep, plan->n_ops);
        nsr_plan_slots_free(b.slots, b.n_slots);
        if (b.null_src >= 0)
                close(b.null_src);
        free(b.src_first);
        safe_close(b.gate_dir);
        safe_close(b.shared);
        safe_close(b.scratch);
        safe_close(b.root);
        return r;
}
