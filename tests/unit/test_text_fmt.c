/* test_text_fmt.c: the pieces that make text output readable (issue 23): names shortened
 * in the middle keep their start and end and fit the width; colour is off when NO_COLOR is
 * set or the stream is not a terminal; the progress bar is off when stderr is not a
 * terminal; repeated findings are grouped by class and fix, ranked by total waste, with
 * their scopes listed ("ranks 0-2, 5"); the grouped text fits the width and the JSON keeps
 * a count per group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/findings_group.h"
#include "util/progress.h"
#include "util/term.h"

static void test_ellipsize(void **st) {
    (void)st;
    char buf[128];
    const char *k = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, "
                    "ncclWork*)";
    assert_ptr_equal(gp_ellipsize("short", 10, buf, sizeof buf), (const char *)"short");
    assert_ptr_equal(gp_ellipsize(k, 0, buf, sizeof buf), k); /* 0: no limit (--wide) */
    const char *e = gp_ellipsize(k, 40, buf, sizeof buf);
    assert_int_equal(strlen(e), 40);
    assert_non_null(strstr(e, "..."));
    assert_memory_equal(e, "ncclKernel_SendRecv", 19);     /* the start names it */
    assert_string_equal(e + strlen(e) - 10, "ncclWork*)"); /* the end tells apart */
}

static char *render_wrapf(int width) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gp_wrap_printf(f, 4, width, "  %s: %d GPU-hours were held while %s", "idle_allocated", 1743,
                   "no kernel ran on them for the whole trace, in 143 containers of 144");
    fclose(f);
    return buf;
}

static void test_wrap_printf(void **st) {
    (void)st;
    char *out = render_wrapf(40);
    int lines = 0;
    for (char *l = out, *nl; *l; l = nl + 1, lines++) {
        nl = strchr(l, '\n');
        assert_non_null(nl);
        assert_true(nl - l <= 40);
        assert_memory_equal(l, lines ? "    " : "  idle", lines ? 4 : 6);
    }
    assert_true(lines >= 3);
    free(out);
    out = render_wrapf(0); /* --wide: one line */
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
}

static void test_color_off(void **st) {
    (void)st;
    FILE *f = tmpfile(); /* not a terminal */
    assert_int_equal(gp_color_ok(f), 0);
    gp_style s = gp_style_for(f);
    assert_string_equal(s.warn, "");
    assert_string_equal(s.off, "");
    setenv("NO_COLOR", "1", 1);
    assert_int_equal(gp_color_ok(stdout), 0); /* whatever stdout is */
    unsetenv("NO_COLOR");
    fclose(f);
}

static void test_progress_off_when_piped(void **st) {
    (void)st;
    gp_progress p;
    gp_progress_start(&p, "reading", 100, 1); /* quiet (--json) */
    assert_int_equal(p.enabled, 0);
    gp_progress_update(&p, 50);
    assert_int_equal(p.drawn, 0);
    gp_progress_end(&p);
}

static gp_finding mk(gp_finding_class c, const char *scope, double waste, const char *fix) {
    gp_finding f;
    memset(&f, 0, sizeof f);
    f.cls = c;
    f.scope = GP_SCOPE_RANK;
    snprintf(f.scope_id, sizeof f.scope_id, "%s", scope);
    f.wasted_gpu_s = waste;
    snprintf(f.summary, sizeof f.summary, "GPU idle on %s", scope);
    snprintf(f.recommendation, sizeof f.recommendation, "%s", fix);
    return f;
}

static void test_groups(void **st) {
    (void)st;
    const char *data = "Raise DataLoader num_workers and pin memory.";
    const char *sync = "Take .item() out of the step.";
    gp_finding f[7] = {mk(GP_FC_INPUT_BOUND, "rank 0", 1.0, data),
                       mk(GP_FC_HOST_BOUND, "rank 0", 5.0, sync),
                       mk(GP_FC_INPUT_BOUND, "rank 1", 2.0, data),
                       mk(GP_FC_INPUT_BOUND, "rank 2", 3.0, data),
                       mk(GP_FC_INPUT_BOUND, "rank 5", 0.5, data),
                       mk(GP_FC_STRAGGLER, "rank 3", -1, "Balance."),
                       mk(GP_FC_HOST_BOUND, "rank 4", 1.0, "Fuse kernels.")};
    gp_finding_group *g;
    size_t ng = gp_findings_group(f, 7, &g);
    assert_int_equal(ng, 4);
    /* input_bound 6.5 GPU-s, host_bound/sync 5, host_bound/fuse 1, straggler unknown last */
    assert_int_equal(f[g[0].idx[0]].cls, GP_FC_INPUT_BOUND);
    assert_int_equal(g[0].n, 4);
    assert_true(g[0].wasted_gpu_s > 6.49 && g[0].wasted_gpu_s < 6.51);
    assert_string_equal(f[g[0].idx[0]].scope_id, "rank 2"); /* largest first */
    assert_true(g[1].wasted_gpu_s > 4.99 && g[1].wasted_gpu_s < 5.01);
    assert_int_equal(f[g[2].idx[0]].cls, GP_FC_HOST_BOUND);
    assert_true(g[3].wasted_gpu_s < 0);
    char sc[256];
    gp_finding_group_scopes(f, &g[0], sc, sizeof sc);
    assert_string_equal(sc, "ranks 0-2, 5");
    gp_finding_groups_free(g, ng);

    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    gp_group_text_opts o = {.unit_s = 1, .unit = "GPU-s", .fix = "fix", .width = 60};
    gp_findings_print_grouped(m, f, 7, &o);
    fclose(m);
    assert_non_null(strstr(buf, " 1. input_bound on 4 ranks, 6.5 GPU-s wasted\n"));
    assert_non_null(strstr(buf, "ranks 0-2, 5\n"));
    assert_non_null(strstr(buf, "waste unknown"));
    int fixes = 0;
    for (char *p = buf; (p = strstr(p, "num_workers")); p++)
        fixes++;
    assert_int_equal(fixes, 1); /* the fix once for the four ranks */
    for (char *l = buf, *nl; *l; l = nl + 1) {
        nl = strchr(l, '\n');
        assert_non_null(nl);
        assert_true(nl - l <= 60);
    }
    free(buf);

    json_t *j = gp_findings_groups_json(f, 7);
    assert_int_equal(json_array_size(j), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0), "findings")), 4);
    assert_true(json_is_null(json_object_get(json_array_get(j, 3), "wasted_gpu_s")));
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ellipsize), cmocka_unit_test(test_wrap_printf),
        cmocka_unit_test(test_color_off), cmocka_unit_test(test_progress_off_when_piped),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
