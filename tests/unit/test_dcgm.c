/* test_dcgm.c: the dcgm-exporter source over real HTTP on loopback.
 *
 * A small Python HTTP server (standard library) is started per test group; it serves the
 * real dcgm-exporter scrape shared/data/prom/dcgm_exporter_t4.txt and a few broken
 * variants: slow (timeout), garbage, a truncated body, HTTP 500; plus a server that is
 * down. Expected values below were read off the data file by eye (see each comment). */
#include "testutil.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include "sources/dcgm.h"
#include "sources/source.h"

extern const gp_source_ops gp_source_dcgm;

static const char *server_py =
    "import http.server, sys, time\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "ex = {\n"
    " '/garbage': b'\\x00\\x01<html>not metrics</html>\\n{{{\\n',\n"
    " '/blank': b'DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-x\"} 9223372036854775794\\n'\n"
    "   b'DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-x\"} 140737488355330\\n'\n"
    "   b'DCGM_FI_DEV_SM_CLOCK{UUID=\"GPU-x\"} 2147483634\\n'\n"
    "   b'DCGM_FI_DEV_MEM_CLOCK{UUID=\"GPU-x\"} NaN\\n'\n"
    "   b'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"GPU-x\"} 9223372036854775792\\n'\n"
    "   b'DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-x\"} 55\\n',\n"
    " '/renamed': b'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{UUID=\"GPU-y\",hpc_job=\"4242\"} 1\\n'\n"
    "   b'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{UUID=\"GPU-y\",hpc_job=\"4242\"} 68\\n'\n"
    "   b'DCGM_FI_DEV_POWER_USAGE_INSTANT{UUID=\"GPU-y\"} 300\\n'\n"
    "   b'DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-y\"} 250.5\\n'\n"
    "   b'DCGM_FI_PROF_PCIE_TX_BYTES{UUID=\"GPU-y\"} 1e9\\n'\n"
    "   b'DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-z\",GPU_I_ID=\"3\",GPU_I_PROFILE=\"1g.10gb\"} "
    "0.25\\n',\n"
    "}\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "  protocol_version = 'HTTP/1.1'\n"
    "  def log_message(self, *a): pass\n"
    "  def send_body(self, code, body, length=None):\n"
    "    self.send_response(code)\n"
    "    self.send_header('Content-Type', 'text/plain; version=0.0.4')\n"
    "    self.send_header('Content-Length', str(len(body) if length is None else length))\n"
    "    self.end_headers(); self.wfile.write(body); self.wfile.flush()\n"
    "  def do_GET(self):\n"
    "    p = self.path\n"
    "    if p == '/metrics': return self.send_body(200, data)\n"
    "    if p == '/slow': time.sleep(3); return self.send_body(200, data)\n"
    "    if p == '/truncated':\n"
    "      self.close_connection = True\n"
    "      return self.send_body(200, data[:len(data)//2], len(data))\n"
    "    if p == '/500': return self.send_body(500, b'boom\\n')\n"
    "    if p in ex: return self.send_body(200, ex[p])\n"
    "    self.send_body(404, b'no\\n')\n"
    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
    "s.daemon_threads = True\n"
    "print(s.server_address[1], flush=True)\n"
    "s.serve_forever()\n";

static pid_t server_pid;
static int server_port;

static int start_server(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char py[512], data[512];
    snprintf(py, sizeof py, "%s/server.py", dir);
    FILE *f = fopen(py, "w");
    fputs(server_py, f);
    fclose(f);
    snprintf(data, sizeof data, "%s/prom/dcgm_exporter_t4.txt", gp_test_data_dir());
    int fd[2];
    if (pipe(fd) < 0) return -1;
    server_pid = fork();
    if (server_pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl("/usr/bin/python3", "python3", py, data, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *r = fdopen(fd[0], "r");
    if (!r || fscanf(r, "%d", &server_port) != 1) {
        fprintf(stderr, "python3 HTTP server did not start\n");
        return -1;
    }
    fclose(r);
    free(dir);
    return 0;
}

static int stop_server(void **st) {
    (void)st;
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        waitpid(server_pid, NULL, 0);
    }
    return 0;
}

static int open_path(const char *path, void **state, char *err, size_t errlen) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", server_port, path);
    gp_source_opts o = {.interval_ns = 1000000000LL};
    return gp_source_dcgm.open(url, &o, state, err, errlen);
}

static const gp_sample *find(const gp_sample *s, size_t n, const char *uuid) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s[i].uuid, uuid)) return &s[i];
    fail_msg("no sample for %s", uuid);
    return NULL;
}

/* The real T4 scrape: three UUIDs; series without labels are counted, not attributed. */
static void test_real_scrape(void **st) {
    (void)st;
    void *s = NULL;
    char err[512];
    if (open_path("/metrics", &s, err, sizeof err) < 0) fail_msg("%s", err);
    gp_device d[8];
    size_t nd;
    assert_int_equal(gp_source_dcgm.list_devices(s, d, 8, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 3);
    gp_sample x[8];
    size_t n;
    assert_int_equal(gp_source_dcgm.sample(s, 1000 * 1000000000LL, x, 8, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    /* GPU-20c56d28...: SM_CLOCK 300, MEM_CLOCK 405, GPU_TEMP 25, POWER_USAGE 8.969,
     * TOTAL_ENERGY_CONSUMPTION 128996013, GPU_UTIL 0, MEM_COPY_UTIL 0, XID 0, FB_USED 0;
     * no FB_TOTAL for this UUID, so total memory stays unknown (FB_FREE is not total). */
    const gp_sample *a = find(x, n, "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e");
    assert_near(a->sm_clock_mhz, 300, 0);
    assert_near(a->mem_clock_mhz, 405, 0);
    assert_near(a->temp_c, 25, 0);
    assert_near(a->power_w, 8.969, 1e-12);
    assert_true(gp_has(a->valid, GP_F_ENERGY));
    assert_int_equal(a->energy_mj, 128996013ULL);
    assert_true(gp_has(a->valid, GP_F_GPU_UTIL | GP_F_MEM_UTIL | GP_F_XID | GP_F_MEM_USED));
    assert_near(a->gpu_util, 0, 0);
    assert_int_equal(a->mem_used_bytes, 0);
    assert_false(gp_has(a->valid, GP_F_MEM_TOTAL));
    /* the PROF_* series in this file carry no labels (dummy values): not this device's */
    assert_int_equal(a->valid & (GP_F_SM_ACTIVE | GP_F_SM_OCCUPANCY | GP_F_TENSOR_ACTIVE |
                                 GP_F_FP16_ACTIVE | GP_F_PCIE_TX | GP_F_PCIE_RX),
                     0);
    assert_int_equal(a->ts_ns, 1000 * 1000000000LL);
    /* GPU-9ef1b6d0...: FB_TOTAL 15109 MiB, CLOCK_THROTTLE_REASONS 1 (gpu idle) */
    const gp_sample *b = find(x, n, "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5");
    assert_int_equal(b->mem_total_bytes, 15109ULL * 1048576ULL);
    assert_int_equal(b->throttle_reasons, 1);
    assert_false(gp_has(b->valid, GP_F_POWER));
    /* GPU-abc: the A10G pod sample, DRAM_ACTIVE 0.000003, owner ray-llm/ray-1111111 */
    const gp_sample *c = find(x, n, "GPU-abc");
    assert_near(c->dram_active, 0.000003, 1e-15);
    assert_int_equal(c->valid, GP_F_DRAM_ACTIVE);
    for (size_t i = 0; i < nd; i++) {
        if (!strcmp(d[i].uuid, "GPU-abc")) {
            assert_string_equal(d[i].name, "NVIDIA A10G");
            assert_string_equal(d[i].host, "ip-11111");
            assert_string_equal(d[i].spec->model, "A10G");
        } else {
            assert_string_equal(d[i].name, "Tesla T4");
            assert_string_equal(d[i].spec->model, "T4");
            assert_int_equal(d[i].index, 0);
        }
    }
    gp_dcgm_owner o[4];
    size_t no;
    gp_dcgm_owners(s, o, 4, &no);
    assert_int_equal(no, 1);
    assert_string_equal(o[0].uuid, "GPU-abc");
    assert_string_equal(o[0].pod, "ray-1111111");
    assert_string_equal(o[0].ns, "ray-llm");
    assert_string_equal(o[0].container, "ray-worker");
    gp_proc_sample p[4];
    assert_int_equal(gp_source_dcgm.list_processes(s, p, 4, &no, err, sizeof err), 0);
    assert_int_equal(no, 1);
    assert_string_equal(p[0].job_id, "ray-llm/ray-1111111");
    assert_int_equal(p[0].pid, -1);
    /* 14 series in the file carry no labels at all (the fixture's dummy values) */
    assert_int_equal(gp_dcgm_unattributed(s), 14);
    gp_source_dcgm.close(s);
}

static void test_blank_sentinels(void **st) {
    (void)st;
    void *s = NULL;
    char err[512];
    if (open_path("/blank", &s, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sample x[4];
    size_t n;
    assert_int_equal(gp_source_dcgm.sample(s, 1, x, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    /* INT64_NOT_SUPPORTED, FP64 blank+2, INT32 blank+2, NaN, INT64_BLANK: all unknown */
    assert_int_equal(x[0].valid, GP_F_GPU_UTIL);
    assert_near(x[0].gpu_util, 0.55, 1e-12);
    gp_source_dcgm.close(s);
}

static void test_renamed_fields_rates_mig_hpc_job(void **st) {
    (void)st;
    void *s = NULL;
    char err[512];
    if (open_path("/renamed", &s, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sample x[4];
    size_t n;
    int64_t t0 = 5000 * 1000000000LL;
    assert_int_equal(gp_source_dcgm.sample(s, t0, x, 4, &n, err, sizeof err), 0);
    const gp_sample *y = find(x, n, "GPU-y");
    assert_int_equal(y->throttle_reasons, 68); /* the newer name wins over the classic one */
    assert_near(y->power_w, 250.5, 0);         /* averaged POWER_USAGE wins over INSTANT */
    assert_int_equal(y->pcie_tx_bytes, 0);     /* first scrape: the counter starts at 0 */
    assert_int_equal(gp_source_dcgm.sample(s, t0 + 2500000000LL, x, 4, &n, err, sizeof err), 0);
    y = find(x, n, "GPU-y");
    assert_int_equal(y->pcie_tx_bytes, 2500000000ULL); /* 1e9 B/s x 2.5 s */
    const gp_sample *z = find(x, n, "GPU-z/gi3");
    assert_near(z->sm_active, 0.25, 0);
    gp_device d[4];
    size_t nd;
    gp_source_dcgm.list_devices(s, d, 4, &nd, err, sizeof err);
    int mig = 0;
    for (size_t i = 0; i < nd; i++)
        if (!strcmp(d[i].uuid, "GPU-z/gi3")) {
            mig = 1;
            assert_string_equal(d[i].parent_uuid, "GPU-z");
        }
    assert_true(mig);
    gp_proc_sample p[4];
    size_t np;
    gp_source_dcgm.list_processes(s, p, 4, &np, err, sizeof err);
    assert_int_equal(np, 1);
    assert_string_equal(p[0].job_id, "4242");
    assert_string_equal(p[0].uuid, "GPU-y");
    gp_source_dcgm.close(s);
}

static void expect_open_error(const char *path, const char *needle) {
    void *s = NULL;
    char err[512] = "";
    int rc = open_path(path, &s, err, sizeof err);
    if (rc >= 0) fail_msg("%s: opened", path);
    char url[128];
    snprintf(url, sizeof url, "dcgm: http://127.0.0.1:%d%s: ", server_port, path);
    if (strncmp(err, url, strlen(url))) fail_msg("'%s' does not start with '%s'", err, url);
    if (!strstr(err, needle)) fail_msg("'%s' does not say '%s'", err, needle);
    assert_null(strchr(err, '\n'));
}

static void test_broken_servers(void **st) {
    (void)st;
    setenv("GOODPUT_DCGM_TIMEOUT_MS", "300", 1);
    expect_open_error("/slow", "timed out");
    unsetenv("GOODPUT_DCGM_TIMEOUT_MS");
    expect_open_error("/garbage", "line 1: metric name must start");
    expect_open_error("/truncated", "transfer closed");
    expect_open_error("/500", "HTTP status 500");
    expect_open_error("/nope", "HTTP status 404");
}

static void test_server_down_and_bad_spec(void **st) {
    (void)st;
    /* a port nobody listens on: bind one, read its number, close it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    char url[128], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", ntohs(a.sin_port));
    void *s = NULL;
    gp_source_opts o = {.interval_ns = 1000000000LL};
    assert_true(gp_source_dcgm.open(url, &o, &s, err, sizeof err) < 0);
    assert_true(strstr(err, url) != NULL);
    assert_true(strstr(err, "onnect") != NULL);
    assert_true(gp_source_dcgm.open("localhost:9400", &o, &s, err, sizeof err) < 0);
    assert_true(strstr(err, "expected dcgm=URL") != NULL);
}

/* A scrape that fails after a good one returns an error and keeps the old state. */
static void test_failure_after_success(void **st) {
    (void)st;
    void *s = NULL;
    char err[512];
    if (open_path("/metrics", &s, err, sizeof err) < 0) fail_msg("%s", err);
    stop_server(NULL);
    gp_sample x[8];
    size_t n = 99;
    assert_true(gp_source_dcgm.sample(s, 2, x, 8, &n, err, sizeof err) < 0);
    assert_int_equal(n, 0);
    gp_device d[8];
    size_t nd;
    gp_source_dcgm.list_devices(s, d, 8, &nd, err, sizeof err);
    assert_int_equal(nd, 3);
    gp_source_dcgm.close(s);
    server_pid = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_scrape),
        cmocka_unit_test(test_blank_sentinels),
        cmocka_unit_test(test_renamed_fields_rates_mig_hpc_job),
        cmocka_unit_test(test_broken_servers),
        cmocka_unit_test(test_server_down_and_bad_spec),
        cmocka_unit_test(test_failure_after_success),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
