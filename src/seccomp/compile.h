/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Seccomp policy files (the .policy files under seccomp/): find them, compile
 * them with libseccomp for the native arch and its compat arches, export
 * BPF, and cache the result. The language itself is in policy.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "seccomp/policy.h"

/* The kernel's limit on one filter program (BPF_MAXINSNS). */
#define NSR_SECCOMP_MAX_INSNS 4096
/* Entries kept in the compile cache before it is emptied. */
#define NSR_SECCOMP_CACHE_MAX 128

/* Where shipped policies live: $NSRUN_DATADIR/seccomp when NSRUN_DATADIR is
 * set (tests run uninstalled), else $(pkgdatadir)/seccomp. The caller frees
 * the result. */
char *nsr_seccomp_dir(void);

/* Turns a policy name ("default", "default.policy") into the path of the
 * shipped file; anything with a '/' is a path and is returned as is. */
int nsr_seccomp_policy_path(const char *name_or_path, char **ret, nsr_error *err);

/* Reads and parses a policy file by name or path. Includes are looked up
 * next to the including file, then in nsr_seccomp_dir(). */
int nsr_seccomp_policy_load(const char *name_or_path, nsr_policy **ret, nsr_error *err);

/* The libseccomp arch tokens a filter covers: the native arch first, then
 * the compat arches whose system calls could otherwise bypass it (i386 and
 * x32 on x86_64, arm on aarch64). Returns how many it stored. */
size_t nsr_seccomp_arches(uint32_t *ret, size_t max);

/* Compiles a parsed policy to one BPF program (struct sock_filter array,
 * native byte order) for every arch nsr_seccomp_arches() names. No cache. */
int nsr_seccomp_compile(const nsr_policy *p, char **ret_data, size_t *ret_len, nsr_error *err);

/* Exports a libseccomp filter (a scmp_filter_ctx) as a BPF program. */
int nsr_seccomp_export(void *ctx, char **ret_data, size_t *ret_len, nsr_error *err);

/* Loads a BPF program (struct sock_filter array, len in bytes) on the
 * calling thread, under no_new_privs (or CAP_SYS_ADMIN). -errno. */
int nsr_seccomp_load(const char *data, size_t len);

/* The compile cache: $XDG_CACHE_HOME/nsrun/seccomp, else
 * $HOME/.cache/nsrun/seccomp. Both functions are best effort and never
 * fail the caller: a lookup that finds nothing usable returns -ENOENT, a
 * store that cannot write returns a negative errno the caller may ignore. */
int nsr_seccomp_cache_key(const nsr_policy *p, uint8_t ret[NSR_SHA256_SIZE]);
/* The same for a program that is not a policy file: digest names what it
 * is (the sha256 of its source's identity, e.g. "connect program 1"). */
int nsr_seccomp_cache_key_of(const uint8_t digest[NSR_SHA256_SIZE], uint8_t ret[NSR_SHA256_SIZE]);
int nsr_seccomp_cache_lookup(const uint8_t key[NSR_SHA256_SIZE], char **ret_data, size_t *ret_len);
int nsr_seccomp_cache_store(const uint8_t key[NSR_SHA256_SIZE], const char *data, size_t len);
/* A program nsrun builds itself rather than from a policy file: id names
 * what it is and its version ("nsrun connect program 1"; a change to what
 * build makes needs a new one only when nsrun's binary stays the same,
 * which the key covers). From the cache when it is there, else from
 * build, stored for the next run. */
typedef int (*nsr_seccomp_build_fn)(char **ret_data, size_t *ret_len, nsr_error *err);
int nsr_seccomp_builtin_bpf(const char *id, nsr_seccomp_build_fn build, char **ret_data, size_t *ret_len,
                            nsr_error *err);
/* The cache's index (compile.c says why its key is complete): the digest of
 * the policy text a launch of name_or_path would read, without reading it,
 * when every file the last full load read (and every include candidate it
 * found missing) is as it was then. 0 on a hit; a negative errno when there
 * is no usable entry or a file changed (-ESTALE). For the tests; launches
 * use it through nsr_seccomp_policy_bpf. */
int nsr_seccomp_index_lookup(const char *name_or_path, uint8_t ret_digest[NSR_SHA256_SIZE]);
/* The cache's own dir ($XDG_CACHE_HOME/nsrun or $HOME/.cache/nsrun) as a
 * real path, made first (with its seccomp/ subdir) when create is set;
 * NULL when there is none. Project mode hides it from every run: a run
 * that could write a cache entry would pick the next run's filter. */
char *nsr_seccomp_cache_root(bool create);

/* Compiles a policy, given by name ("default") or by path (anything with a
 * '/'), to a BPF program for the native arch and its compat arches. The
 * result may come from a cache keyed by the policy's content, found through
 * the index without reading the policy when none of its files changed. */
int nsr_seccomp_policy_bpf(const char *name_or_path, char **ret_data, size_t *ret_len, nsr_error *err);

/* The shipped policies: names without ".policy", sorted. */
int nsr_seccomp_list(char ***ret, nsr_error *err);
/* A policy file's summary: the text of its first comment line. */
int nsr_seccomp_summary(const char *path, char **ret, nsr_error *err);
