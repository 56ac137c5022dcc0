/* serve_testutil.h: what the HTTP server's unit tests share: an offline server on a store
 * and a GET that must answer JSON with a given status. */
#ifndef GP_SERVE_TESTUTIL_H
#define GP_SERVE_TESTUTIL_H
#include "testutil.h"

#include <jansson.h>

#include "serve/serve.h"

/* A server that renders requests without listening (listen = "none"). */
static inline gp_serve *serve_offline(const char *db) {
    gp_serve *s;
    char err[256];
    gp_serve_opts o = {.listen = "none", .db_path = db};
    assert_int_equal(gp_serve_start(&o, &s, err, sizeof err), 0);
    return s;
}

/* GET path?query; asserts the status and a JSON body; the caller owns the result. */
static inline json_t *serve_get_json(gp_serve *s, const char *path, const char *query,
                                     int want_status) {
    char *body;
    size_t len;
    const char *ct;
    int st = gp_serve_render(s, "GET", path, query, &body, &len, &ct);
    if (st != want_status) fprintf(stderr, "%s?%s -> %d %s\n", path, query ? query : "", st, body);
    assert_int_equal(st, want_status);
    assert_string_equal(ct, "application/json");
    json_t *o = json_loadb(body, len, 0, NULL);
    free(body);
    assert_non_null(o);
    return o;
}
#endif
