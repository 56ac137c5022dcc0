/* top_http.c: a top snapshot from a running agent's HTTP API (docs/api.md): /api/v1/jobs
 * (the report's job objects), /api/v1/devices (newest sample, jobs holding each GPU) and
 * /api/v1/findings (ranked; the first of each job is its current finding). libcurl is
 * opened on demand (util/dl.h). */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "top/top.h"

typedef struct {
    char *p;
    size_t n;
} buf;

static size_t on_data(char *d, size_t sz, size_t nm, void *u) {
    buf *b = u;
    size_t k = sz * nm;
    if (b->n + k > (64u << 20)) return 0; /* a snapshot is far smaller; refuse runaway bodies */
    char *q = realloc(b->p, b->n + k + 1);
    if (!q) return 0;
    memcpy(q + b->n, d, k);
    b->p = q;
    b->n += k;
    b->p[b->n] = 0;
    return k;
}

static json_t *get(CURL *c, const char *base, const char *path, const char *token, char *err,
                   size_t errlen) {
    char url[1024], auth[600];
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof url, "%.*s%s", (int)bl, base, path);
    buf b = {0};
    struct curl_slist *h = NULL;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(NULL, auth);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    }
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    json_t *j = NULL;
    if (rc != CURLE_OK)
        snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(rc));
    else if (code != 200)
        snprintf(err, errlen, "%s: HTTP %ld", url, code);
    else {
        json_error_t je;
        j = json_loadb(b.p ? b.p : "", b.n, 0, &je);
        if (!j) snprintf(err, errlen, "%s:%d: %s", url, je.line, je.text);
    }
    free(b.p);
    return j;
}

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static void str(char *dst, size_t n, json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    snprintf(dst, n, "%s", v ? v : "");
}

static const char * or (const char *s, const char *dflt) {
    return s ? s : dflt;
}

static double goodput_of(const gp_top_snap *s, const char *job) {
    for (size_t i = 0; i < s->n_jobs; i++)
        if (!strcmp(s->jobs[i].id, job)) return s->jobs[i].goodput;
    return -1;
}

static int fill(gp_top_snap *s, json_t *jobs, json_t *devs, json_t *finds) {
    json_t *ja = json_object_get(jobs, "jobs"), *da = json_object_get(devs, "devices"),
           *fa = json_object_get(finds, "findings"), *v;
    size_t i;
    s->jobs = calloc(json_array_size(ja) + 1, sizeof *s->jobs);
    s->gpus = calloc(json_array_size(da) + 1, sizeof *s->gpus);
    if (!s->jobs || !s->gpus) return -1;
    json_array_foreach(ja, i, v) {
        gp_top_job *r = &s->jobs[s->n_jobs++];
        str(r->id, sizeof r->id, v, "id");
        str(r->user, sizeof r->user, v, "user");
        str(r->kind, sizeof r->kind, v, "kind");
        str(r->state, sizeof r->state, v, "state");
        r->gpus = (int)json_integer_value(json_object_get(v, "gpus"));
        r->alloc_gpu_h = num(v, "allocated_gpu_h");
        r->util = num(v, "mean_gpu_util");
        r->goodput = num(v, "goodput");
        r->mem_frac = num(v, "mean_mem_used_frac");
        r->energy_kwh = num(v, "energy_kwh");
        size_t k;
        json_t *f;
        json_array_foreach(fa, k, f) { /* ranked: the first of the job is its top one */
            const char *job = json_string_value(json_object_get(f, "job"));
            if (!job || strcmp(job, r->id)) continue;
            snprintf(r->finding, sizeof r->finding, "%s: %s",
                     or (json_string_value(json_object_get(f, "class")), "?"),
                     or (json_string_value(json_object_get(f, "summary")), ""));
            str(r->advice, sizeof r->advice, f, "recommendation");
            break;
        }
    }
    json_array_foreach(da, i, v) {
        gp_top_gpu *g = &s->gpus[s->n_gpus++];
        json_t *l = json_object_get(v, "latest");
        str(g->uuid, sizeof g->uuid, v, "uuid");
        str(g->name, sizeof g->name, v, "name");
        g->index = (int)json_integer_value(json_object_get(v, "index"));
        g->util = num(l, "gpu_util");
        g->power_w = num(l, "power_w");
        double tot = num(v, "memory_total_bytes"), ratio = num(l, "mem_used_ratio");
        g->mem_total_gib = tot >= 0 ? tot / 1073741824.0 : -1;
        g->mem_used_gib = tot >= 0 && ratio >= 0 ? ratio * tot / 1073741824.0 : -1;
        g->goodput = -1;
        size_t k;
        json_t *j;
        json_array_foreach(json_object_get(v, "jobs_now"), k, j) {
            size_t len = strlen(g->jobs);
            snprintf(g->jobs + len, sizeof g->jobs - len, "%s%s", len ? "," : "",
                     or (json_string_value(j), ""));
            if (k == 0 && json_string_value(j)) /* the first holder's */
                g->goodput = goodput_of(s, json_string_value(j));
        }
    }
    return 0;
}

int gp_top_http_read(const char *base, const char *token, gp_top_snap *out, char *err,
                     size_t errlen) {
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "libcurl unavailable");
        return -1;
    }
    json_t *jobs = get(c, base, "/api/v1/jobs", token, err, errlen);
    json_t *devs = jobs ? get(c, base, "/api/v1/devices", token, err, errlen) : NULL;
    json_t *finds = devs ? get(c, base, "/api/v1/findings?limit=1000", token, err, errlen) : NULL;
    curl_easy_cleanup(c);
    int rc = -1;
    gp_top_snap s = {0};
    if (finds) {
        if (fill(&s, jobs, devs, finds) == 0) {
            gp_top_snap_free(out);
            *out = s;
            rc = 0;
        } else {
            gp_top_snap_free(&s);
            snprintf(err, errlen, "out of memory");
        }
    }
    json_decref(jobs);
    json_decref(devs);
    json_decref(finds);
    return rc;
}
