#include "config.h"
#include "unit.h"
START_TEST(test_placeholder) { ck_assert_int_eq(1, 1); }
END_TEST
static Suite *suite(void) { Suite *s = suite_create("cli"); TCase *tc = tcase_create("core"); tcase_add_test(tc, test_placeholder); suite_add_tcase(s, tc); return s; }
NSR_UNIT_MAIN(suite)
