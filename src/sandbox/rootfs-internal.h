/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What rootfs.c shares with rootfs-kernfs.c and rootfs-files.c, and nothing else. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "cli/plan.h"
#include "sandbox/rootfs.h"

#define ROOTFS_KERN_MAX 7

typedef struct prepared {
        int tree;     /* detached bind tree, or -1 (skipped or not a bind) */
        bool skipped; /* a -try source that does not exist */
        bool is_dir;
        int *lower_fds; /* overlay sources, command-line order */
        size_t n_lower;
        int upper_fd, work_fd;
        bool gated;     /* an --overlay op whose dirs are below the gate's dir (rootfs.h) */
        int src_fd;     /* a bind's source (O_PATH), named only in a message */
        ssize_t src_of; /* or the op whose src_fd it shares (same_source), or -1 */
        bool src_kept;  /* src_fd is shared: kept until the end */
        bool from_null; /* a hidden file's bind: its tree is a clone of builder.null_src */
        bool fold_ro;   /* the next op is a --remount-ro of this one's dest (rootfs.c, remount_follows) */
        bool ro_done;   /* ... and it was set with the clone (a file bind) */
        /* --dev: the host's nodes (rootfs-kernfs.c), then the terminal for
         * /dev/console; --proc: kern[0], its procfs (fresh or the host's,
         * see proc_fresh). Made before any op runs, while the host tree
         * is as it was (see builder.in_place). */
        int kern[ROOTFS_KERN_MAX];
        bool proc_fresh;
} prepared;

typedef struct builder {
        const nsr_plan *plan;
        const nsr_mount_ctx *ctx;
        prepared *prep;
        ssize_t *src_first; /* the first bind op of each source, hashed (rootfs.c, same_source) */
        size_t src_cap;
        int scratch; /* O_PATH fd of the scratch tmpfs root */
        int root;    /* O_PATH fd of the new root */
        int shared;  /* O_PATH fd of the shared tmpfs root, or -1 */
        unsigned n_shared;
        unsigned n_tmp_overlay;
        unsigned n_bindfile;
        int gate_dir;     /* ctx->gate_under (a detached clone of it in place), or -1 */
        bool gate_passed; /* ctx->gate_fd's byte came */
        /* The root is the mount namespace's own copy of the host's tree,
         * with the first op's flags set on it, rather than a tmpfs with a
         * clone of that tree bound on it, pivoted into (rootfs.c,
         * root_in_place). scratch and shared are then detached mounts. */
        bool in_place;
        /* The ops of the plan's slots (nsr_mount_ctx.take_slots), once
         * taken, and the host's /dev/null, opened with the other sources
         * before any op ran: each hidden file's bind is a clone of it. */
        bool has_slots, slots_taken;
        nsr_plan **slots;
        size_t n_slots;
        size_t slot_at;      /* the op of the slot being run (rootfs.c, filled_number) */
        int null_src;        /* or -errno */
        unsigned null_attrs; /* what a clone of it gets */
        bool fold_ro;        /* the op being run has prepared.fold_ro: its mount gets the --remount-ro */
        bool folded;         /* ... and got it */
} builder;

typedef enum dest_kind {
        DEST_DIR,      /* made with mkdirat when missing */
        DEST_FILE,     /* an empty file made when missing */
        DEST_EXISTING, /* must exist: --remount-ro */
} dest_kind;

/* Helpers of rootfs.c, each described there. */
int rootfs_open_parent(int root, const char *dest, mode_t mode, char **ret_norm, const char **ret_name);
mode_t rootfs_parent_mode(const nsr_op *op);
int rootfs_attach(int tree, int target);
int rootfs_new_fs(const char *type, const char *const *opts, unsigned attrs);
int rootfs_clone_tree(int dirfd, const char *path, bool recursive, unsigned attrs);
/* "message: strerror", where ENOSPC gets bwrap's hint about mount-max. */
int rootfs_mount_error(nsr_error *err, int e, const char *fmt, ...) _printf_(3, 4);
const char *rootfs_mount_strerror(int e);
/* bwrap's message for a bind of src on dest that failed with e. */
int rootfs_bind_error(nsr_error *err, int e, const char *src, const char *dest);
int rootfs_open_dest(builder *b, const nsr_op *op, dest_kind kind, int perms, bool writable, bool is_mount,
                     nsr_error *err);
int rootfs_open_in_root(int root, const char *path, int flags);
int rootfs_op_tmpfs(builder *b, const nsr_op *op, mode_t mode);

/* The kernel's file systems (rootfs-kernfs.c): --mqueue, --proc, --dev. */
int rootfs_do_mqueue(builder *b, const nsr_op *op, nsr_error *err);
int rootfs_prepare_proc(builder *b, const nsr_op *op, prepared *pr, nsr_error *err);
int rootfs_do_proc(builder *b, const nsr_op *op, prepared *pr, nsr_error *err);
int rootfs_prepare_dev(builder *b, const nsr_op *op, prepared *pr, nsr_error *err);
int rootfs_do_dev(builder *b, const nsr_op *op, prepared *pr, nsr_error *err);

/* Entries made in the new root (rootfs-files.c): --dir, --file,
 * --bind-data and --ro-bind-data, --symlink, --chmod. */
int rootfs_do_dir(builder *b, const nsr_op *op, nsr_error *err);
int rootfs_do_file(builder *b, const nsr_op *op, nsr_error *err);
int rootfs_do_bind_data(builder *b, const nsr_op *op, nsr_error *err);
int rootfs_do_symlink(builder *b, const nsr_op *op, nsr_error *err);
int rootfs_do_chmod(builder *b, const nsr_op *op, nsr_error *err);
