/* fuzz_api.c: HTTP/API parameters (src/serve/): method, path and query string of a request
 * routed by gp_serve_render against a small store, exactly as the server's request handler
 * routes them (the libmicrohttpd layer itself is exercised by
 * tests/integration/reliability_http.sh).
 *
 * Input: byte 0 picks the method; the rest is "PATH" or "PATH?QUERY". */
#include "fuzz_util.h"

#include "serve/serve.h"
#include "store/store.h"

static gp_serve *srv;
static char db[256];

static void fz_close(void) {
    gp_serve_stop(srv);
    char p[300];
    unlink(db);
    snprintf(p, sizeof p, "%s-wal", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", db);
    unlink(p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(db, sizeof db, "%s/gp-fuzz-api-%ld.db", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    char err[512];
    gp_store *st;
    if (gp_store_open(db, 0, &st, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_api: %s\n", err);
        abort();
    }
    gp_store_close(st);
    gp_serve_opts o = {.listen = "none", .db_path = db};
    if (gp_serve_start(&o, &srv, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_api: %s\n", err);
        abort();
    }
    atexit(fz_close);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const methods[] = {"GET", "POST", "HEAD", "DELETE", "PUT", "OPTIONS"};
    if (size < 1 || size > 8192) return 0;
    const char *method = methods[data[0] % 6];
    char *s = fz_cstr(data + 1, size - 1);
    if (!s) return 0;
    char *q = strchr(s, '?');
    if (q) *q++ = 0;
    char *body = NULL;
    size_t len = 0;
    const char *ct = NULL;
    int st = gp_serve_render(srv, method, s, q, &body, &len, &ct);
    if (st < 100 || st > 599 || !body || !ct) abort();
    if (st >= 400 && strcmp(ct, "application/json") == 0 && len && !memchr(body, '{', len)) abort();
    free(body);
    free(s);
    return 0;
}
