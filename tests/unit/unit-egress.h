/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the egress unit tests share. */
#pragma once

#include "egress/rules.h"
#include "unit.h"

/* A rule set of the allow and deny patterns given (NULL-terminated lists,
 * either may be NULL); each must parse. */
static inline nsr_egress_rules rules_of(const char *const *allow, const char *const *deny) {
        nsr_egress_rules r = { 0 };
        nsr_error e = { 0 };
        for (size_t i = 0; allow && allow[i]; i++)
                ck_assert_int_eq(nsr_egress_rules_add(&r, false, allow[i], &e), 0);
        for (size_t i = 0; deny && deny[i]; i++)
                ck_assert_int_eq(nsr_egress_rules_add(&r, true, deny[i], &e), 0);
        return r;
}
