/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp policy parser (nsrun-policy(5)), includes answered from a
 * fixed in-memory policy so that include cycles and depth are reached. */
#include "config.h"

#include <stdio.h>

#include "fuzz.h"
#include "seccomp/policy.h"

static const uint8_t *cur_data;
static size_t cur_size;

static int open_include(void *userdata, const char *from, const char *name, FILE **ret_f, char **ret_path,
                        nsr_error *err) {
        (void) userdata;
        (void) from;
        if (!nsr_policy_name_valid(name))
                return nsr_error_setx(err, EINVAL, "bad include name");
        /* "self" includes the input itself: a cycle the parser must see. */
        FILE *f = streq(name, "self") ? fmemopen((void *) cur_data, cur_size, "r")
                                      : fmemopen((void *) "allow read write\n", 17, "r");
        if (!f)
                return nsr_error_set(err, errno, "fmemopen");
        *ret_f = f;
        *ret_path = nsr_strdup(name);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0 || size > 65536)
                return 0;
        cur_data = data;
        cur_size = size;
        FILE *f = fmemopen((void *) data, size, "r");
        if (!f)
                return 0;
        nsr_policy_loader loader = { .open = open_include };
        nsr_policy *p = NULL;
        nsr_error err = { 0 };
        (void) nsr_policy_parse(f, "self", &loader, &p, &err);
        nsr_policy_free(p);
        fclose(f);
        return 0;
}
