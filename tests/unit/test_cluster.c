/* test_cluster.c: cluster-trace readers and report: CSV edge cases and error positions,
 * hand-computed figures on tiny slices written here from each documented schema, and row
 * counts of the real files in ../shared/data checked against awk/wc/python run now. */
#include "testutil.h"

#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

static char *dir;

static void put(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static double shell_num(const char *cmd) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    double v = -1;
    if (fscanf(p, "%lf", &v) != 1) v = -1;
    pclose(p);
    return v;
}

/* Every evidence line of every finding states a comparison that is true. */
static void check_evidence(const gp_cluster_report *r) {
    for (int i = 0; i < r->n_findings; i++)
        for (int e = 0; e < r->findings[i].n_evidence; e++) {
            const gp_evidence *x = &r->findings[i].evidence[e];
            if (!gp_cl_evidence_holds(x->value, x->op, x->threshold))
                fail_msg("%s: evidence %s = %g %s %g is false", r->format, x->metric, x->value,
                         x->op, x->threshold);
        }
}

static void test_evidence_refuses_false(void **st) {
    (void)st;
    gp_finding f;
    memset(&f, 0, sizeof f);
    assert_int_equal(gp_cl_evidence(&f, "queue_wait_p90_s", 107.6, ">", 3600, "t"), 0);
    assert_int_equal(f.n_evidence, 0);
    assert_int_equal(gp_cl_evidence(&f, "queue_wait_p90_s", 7200, ">", 3600, "t"), 1);
    assert_int_equal(f.n_evidence, 1);
    assert_int_equal(gp_cl_evidence_holds(0.5, "<=", 0.5), 1);
    assert_int_equal(gp_cl_evidence_holds(0.5, "<", 0.5), 0);
    assert_int_equal(gp_cl_evidence_holds(NAN, ">", 0), 0);
    assert_int_equal(gp_cl_evidence_holds(1, "=>", 0), 0); /* unknown operator: refused */
}

static void test_csv_edges(void **st) {
    (void)st;
    put("e.csv", "a,b,c\r\n\"x,1\",\"he said \"\"hi\"\"\",NA\n1,,\"multi\nline\"\n2,3,4");
    char p[512], err[256];
    snprintf(p, sizeof p, "%s/e.csv", dir);
    gp_csv *c;
    assert_int_equal(gp_csv_open(&c, p, err, sizeof err), 0);
    assert_int_equal(gp_csv_next(c, err, sizeof err), 1);
    gp_csv_take_header(c);
    assert_int_equal(gp_csv_find(c, "c"), 2);
    assert_int_equal(gp_csv_next(c, err, sizeof err), 1);
    assert_string_equal(gp_csv_field(c, 0), "x,1");
    assert_string_equal(gp_csv_field(c, 1), "he said \"hi\"");
    double v;
    assert_int_equal(gp_csv_num(c, 2, &v, err, sizeof err), 0); /* NA */
    assert_int_equal(gp_csv_next(c, err, sizeof err), 1);
    assert_int_equal(gp_csv_line(c), 3);
    assert_string_equal(gp_csv_field(c, 2), "multi\nline");
    assert_int_equal(gp_csv_next(c, err, sizeof err), 1); /* last line, no newline */
    assert_int_equal(gp_csv_line(c), 5);
    assert_int_equal(gp_csv_num(c, 2, &v, err, sizeof err), 1);
    assert_near(v, 4, 0);
    assert_int_equal(gp_csv_next(c, err, sizeof err), 0);
    gp_csv_close(c);

    put("bad.csv", "t,v\n1,2\n3,x9\n");
    snprintf(p, sizeof p, "%s/bad.csv", dir);
    assert_int_equal(gp_csv_open(&c, p, err, sizeof err), 0);
    gp_csv_next(c, err, sizeof err);
    gp_csv_take_header(c);
    gp_csv_next(c, err, sizeof err);
    gp_csv_next(c, err, sizeof err);
    assert_int_equal(gp_csv_num(c, 1, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad.csv:3:3: column v"));
    gp_csv_close(c);
}

/* Hand values (see comments): 3 instances, 2 jobs that ran, 1 that never did. */
/* Rows that cross the 256 KiB input buffer, CRLF endings, quoted fields and a CR inside a
 * field, read by both the in-place fast path and the general parser: every field, line
 * number and column must be what the writer put there. */
static void row_fields(int i, char f[4][80]) {
    snprintf(f[0], 80, "r%d", i);
    int n = (i * 7) % 50;
    memset(f[1], 'x', (size_t)n);
    f[1][n] = 0;
    f[2][0] = 0;
    snprintf(f[3], 80, i % 11 == 0 ? "q,%d" : (i % 13 == 0 ? "c%d" : "%d.5"), i);
}

static void test_csv_buffers(void **st) {
    (void)st;
    char p[512], err[256], f[4][80];
    snprintf(p, sizeof p, "%s/big.csv", dir);
    FILE *o = fopen(p, "w");
    assert_non_null(o);
    int rows = 20000;
    for (int i = 0; i < rows; i++) {
        row_fields(i, f);
        if (i % 11 == 0)
            fprintf(o, "%s,%s,%s,\"%s\"", f[0], f[1], f[2], f[3]);
        else if (i % 13 == 0) /* a CR inside an unquoted field is dropped */
            fprintf(o, "%s,%s,%s,c\r%d", f[0], f[1], f[2], i);
        else
            fprintf(o, "%s,%s,%s,%s", f[0], f[1], f[2], f[3]);
        fputs(i % 5 == 0 ? "\r\n" : "\n", o);
    }
    long size = ftell(o);
    fclose(o);
    gp_csv *c;
    assert_int_equal(gp_csv_open(&c, p, err, sizeof err), 0);
    for (int i = 0; i < rows; i++) {
        assert_int_equal(gp_csv_next(c, err, sizeof err), 1);
        row_fields(i, f);
        assert_int_equal(gp_csv_nfields(c), 4);
        assert_int_equal(gp_csv_line(c), i + 1);
        for (int k = 0; k < 4; k++) {
            assert_string_equal(gp_csv_field(c, k), f[k]);
            assert_int_equal(gp_csv_field_len(c, k), strlen(f[k]));
        }
        int col3 = (int)(strlen(f[0]) + strlen(f[1]) + strlen(f[2])) + 4;
        assert_int_equal(gp_csv_col(c, 3), col3);
    }
    assert_int_equal(gp_csv_next(c, err, sizeof err), 0);
    assert_int_equal((long)gp_csv_offset(c), size);
    assert_int_equal((long)gp_csv_size_hint(c), size);
    gp_csv_close(c);
}

static void test_pai_slice(void **st) {
    (void)st;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/pai", dir);
    mkdir(sub, 0755);
    put("pai/pai_group_tag_table.csv", "i1,u1,V100,g1,bert\ni2,u2,T4,g2,resnet\n");
    put("pai/pai_job_table.csv",
        "j1,i1,u1,Terminated,100,1000\nj2,i2,u2,Failed,200,900\nj3,i3,u1,Waiting,300,\n");
    put("pai/pai_task_table.csv",
        "j1,worker,2,Terminated,150,1000,600,29,100,V100\n"
        "j2,tensorflow,1,Failed,260,900,400,10,50,T4\nj3,worker,1,Waiting,,,100,10,100,V100\n");
    put("pai/pai_instance_table.csv",
        "j1,worker,n1,w1,i1,Terminated,150,1050,m1\n"
        "j1,worker,n2,w2,i1,Terminated,150,750,m2\nj2,tensorflow,n3,w3,i2,Failed,260,900,m3\n");
    put("pai/pai_sensor_table.csv", "j1,worker,w1,i1,m1,/dev/nvidia0,100,80,1,1,1,1,0,0,0,0\n"
                                    "j1,worker,w2,i1,m2,/dev/nvidia0,100,20,1,1,1,1,0,0,0,0\n"
                                    "j2,tensorflow,w3,i2,m3,/dev/nvidia0,100,0,1,1,1,1,0,0,0,0\n");
    put("pai/pai_machine_spec.csv", "m1,V100,96,512,8\nm2,T4,64,256,2\n");
    gp_cluster_report r;
    gp_cl_report_init(&r, "pai2020", sub, 3600);
    char err[256] = "";
    assert_int_equal(gp_cl_read(&r, "pai2020", sub, err, sizeof err), 0);
    gp_cl_finish(&r);
    check_evidence(&r);
    /* w1: 1 GPU x 900 s, used 0.8; w2: 1 x 600, used 0.2; w3: 0.5 x 640, used 0 */
    assert_int_equal(r.n_units, 3);
    assert_near(r.total.allocated_gpu_s, 900 + 600 + 320, 1e-6);
    assert_near(r.total.used_gpu_s, 720 + 120, 1e-6);
    assert_near(r.capacity_gpus, 10, 0);
    assert_int_equal(r.n_plan_measured, 3);
    assert_int_equal(r.n_plan_exceeds, 3);
    assert_near(r.util_gpu_s[8], 900, 1e-6);
    assert_near(r.util_gpu_s[2], 600, 1e-6);
    assert_near(r.util_gpu_s[0], 320, 1e-6);
    assert_near(r.idle_alloc_gpu_s, 320, 1e-6);
    assert_near(r.under_batched_gpu_s, 920, 1e-6);
    assert_int_equal(r.n_held_never_ran, 1);
    assert_int_equal(r.n_waited_never_ran, 1); /* j3 */
    /* waits: j1 150-100 = 50 s with 2 GPUs; j2 260-200 = 60 s with 0.5 GPU */
    assert_int_equal(r.wait_all.n, 2);
    assert_near(r.wait_all.sum_s, 110, 1e-9);
    assert_int_equal(r.wait_count[gp_cl_count_bucket(2)].n, 1);
    assert_int_equal(r.wait_count[gp_cl_count_bucket(0.5)].n, 1);
    /* by user and workload */
    int u1 = -1;
    for (size_t i = 0; i < r.dim_names[GP_CL_DIM_USER].n; i++)
        if (!strcmp(r.dim_names[GP_CL_DIM_USER].s[i], "u1")) u1 = (int)i;
    assert_true(u1 >= 0);
    assert_near(r.dim[GP_CL_DIM_USER][u1].allocated_gpu_s, 1500, 1e-6);
    assert_near(r.dim[GP_CL_DIM_USER][u1].used_gpu_s, 840, 1e-6);
    int found = 0;
    for (int i = 0; i < r.n_findings; i++)
        found |= r.findings[i].cls == GP_FC_NOT_READY;
    assert_true(found);
    char *js = gp_cl_json(&r);
    assert_non_null(strstr(js, "\"verdict\""));
    free(js);
    char html[512];
    snprintf(html, sizeof html, "%s/r.html", dir);
    assert_int_equal(gp_cl_write_html(&r, html, err, sizeof err), 0);
    assert_true(access(html, R_OK) == 0);
    gp_cl_report_free(&r);
}

static void test_openb_slice(void **st) {
    (void)st;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/ob", dir);
    mkdir(sub, 0755);
    put("ob/openb_node_list_gpu_node.csv",
        "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,T4\nn1,1,1,4,V100M16\n");
    put("ob/openb_pod_list_default.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                                         "pod_phase,creation_time,deletion_time,scheduled_time\n"
                                         "a,1,1,1,1000,,LS,Running,0,100,0\nb,1,1,1,500,,LS,"
                                         "Running,0,100,0\nc,1,1,1,300,,BE,Running,40,100,50\n"
                                         "d,1,1,1,1000,,BE,Pending,10,20,\n"
                                         "e,1,1,0,0,,LS,Running,0,100,30\n"
                                         "f,1,1,0,0,,LS,Pending,0,100,\n");
    gp_cluster_report r;
    gp_cl_report_init(&r, "openb2023", sub, 3600);
    char err[256] = "";
    assert_int_equal(gp_cl_read(&r, "openb2023", sub, err, sizeof err), 0);
    gp_cl_finish(&r);
    assert_near(r.capacity_gpus, 6, 0);
    /* b and c share one GPU first-fit: free 500 milli for 50 s, then 200 for 50 s */
    assert_near(r.stranded_gpu_s, 0.5 * 50 + 0.2 * 50, 1e-9);
    assert_near(r.shared_gpu_s, 0.5 * 100 + 0.3 * 50, 1e-9);
    assert_near(r.whole_gpu_s, 100, 1e-9);
    assert_near(r.peak_gpus_needed, 2, 0);
    assert_int_equal(r.n_waited_never_ran, 1);
    assert_near(r.wait_all.sum_s, 10, 1e-9); /* c waited 50 - 40; CPU-only e is apart */
    assert_int_equal(r.wait_all.n, 3);
    assert_int_equal(r.n_cpu_only, 1);
    assert_int_equal(r.n_cpu_only_pending, 1);
    assert_near(r.wait_cpu_only.sum_s, 30, 1e-9);
    assert_int_equal(r.total.n, 3);
    assert_near(r.total.measured_alloc_gpu_s, 0, 0); /* openb does not measure usage */
    check_evidence(&r);
    /* usage unknown: "-" and null, never "used 0.0"; the verdict does not claim work */
    char *js = gp_cl_json(&r);
    assert_non_null(strstr(js, "\"used_gpu_h\": null"));
    free(js);
    char *txt = NULL;
    size_t txt_n = 0;
    FILE *mf = open_memstream(&txt, &txt_n);
    gp_cl_write_text(&r, mf);
    fclose(mf);
    assert_null(strstr(txt, "used 0.0"));
    assert_non_null(strstr(txt, "used -"));
    assert_null(strstr(txt, "did work"));
    free(txt);
    gp_cl_report_free(&r);
}

static void test_philly_helios_slices(void **st) {
    (void)st;
    char sub[512], err[256] = "";
    snprintf(sub, sizeof sub, "%s/ph", dir);
    mkdir(sub, 0755);
    put("ph/cluster_job_log",
        "[{\"status\":\"Pass\",\"vc\":\"v1\",\"jobid\":\"a\",\"attempts\":[{\"start_time\":\"2017-"
        "10-07 01:12:09\","
        "\"end_time\":\"2017-10-07 "
        "01:13:09\",\"detail\":[{\"ip\":\"m1\",\"gpus\":[\"gpu0\",\"gpu1\"]}]},"
        "{\"start_time\":\"2017-10-07 01:20:00\",\"end_time\":\"2017-10-07 "
        "02:20:00\",\"detail\":[{\"ip\":\"m2\","
        "\"gpus\":[\"gpu0\",\"gpu1\"]}]}],\"submitted_time\":\"2017-10-07 "
        "01:11:39\",\"user\":\"u\"},\n"
        "{\"status\":\"Killed\",\"vc\":\"v1\",\"jobid\":\"b\",\"attempts\":[],\"submitted_time\":"
        "\"2017-10-07 01:00:00\","
        "\"user\":\"u\"}]\n");
    put("ph/cluster_gpu_util",
        "time,machineId,gpu0_util,gpu1_util\n2017-10-03 00:08:00 PDT,m1,50,NA\n"
        "2017-10-03 00:09:00 PDT,m1,0,100\n");
    gp_cluster_report r;
    gp_cl_report_init(&r, "philly", sub, 3600);
    assert_int_equal(gp_cl_read(&r, "philly", sub, err, sizeof err), 0);
    gp_cl_finish(&r);
    assert_int_equal(r.n_jobs, 2);
    assert_near(r.total.allocated_gpu_s, 2 * 60 + 2 * 3600, 1e-9);
    assert_int_equal(r.n_failed, 1); /* first attempt was retried */
    assert_near(r.wait_all.sum_s, 30, 1e-9);
    assert_int_equal(r.n_waited_never_ran, 1);
    assert_int_equal(r.ts_na, 1);
    assert_near(r.ts_online_gpu_s, 3 * 60, 1e-9);
    assert_near(r.ts_busy_gpu_s, 1.5 * 60, 1e-9);
    assert_near(r.ts_idle_gpu_s, 60, 1e-9);
    check_evidence(&r);
    gp_cl_report_free(&r);

    put("ph/bad.json", "[{\"status\":\"Pass\",\n \"vc\": }]");
    snprintf(sub, sizeof sub, "%s/ph/bad.json", dir);
    gp_cl_report_init(&r, "philly", sub, 3600);
    assert_int_equal(gp_cl_read(&r, "philly", sub, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad.json:2:"));
    gp_cl_report_free(&r);
    /* Nesting far past the log's 7 levels is refused where it starts (a million '[' made
     * yajl copy its growing stack for minutes), whatever follows. */
    char deep[200001];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    put("deep.json", deep);
    snprintf(sub, sizeof sub, "%s/deep.json", dir);
    gp_cl_report_init(&r, "philly", sub, 3600);
    assert_int_equal(gp_cl_read(&r, "philly", sub, err, sizeof err), -1);
    if (!strstr(err, "deep.json:1:33: JSON nested deeper than 32 levels")) fail_msg("%s", err);
    gp_cl_report_free(&r);

    put("helios.csv", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_"
                      "time,duration,queue\n"
                      "1,uA,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 "
                      "04:55:09,36848,0\n"
                      "2,uB,vc2,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:43:27,2020-06-09 "
                      "18:45:36,129,120\n");
    snprintf(sub, sizeof sub, "%s/helios.csv", dir);
    gp_cl_report_init(&r, "helios", sub, 3600);
    assert_int_equal(gp_cl_read(&r, "helios", sub, err, sizeof err), 0);
    gp_cl_finish(&r);
    assert_near(r.total.allocated_gpu_s, 36848 + 4 * 129, 1e-9);
    assert_near(r.failed_gpu_s, 4 * 129, 1e-9);
    assert_near(r.wait_all.sum_s, 120, 1e-9);
    check_evidence(&r);
    gp_cl_report_free(&r);
}

/* cluster-trace-gpu-v2025: columns and NaN meanings from the trace's README
 * (github.com/alibaba/clusterdata cluster-trace-gpu-v2025/README.md); the first two rows
 * are the README's own sample rows. */
static void test_alibaba2025_slice(void **st) {
    (void)st;
    char sub[512], err[512] = "";
    snprintf(sub, sizeof sub, "%s/a25", dir);
    mkdir(sub, 0755);
    put("a25/disaggregated_DLRM_trace.csv",
        "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
        "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
        "creation_time,scheduled_time,deletion_time\n"
        "instance_7185,HN,app_0,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,,,\n"
        "instance_13574,CN,app_130,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,1435629.0,1435629.0,"
        "1435760.0\n"
        "i3,HN,app_0,12,12,2,2,25,25,120.0,120.0,680.0,800.0,8,100.0,160.0,1000.0\n"
        "i4,HN,app_1,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,500.0,NaN,NaN\n"
        "i5,HN,app_1,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,NaN,NaN,2000000.0\n");
    char why[600];
    const char *f = gp_cl_detect(sub, why, sizeof why, err, sizeof err);
    assert_non_null(f);
    assert_string_equal(f, "alibaba2025");
    char file[600];
    snprintf(file, sizeof file, "%s/disaggregated_DLRM_trace.csv", sub);
    f = gp_cl_detect(file, why, sizeof why, err, sizeof err);
    assert_non_null(f);
    assert_string_equal(f, "alibaba2025");
    assert_non_null(strstr(why, "instance_sn"));

    gp_cluster_report r;
    gp_cl_report_init(&r, "auto", sub, 3600);
    assert_int_equal(gp_cl_read(&r, "auto", sub, err, sizeof err), 0);
    assert_string_equal(r.format, "alibaba2025");
    gp_cl_finish(&r);
    /* trace end = 2e6 (latest time); 7185 ran [0, 2e6), i3 2 GPUs x 840 s, i5 [0, 2e6) */
    assert_int_equal(r.n_units, 3);
    assert_near(r.total.allocated_gpu_s, 2e6 + 2 * 840 + 2e6, 1e-6);
    assert_near(r.total.measured_alloc_gpu_s, 0, 0);
    assert_int_equal(r.n_cpu_only, 1);
    assert_int_equal(r.n_waited_never_ran, 1); /* i4: created, never scheduled */
    assert_int_equal(r.wait_all.n, 1);
    assert_near(r.wait_all.sum_s, 60, 1e-9);
    /* the inference/training split: every instance of this trace is inference */
    assert_int_equal(r.dim_names[GP_CL_DIM_WORKLOAD].n, 1);
    assert_string_equal(r.dim_names[GP_CL_DIM_WORKLOAD].s[0], "inference");
    assert_int_equal(r.dim_names[GP_CL_DIM_GROUP].n, 2);
    check_evidence(&r);
    gp_cl_report_free(&r);

    put("a25/bad.csv", "instance_sn,role,app_name,gpu_request,creation_time,scheduled_time,"
                       "deletion_time\ni1,HN,a,1,10,oops,20\n");
    snprintf(file, sizeof file, "%s/bad.csv", sub);
    gp_cl_report_init(&r, "alibaba2025", file, 3600);
    assert_int_equal(gp_cl_read(&r, "alibaba2025", file, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad.csv:2:"));
    gp_cl_report_free(&r);
}

/* Format detection: every slice written here is recognised by content; other content is
 * refused with the list of what was expected. */
static void test_detect(void **st) {
    (void)st;
    char p[600], why[600], err[1024];
    struct {
        const char *path, *want;
    } cases[] = {{"pai", "pai2020"},
                 {"ob", "openb2023"},
                 {"ph", "philly"},
                 {"helios.csv", "helios"},
                 {"ph/cluster_gpu_util", "philly"},
                 {"ph/cluster_job_log", "philly"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, cases[i].path);
        const char *f = gp_cl_detect(p, why, sizeof why, err, sizeof err);
        if (!f) fail_msg("%s: %s", p, err);
        assert_string_equal(f, cases[i].want);
    }
    put("other.csv", "a,b,c\n1,2,3\n");
    snprintf(p, sizeof p, "%s/other.csv", dir);
    assert_null(gp_cl_detect(p, why, sizeof why, err, sizeof err));
    assert_non_null(strstr(err, "expected one of"));
    assert_non_null(strstr(err, "alibaba2025"));
}

/* Real files: row counts against independent tools run now. */
static void test_real_files(void **st) {
    (void)st;
    char p[512], cmd[1024], err[256] = "";
    const char *d = gp_test_data_dir();
    snprintf(p, sizeof p, "%s/cluster/v2023/openb_pod_list_default.csv", d);
    if (access(p, R_OK) != 0) skip();
    gp_cluster_report r;
    snprintf(p, sizeof p, "%s/cluster/v2023", d);
    gp_cl_report_init(&r, "openb2023", p, 3600);
    assert_int_equal(gp_cl_read(&r, "openb2023", p, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "awk 'END{print NR-1}' %s/openb_pod_list_default.csv", p);
    assert_int_equal(r.tables[1].rows, (int64_t)shell_num(cmd));
    snprintf(cmd, sizeof cmd, "awk -F, 'NR>1{s+=$4}END{print s}' %s/openb_node_list_gpu_node.csv",
             p);
    assert_near(r.capacity_gpus, shell_num(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "awk -F, 'NR>1 && $8==\"Pending\"' %s/openb_pod_list_default.csv | wc -l", p);
    snprintf(cmd, sizeof cmd,
             "awk -F, 'NR>1 && $8==\"Pending\" && $4>0' %s/openb_pod_list_default.csv | wc -l", p);
    assert_int_equal(r.n_waited_never_ran, (int64_t)shell_num(cmd));
    /* queue wait only over pods that asked for a GPU and were scheduled */
    snprintf(cmd, sizeof cmd,
             "awk -F, 'NR>1 && $8!=\"Pending\" && $4>0' %s/openb_pod_list_default.csv | wc -l", p);
    assert_int_equal(r.wait_all.n, (int64_t)shell_num(cmd));
    snprintf(cmd, sizeof cmd,
             "awk -F, 'NR>1 && $8!=\"Pending\" && $4==0' %s/openb_pod_list_default.csv | wc -l", p);
    assert_int_equal(r.n_cpu_only, (int64_t)shell_num(cmd));
    assert_true(r.n_cpu_only > 0);
    gp_cl_finish(&r);
    check_evidence(&r);
    gp_cl_report_free(&r);

    /* the shared v2020 folder has the machine list but no job/task/instance table */
    snprintf(p, sizeof p, "%s/cluster/v2020", d);
    gp_cl_report_init(&r, "pai2020", p, 3600);
    assert_int_equal(gp_cl_read(&r, "pai2020", p, err, sizeof err), -1);
    assert_non_null(strstr(err, "pai_instance_table"));
    gp_cl_report_free(&r);

    snprintf(p, sizeof p, "%s/cluster/v2026_genai", d);
    gp_cl_report_init(&r, "genai2026", p, 600);
    assert_int_equal(gp_cl_read(&r, "genai2026", p, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import csv,io,tarfile,sys; "
             "t=tarfile.open('%s/pod_gpu_duty_cycle_anon.tar.gz');"
             "m=[x for x in t.getmembers() if x.isfile()][0];"
             "rows=list(csv.reader(io.TextIOWrapper(t.extractfile(m))));"
             "print(len(rows)-1, sum(float(x[0]) for x in rows[1:])/100, len(set(x[2] for x in "
             "rows[1:])))\"",
             p);
    FILE *py = popen(cmd, "r");
    double n = -1, busy = -1, conts = -1;
    assert_int_equal(fscanf(py, "%lf %lf %lf", &n, &busy, &conts), 3);
    pclose(py);
    assert_int_equal(r.tables[0].rows, (int64_t)n);
    assert_int_equal(r.ts_units, (int64_t)conts);
    /* busy GPU-s = sum of duty fractions x the sample period */
    assert_near(r.ts_busy_gpu_s, busy * r.ts_interval_s, 1e-6 * busy * r.ts_interval_s);
    gp_cl_finish(&r);
    check_evidence(&r);
    {
        char *txt = NULL;
        size_t txt_n = 0;
        FILE *mf = open_memstream(&txt, &txt_n);
        gp_cl_write_text(&r, mf);
        fclose(mf);
        assert_null(strstr(txt, " 0 containers with a run interval"));
        char want[64];
        snprintf(want, sizeof want, "%lld containers seen", (long long)conts);
        assert_non_null(strstr(txt, want));
        free(txt);
    }
    gp_cl_report_free(&r);
}

int main(void) {
    dir = gp_test_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evidence_refuses_false),
        cmocka_unit_test(test_csv_edges),
        cmocka_unit_test(test_csv_buffers),
        cmocka_unit_test(test_pai_slice),
        cmocka_unit_test(test_openb_slice),
        cmocka_unit_test(test_philly_helios_slices),
        cmocka_unit_test(test_alibaba2025_slice),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_real_files),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 0;
    free(dir);
    return rc;
}
