/* test_promql_num.c: gp_prom_num (the number reader of query_range answers) gives exactly
 * strtod's double for every form Prometheus writes: times, plain decimals of any length,
 * negatives, exponents, NaN and infinities. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyze/promql_client.h"

static void same(const char *s) {
    double want = strtod(s, NULL), got = gp_prom_num(s, strlen(s));
    if (isnan(want)) {
        assert_true(isnan(got));
        return;
    }
    if (memcmp(&want, &got, sizeof want) != 0) fail_msg("'%s': %.17g, strtod %.17g", s, got, want);
}

static void test_fixed_forms(void **st) {
    (void)st;
    static const char *const v[] = {"0",
                                    "1717200000",
                                    "1717200000.5",
                                    "1717200000.123",
                                    "90",
                                    "0.9",
                                    "0.1",
                                    "0.3",
                                    "-0",
                                    "-12.75",
                                    "0.8999999999999999",
                                    "123456789012345",
                                    "1234567890123456",
                                    "99999999999999999999",
                                    "0.000000000000000000001",
                                    "1e-7",
                                    "6.02e+23",
                                    "1.5E3",
                                    "NaN",
                                    "+Inf",
                                    "-Inf",
                                    "1.",
                                    ".5",
                                    "2147483647",
                                    "18446744073709551615"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        same(v[i]);
}

/* Random decimals as Go's strconv.FormatFloat(v, 'f', -1, 64) writes them, and as %.17g
 * and %.6g write them: each read back as strtod does. */
static void test_random_decimals(void **st) {
    (void)st;
    uint64_t x = 88172645463325252ULL;
    char buf[64];
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double mag = (double)(x % 1000000007ULL) / (double)(1 + (x >> 40) % 100000);
        if (x & 1) mag = -mag;
        static const char *const fmt[] = {"%.17g", "%.6g", "%.3f", "%.0f", "%.12f", "%.15g"};
        snprintf(buf, sizeof buf, fmt[(x >> 3) % 6], mag);
        same(buf);
        snprintf(buf, sizeof buf, "%llu.%llu", (unsigned long long)(x >> 40),
                 (unsigned long long)((x >> 8) % 100000000ULL));
        same(buf);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_forms),
        cmocka_unit_test(test_random_decimals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
