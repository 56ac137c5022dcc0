/* test_trace_oracle.c: every number HTA produced for the Kineto traces in shared/data/kineto
 * (its CSVs in shared/data/oracle, read here at test time) must come out of our analyses:
 * same rows, values within 1e-6 relative or 1e-6 absolute (stricter than the 1 µs allowed). */
#include "testutil.h"

#include <dirent.h>

#include "traces/trace.h"

#define MAXF 16

typedef struct {
    char *f[MAXF];
    int n;
} csvrow;

/* one CSV line with RFC 4180 quotes; returns 0 at EOF */
static int csv_next(FILE *f, csvrow *r, char **buf, size_t *cap) {
    ssize_t len = getline(buf, cap, f);
    if (len <= 0) return 0;
    while (len && ((*buf)[len - 1] == '\n' || (*buf)[len - 1] == '\r'))
        (*buf)[--len] = 0;
    r->n = 0;
    char *p = *buf;
    static char out[MAXF][8192];
    while (r->n < MAXF) {
        char *o = out[r->n];
        size_t k = 0;
        if (*p == '"') {
            p++;
            while (*p) {
                if (*p == '"' && p[1] == '"')
                    o[k++] = '"', p += 2;
                else if (*p == '"') {
                    p++;
                    break;
                } else
                    o[k++] = *p++;
            }
        } else
            while (*p && *p != ',')
                o[k++] = *p++;
        o[k] = 0;
        r->f[r->n++] = o;
        if (*p != ',') break;
        p++;
    }
    return 1;
}

static double num(const char *s) {
    return *s ? strtod(s, NULL) : NAN;
}

static int near(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return fabs(a - b) <= fmax(1e-6 * fabs(b), 1e-6);
}

#define CHECK(a, b, what, ...)                                                                     \
    do {                                                                                           \
        if (!near((a), (b))) {                                                                     \
            print_error("%s: " what ": ours %.10g, HTA %.10g\n", set, __VA_ARGS__, (double)(a),    \
                        (double)(b));                                                              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static gp_trace_report run_set(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    gp_trace_rank *ranks = calloc(16, sizeof *ranks);
    gp_trace_rank *rp[16];
    size_t n = 0;
    char err[1024];
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".json")) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            assert_int_equal(gp_kineto_read(p, &ranks[n], NULL, NULL, err, sizeof err), 0);
            rp[n] = &ranks[n];
            n++;
        }
    closedir(d);
    int filter = gp_trace_distinct_steps(rp, n) >= 2;
    gp_trace_report rep = {.ranks = calloc(n, sizeof(gp_rank_result)), .n_ranks = n};
    gp_trace_options o;
    gp_trace_options_default(&o);
    for (size_t i = 0; i < n; i++) {
        gp_trace_prepare(&ranks[i], filter);
        assert_int_equal(gp_trace_analyze(&ranks[i], &o, &rep.ranks[i]), 0);
        gp_trace_rank_free(&ranks[i]);
    }
    free(ranks);
    gp_trace_report_finish(&rep);
    return rep;
}

static const gp_rank_result *find_rank(const gp_trace_report *rep, int rank) {
    for (size_t i = 0; i < rep->n_ranks; i++)
        if (rep->ranks[i].rank == rank) return &rep->ranks[i];
    return NULL;
}

static FILE *open_csv(const char *set, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/oracle/%s/%s", gp_test_data_dir(), set, name);
    FILE *f = fopen(p, "r");
    if (!f) fail_msg("cannot open %s", p);
    return f;
}

typedef struct {
    int64_t corr;
    double c, g, d;
    int rank;
} lrow;
static int cmp_lrow(const void *a, const void *b) {
    const lrow *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    if (x->g != y->g) return x->g < y->g ? -1 : 1;
    return (x->c > y->c) - (x->c < y->c);
}

static const char *const catn[3] = {"host_wait", "kernel_wait", "other"};

static void check_set(const char *set) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/kineto/%s", gp_test_data_dir(), set);
    if (access(dir, R_OK) != 0) skip();
    gp_trace_report rep = run_set(dir);
    int failures = 0;
    char *buf = NULL;
    size_t cap = 0;
    csvrow r;
    size_t rows;

    /* temporal breakdown */
    FILE *f = open_csv(set, "temporal_breakdown.csv");
    csv_next(f, &r, &buf, &cap);
    rows = 0;
    while (csv_next(f, &r, &buf, &cap)) {
        const gp_rank_result *x = find_rank(&rep, atoi(r.f[0]));
        assert_non_null(x);
        rows++;
        CHECK(x->idle_us, num(r.f[1]), "rank %s idle", r.f[0]);
        CHECK(x->compute_us, num(r.f[2]), "rank %s compute", r.f[0]);
        CHECK(x->non_compute_us, num(r.f[3]), "rank %s non_compute", r.f[0]);
        CHECK(x->span_us, num(r.f[4]), "rank %s span", r.f[0]);
        CHECK(x->idle_pctg, num(r.f[5]), "rank %s idle%%", r.f[0]);
        CHECK(x->compute_pctg, num(r.f[6]), "rank %s compute%%", r.f[0]);
        CHECK(x->non_compute_pctg, num(r.f[7]), "rank %s non_compute%%", r.f[0]);
    }
    fclose(f);
    assert_int_equal(rows, rep.n_ranks);

    /* idle time breakdown */
    size_t ours = 0;
    for (size_t i = 0; i < rep.n_ranks; i++)
        for (size_t s = 0; s < rep.ranks[i].n_streams; s++)
            for (int c = 0; c < 3; c++)
                ours += rep.ranks[i].streams[s].cat[c].present;
    for (int pass = 0; pass < 2; pass++) {
        f = open_csv(set, pass ? "idle_interval_stats.csv" : "idle_time_breakdown.csv");
        csv_next(f, &r, &buf, &cap);
        rows = 0;
        while (csv_next(f, &r, &buf, &cap)) {
            int rank = atoi(r.f[pass ? 1 : 0]), stream = atoi(r.f[pass ? 2 : 1]);
            const char *cat = r.f[pass ? 0 : 2];
            const gp_rank_result *x = find_rank(&rep, rank);
            assert_non_null(x);
            const gp_idle_cat *ic = NULL;
            for (size_t s = 0; s < x->n_streams; s++)
                for (int c = 0; c < 3; c++)
                    if (x->streams[s].stream == stream && !strcmp(catn[c], cat) &&
                        x->streams[s].cat[c].present)
                        ic = &x->streams[s].cat[c];
            if (!ic) {
                print_error("%s: missing idle row rank %d stream %d %s\n", set, rank, stream, cat);
                failures++;
                continue;
            }
            rows++;
            if (!pass) {
                CHECK(ic->sum, num(r.f[3]), "idle %d/%d/%s time", rank, stream, cat);
                CHECK(ic->ratio, num(r.f[4]), "idle %d/%d/%s ratio", rank, stream, cat);
            } else {
                const double v[8] = {ic->count, ic->mean, ic->std, ic->min,
                                     ic->q25,   ic->q50,  ic->q75, ic->max};
                for (int k = 0; k < 8; k++)
                    CHECK(v[k], num(r.f[3 + k]), "stats %d/%d/%s col %d", rank, stream, cat, k);
            }
        }
        fclose(f);
        assert_int_equal(rows, ours);
    }

    /* kernel breakdown by type */
    f = open_csv(set, "gpu_kernel_breakdown_by_type.csv");
    csv_next(f, &r, &buf, &cap);
    rows = 0;
    double tot = 0;
    size_t present = 0;
    for (int m = 1; m < 8; m++)
        tot += rep.type_us[m], present += rep.type_present[m];
    while (csv_next(f, &r, &buf, &cap)) {
        int mask = 0;
        for (int k = 0; k < 3; k++)
            if (strstr(r.f[0], gp_kernel_type_name(k))) mask |= 1 << k;
        rows++;
        if (!rep.type_present[mask]) {
            print_error("%s: missing type row %s\n", set, r.f[0]);
            failures++;
        }
        CHECK(rep.type_us[mask], num(r.f[1]), "type %s sum", r.f[0]);
        CHECK(rint(1000 * rep.type_us[mask] / tot) / 10, num(r.f[2]), "type %s pct", r.f[0]);
    }
    fclose(f);
    assert_int_equal(rows, present);

    /* kernel breakdown by name */
    f = open_csv(set, "gpu_kernel_breakdown_by_kernel.csv");
    csv_next(f, &r, &buf, &cap);
    rows = 0;
    ours = 0;
    for (size_t i = 0; i < rep.n_ranks; i++)
        ours += rep.ranks[i].n_kernels;
    while (csv_next(f, &r, &buf, &cap)) {
        const gp_rank_result *x = find_rank(&rep, atoi(r.f[7]));
        assert_non_null(x);
        const gp_kernel_row *k = NULL;
        for (size_t i = 0; i < x->n_kernels; i++)
            if (!strcmp(x->kernels[i].name, r.f[0]) &&
                !strcmp(gp_kernel_type_name(x->kernels[i].kt), r.f[6]))
                k = &x->kernels[i];
        rows++;
        if (!k) {
            print_error("%s: missing kernel row %.60s (%s, rank %s)\n", set, r.f[0], r.f[6],
                        r.f[7]);
            failures++;
            continue;
        }
        CHECK(k->sum, num(r.f[1]), "kernel %.40s sum", r.f[0]);
        CHECK(k->max, num(r.f[2]), "kernel %.40s max", r.f[0]);
        CHECK(k->min, num(r.f[3]), "kernel %.40s min", r.f[0]);
        CHECK(k->std, num(r.f[4]), "kernel %.40s std", r.f[0]);
        CHECK(k->mean, num(r.f[5]), "kernel %.40s mean", r.f[0]);
    }
    fclose(f);
    assert_int_equal(rows, ours);

    /* comm/comp overlap */
    f = open_csv(set, "comm_comp_overlap.csv");
    csv_next(f, &r, &buf, &cap);
    rows = 0;
    while (csv_next(f, &r, &buf, &cap)) {
        const gp_rank_result *x = find_rank(&rep, atoi(r.f[0]));
        assert_non_null(x);
        rows++;
        CHECK(x->overlap_pctg, num(r.n > 1 ? r.f[1] : ""), "rank %s overlap", r.f[0]);
    }
    fclose(f);
    assert_int_equal(rows, rep.n_ranks);

    /* launch stats: compared as multisets */
    f = open_csv(set, "cuda_kernel_launch_stats.csv");
    csv_next(f, &r, &buf, &cap);
    size_t nl = 0, capl = 1024;
    lrow *h = malloc(capl * sizeof *h);
    while (csv_next(f, &r, &buf, &cap)) {
        if (nl == capl) h = realloc(h, (capl *= 2) * sizeof *h);
        h[nl++] = (lrow){atoll(r.f[1]), num(r.f[2]), num(r.f[3]), num(r.f[4]), atoi(r.f[0])};
    }
    fclose(f);
    ours = 0;
    for (size_t i = 0; i < rep.n_ranks; i++)
        ours += rep.ranks[i].n_launches;
    assert_int_equal(ours, nl);
    lrow *o = malloc((ours + 1) * sizeof *o);
    size_t k = 0;
    for (size_t i = 0; i < rep.n_ranks; i++)
        for (size_t j = 0; j < rep.ranks[i].n_launches; j++) {
            const gp_launch_row *l = &rep.ranks[i].launches[j];
            o[k++] = (lrow){l->corr, l->cpu_dur, l->gpu_dur, l->delay, rep.ranks[i].rank};
        }
    qsort(h, nl, sizeof *h, cmp_lrow);
    qsort(o, nl, sizeof *o, cmp_lrow);
    for (size_t i = 0; i < nl; i++) {
        if (o[i].corr != h[i].corr || o[i].rank != h[i].rank) {
            print_error("%s: launch row %zu: correlation %lld vs %lld\n", set, i,
                        (long long)o[i].corr, (long long)h[i].corr);
            failures++;
            break;
        }
        CHECK(o[i].c, h[i].c, "launch %lld cpu", (long long)h[i].corr);
        CHECK(o[i].g, h[i].g, "launch %lld gpu", (long long)h[i].corr);
        CHECK(o[i].d, h[i].d, "launch %lld delay", (long long)h[i].corr);
    }
    free(h);
    free(o);
    free(buf);
    gp_trace_report_free(&rep);
    if (failures) fail_msg("%s: %d values differ from HTA", set, failures);
}

static void test_trace_filter(void **s) {
    (void)s, check_set("hta_trace_filter");
}
static void test_negative_queue(void **s) {
    (void)s, check_set("hta_negative_queue");
}
static void test_ns_resolution(void **s) {
    (void)s, check_set("hta_ns_resolution");
}
static void test_df_index_resolver(void **s) {
    (void)s, check_set("hta_df_index_resolver");
}
static void test_nccl(void **s) {
    (void)s, check_set("hta_nccl");
}
static void test_dlrm_8rank(void **s) {
    (void)s, check_set("param_dlrm_8rank");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_filter),  cmocka_unit_test(test_negative_queue),
        cmocka_unit_test(test_ns_resolution), cmocka_unit_test(test_df_index_resolver),
        cmocka_unit_test(test_nccl),          cmocka_unit_test(test_dlrm_8rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
