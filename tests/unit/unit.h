/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared bits for the Check unit tests. */
#pragma once

#include <check.h>
#include <stdlib.h>

#define NSR_UNIT_MAIN(suite_fn)                                                                                        \
        int main(void) {                                                                                               \
                SRunner *sr = srunner_create(suite_fn());                                                              \
                srunner_run_all(sr, CK_NORMAL);                                                                        \
                int failed = srunner_ntests_failed(sr);                                                                \
                srunner_free(sr);                                                                                      \
                return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                                      \
        }
