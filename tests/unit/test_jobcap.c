/* test_jobcap.c: the cap of live job ids per transport (ingest/jobcap.h): known ids are
 * always taken, new ones past the cap are refused, ids idle for GP_INGEST_JOB_IDLE_NS give
 * their slot back (at most one rebuild a second), an empty id is never refused. */
#include "testutil.h"

#include <stdio.h>

#include "ingest/ingest.h"
#include "ingest/jobcap.h"

#define S 1000000000LL

static void cap_refuses_new_ids_only(void **state) {
    (void)state;
    gp_jobcap j = {.max_jobs = 3};
    assert_int_equal(gp_jobcap_admit(&j, "a", 1 * S), 1);
    assert_int_equal(gp_jobcap_admit(&j, "b", 2 * S), 1);
    assert_int_equal(gp_jobcap_admit(&j, "c", 3 * S), 1);
    assert_int_equal(gp_jobcap_admit(&j, "d", 4 * S), 0);
    assert_int_equal(gp_jobcap_admit(&j, "a", 5 * S), 1); /* known: still taken */
    assert_int_equal(gp_jobcap_admit(&j, "", 6 * S), 1);  /* no job: not capped */
    /* b and c fall silent for the idle time; a spoke at 5 s, so it keeps its slot */
    int64_t later = 3 * S + GP_INGEST_JOB_IDLE_NS + S;
    assert_int_equal(gp_jobcap_admit(&j, "d", later), 1);
    assert_int_equal(gp_jobcap_admit(&j, "e", later), 1);
    assert_int_equal(gp_jobcap_admit(&j, "f", later), 0);
    assert_int_equal(gp_jobcap_admit(&j, "a", later), 1);
    gp_jobcap_free(&j);
}

static void default_cap(void **state) {
    (void)state;
    gp_jobcap j = {0};
    char id[32];
    for (int i = 0; i < GP_INGEST_MAX_JOBS; i++) {
        snprintf(id, sizeof id, "job-%d", i);
        assert_int_equal(gp_jobcap_admit(&j, id, S), 1);
    }
    assert_int_equal(gp_jobcap_admit(&j, "one-more", S), 0);
    assert_int_equal(gp_jobcap_admit(&j, "job-7", 2 * S), 1);
    gp_jobcap_free(&j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cap_refuses_new_ids_only),
        cmocka_unit_test(default_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
