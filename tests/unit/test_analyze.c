/* test_analyze.c: the pure parts of `goodput analyze`: Prometheus duration and time forms,
 * and the URL encoding of PromQL. The HTTP and mapping paths run against a real
 * Prometheus in tests/integration/analyze_prometheus.sh. */
#include "testutil.h"

#include "analyze/prom_time.h"
#include "analyze/promql_client.h"

static void durations(void **state) {
    (void)state;
    int64_t ms;
    assert_int_equal(gp_prom_parse_duration("30s", &ms), 0);
    assert_int_equal(ms, 30000);
    assert_int_equal(gp_prom_parse_duration("1h30m", &ms), 0);
    assert_int_equal(ms, 5400000);
    assert_int_equal(gp_prom_parse_duration("1w2d", &ms), 0);
    assert_int_equal(ms, 9 * 86400000LL);
    assert_int_equal(gp_prom_parse_duration("1m500ms", &ms), 0);
    assert_int_equal(ms, 60500);
    assert_int_equal(gp_prom_parse_duration("1y", &ms), 0);
    assert_int_equal(ms, 365 * 86400000LL);
    /* units out of order, unknown, empty, zero, sign, trailing garbage */
    assert_int_equal(gp_prom_parse_duration("30m1h", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("5x", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("0s", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("-5s", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("30", &ms), -1);
    assert_int_equal(gp_prom_parse_duration("1h1h", &ms), -1);
}

static void times(void **state) {
    (void)state;
    int64_t ms, now = 1717200000000LL;
    assert_int_equal(gp_prom_parse_time("2024-06-01T00:00:00Z", now, &ms), 0);
    assert_int_equal(ms, 1717200000000LL);
    assert_int_equal(gp_prom_parse_time("2024-06-01T02:00:00+02:00", now, &ms), 0);
    assert_int_equal(ms, 1717200000000LL);
    assert_int_equal(gp_prom_parse_time("2024-06-01T00:00:00.250Z", now, &ms), 0);
    assert_int_equal(ms, 1717200000250LL);
    assert_int_equal(gp_prom_parse_time("1717200000", now, &ms), 0);
    assert_int_equal(ms, 1717200000000LL);
    assert_int_equal(gp_prom_parse_time("1717200000.5", now, &ms), 0);
    assert_int_equal(ms, 1717200000500LL);
    assert_int_equal(gp_prom_parse_time("now", now, &ms), 0);
    assert_int_equal(ms, now);
    assert_int_equal(gp_prom_parse_time("now-6h", now, &ms), 0);
    assert_int_equal(ms, now - 6 * 3600000LL);
    assert_int_equal(gp_prom_parse_time("now+30m", now, &ms), 0);
    assert_int_equal(ms, now + 1800000LL);
    assert_int_equal(gp_prom_parse_time("now-", now, &ms), -1);
    assert_int_equal(gp_prom_parse_time("yesterday", now, &ms), -1);
    assert_int_equal(gp_prom_parse_time("2024-13-01T00:00:00Z", now, &ms), -1);
    assert_int_equal(gp_prom_parse_time("2024-06-01T00:00:00", now, &ms), -1); /* no zone */
    assert_int_equal(gp_prom_parse_time("2024-06-01T00:00:00Zjunk", now, &ms), -1);
    assert_int_equal(gp_prom_parse_time("12abc", now, &ms), -1);
}

static void urlencode(void **state) {
    (void)state;
    char buf[128] = "q=";
    assert_int_equal(gp_prom_urlencode("up{a=\"b c\"}[30s]", buf, sizeof buf), 0);
    assert_string_equal(buf, "q=up%7Ba%3D%22b%20c%22%7D%5B30s%5D");
    char small[8] = "";
    assert_int_equal(gp_prom_urlencode("{{{{", small, sizeof small), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations),
        cmocka_unit_test(times),
        cmocka_unit_test(urlencode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
