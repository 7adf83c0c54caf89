/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's file systems in the new root: --mqueue, --proc (a fresh
 * procfs with its sensitive files covered, or the old one renewed) and
 * --dev (a tmpfs with the usual nodes bound from the host, a devpts of
 * its own, the standard links). */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "sandbox/rootfs-internal.h"

int rootfs_do_mqueue(builder *b, const nsr_op *op, nsr_error *err) {
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_DIR, -1, false, true, err);
        if (target < 0)
                return target;
        const char *n = op->dest;
        _cleanup_close_ int mnt = rootfs_new_fs("mqueue", NULL, 0);
        int r = mnt < 0 ? mnt : rootfs_attach(mnt, target);
        if (r < 0)
                return rootfs_mount_error(err, -r, "Can't mount mqueue on %s", n);
        return 0;
}

/* Writable corners of procfs that would let the sandbox reach the host
 * kernel are made read-only, as bwrap does. n: how messages name proc. */
static int cover_proc(int proc, const char *n, nsr_error *err) {
        static const char *const covered[] = { "sys", "sysrq-trigger", "irq", "bus" };
        int r;
        for (size_t i = 0; i < ELEMENTSOF(covered); i++) {
                _cleanup_free_ char *full = nsr_asprintf("%s/%s", n, covered[i]);
                if (faccessat(proc, covered[i], W_OK, 0) < 0) {
                        if (errno == EACCES || errno == ENOENT || errno == EROFS)
                                continue;
                        return nsr_error_set(err, errno, "Can't access %s", full);
                }
                _cleanup_close_ int tree = rootfs_clone_tree(proc, covered[i], true,
                                                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
                _cleanup_close_ int sub = -1;
                if (tree >= 0)
                        sub = openat(proc, covered[i], O_PATH | O_CLOEXEC | O_NOFOLLOW);
                r = tree < 0 ? tree : sub < 0 ? -errno : rootfs_attach(tree, sub);
                if (r < 0)
                        return rootfs_bind_error(err, -r, covered[i], covered[i]);
        }
        return 0;
}

/* The procfs of a --proc op, made before any op: a fresh one, or, where
 * the kernel refuses a fresh one that would show more than the visible one
 * (locked overmounts inside a container or a root-run bwrap: nested), a
 * clone of the host's. */
int rootfs_prepare_proc(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        bool fresh = b->ctx->fresh_proc;
        if (fresh) {
                int mnt = rootfs_new_fs("proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NODEV);
                if (mnt == -EPERM && (op->flags & NSR_OPF_PROC_FALLBACK))
                        fresh = false;
                else if (mnt < 0)
                        return rootfs_mount_error(err, -mnt, "Can't mount proc on %s", op->dest);
                else
                        pr->kern[0] = mnt;
        }
        if (!fresh) {
                int tree = rootfs_clone_tree(AT_FDCWD, "/proc", true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
                if (tree < 0)
                        return rootfs_bind_error(err, -tree, "/proc", op->dest);
                pr->kern[0] = tree;
        }
        pr->proc_fresh = fresh;
        return 0;
}

int rootfs_do_proc(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_DIR, -1, false, true, err);
        if (target < 0)
                return target;
        const char *n = op->dest;
        int r = rootfs_attach(pr->kern[0], target);
        if (r < 0 && pr->proc_fresh)
                return rootfs_mount_error(err, -r, "Can't mount proc on %s", n);
        if (r < 0)
                return rootfs_bind_error(err, -r, "/proc", n);
        pr->kern[0] = safe_close(pr->kern[0]);
        _cleanup_close_ int proc = rootfs_open_in_root(b->root, op->dest, O_PATH | O_DIRECTORY);
        if (proc < 0)
                return nsr_error_set(err, -proc, "Can't access %s", n);
        return cover_proc(proc, n, err);
}

int nsr_rootfs_proc_renew(nsr_error *err) {
        _cleanup_close_ int target = open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (target < 0)
                return nsr_error_set(err, errno, "Can't access /proc");
        _cleanup_close_ int mnt = rootfs_new_fs("proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NODEV);
        int r = mnt < 0 ? mnt : rootfs_attach(mnt, target);
        if (r < 0)
                return rootfs_mount_error(err, -r, "Can't mount proc on /proc");
        _cleanup_close_ int proc = open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (proc < 0)
                return nsr_error_set(err, errno, "Can't access /proc");
        return cover_proc(proc, "/proc", err);
}

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
_Static_assert(ELEMENTSOF(dev_nodes) + 1 <= ROOTFS_KERN_MAX, "prepared.kern holds the nodes and the console");

/* The host's nodes for a --dev op, and its terminal for /dev/console,
 * cloned before any op runs (see builder.in_place). */
int rootfs_prepare_dev(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        (void) op;
        for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
                _cleanup_free_ char *host = nsr_asprintf("/dev/%s", dev_nodes[i]);
                pr->kern[i] = rootfs_clone_tree(AT_FDCWD, host, true, MOUNT_ATTR_NOSUID);
                if (pr->kern[i] < 0)
                        return rootfs_bind_error(err, -pr->kern[i], host, dev_nodes[i]);
        }
        if (b->ctx->host_tty && *b->ctx->host_tty) {
                int *tty = &pr->kern[ELEMENTSOF(dev_nodes)];
                *tty = rootfs_clone_tree(AT_FDCWD, b->ctx->host_tty, true, MOUNT_ATTR_NOSUID);
                if (*tty < 0)
                        return rootfs_bind_error(err, -*tty, b->ctx->host_tty, "console");
        }
        return 0;
}

int rootfs_do_dev(builder *b, const nsr_op *op, prepared *pr, nsr_error *err) {
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_DIR, -1, false, true, err);
        if (target < 0)
                return target;
        const char *n = op->dest;
        /* /dev/shm lives in this tmpfs: project mode caps its size. */
        _cleanup_close_ int mnt = rootfs_op_tmpfs(b, op, 0755);
        int r = mnt < 0 ? mnt : rootfs_attach(mnt, target);
        if (r < 0)
                return rootfs_mount_error(err, -r, "Can't mount tmpfs on %s", n);
        _cleanup_close_ int dev = rootfs_open_in_root(b->root, op->dest, O_PATH | O_DIRECTORY);
        if (dev < 0)
                return nsr_error_set(err, -dev, "Can't mkdir %s", op->dest);

        for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
                _cleanup_close_ int f =
                        openat(dev, dev_nodes[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
                if (f < 0)
                        return nsr_error_set(err, errno, "Can't create file %s/%s", op->dest, dev_nodes[i]);
                /* The fd that made the file names it as the target: no
                 * second open (six devices, twelve system calls less). */
                r = rootfs_attach(pr->kern[i], f);
                if (r < 0) {
                        _cleanup_free_ char *host = nsr_asprintf("/dev/%s", dev_nodes[i]);
                        return rootfs_bind_error(err, -r, host, dev_nodes[i]);
                }
                pr->kern[i] = safe_close(pr->kern[i]);
        }
        static const char *const stdio[][2] = { { "stdin", "/proc/self/fd/0" },
                                                { "stdout", "/proc/self/fd/1" },
                                                { "stderr", "/proc/self/fd/2" } };
        for (size_t i = 0; i < ELEMENTSOF(stdio); i++)
                if (symlinkat(stdio[i][1], dev, stdio[i][0]) < 0)
                        return nsr_error_set(err, errno, "Can't create symlink %s/%s", op->dest, stdio[i][0]);
        if (symlinkat("/proc/self/fd", dev, "fd") < 0)
                return nsr_error_set(err, errno, "Can't create symlink %s/fd", n);
        if (symlinkat("/proc/kcore", dev, "core") < 0)
                return nsr_error_set(err, errno, "Can't create symlink %s/core", n);
        if (mkdirat(dev, "shm", 0755) < 0)
                return nsr_error_set(err, errno, "Can't create %s/shm", op->dest);
        if (mkdirat(dev, "pts", 0755) < 0)
                return nsr_error_set(err, errno, "Can't create %s/pts", op->dest);
        static const char *const pts_opts[] = { "newinstance", NULL, "ptmxmode", "0666", "mode", "620", NULL };
        _cleanup_close_ int pts = rootfs_new_fs("devpts", pts_opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
        _cleanup_close_ int ptsdir = openat(dev, "pts", O_PATH | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
        r = pts < 0 ? pts : ptsdir < 0 ? -errno : rootfs_attach(pts, ptsdir);
        if (r < 0) {
                _cleanup_free_ char *p = nsr_asprintf("%s/pts", n);
                return rootfs_mount_error(err, -r, "Can't mount devpts on %s", p);
        }
        if (symlinkat("pts/ptmx", dev, "ptmx") < 0)
                return nsr_error_set(err, errno, "Can't make symlink at %s/ptmx", op->dest);

        /* The caller's terminal becomes /dev/console, so programs that open
         * it still reach the terminal they were started from. */
        int *tty = &pr->kern[ELEMENTSOF(dev_nodes)];
        if (*tty >= 0) {
                _cleanup_close_ int f =
                        openat(dev, "console", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
                if (f < 0)
                        return nsr_error_set(err, errno, "creating %s/console", op->dest);
                r = rootfs_attach(*tty, f);
                if (r < 0)
                        return rootfs_bind_error(err, -r, b->ctx->host_tty, "console");
                *tty = safe_close(*tty);
        }
        return 0;
}
