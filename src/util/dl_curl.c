/* dl_curl.c: the libcurl functions goodput calls, forwarded to libcurl.so.4 opened on
 * first use (dl.h explains why). Only the easy interface is used (ingest/scrape.c,
 * sources/dcgm.c); add a function here when the code starts to call a new one.
 *
 * curl_easy_setopt and curl_easy_getinfo are variadic with exactly one argument after the
 * option, whose type the option number encodes (curl.h: CURLOPTTYPE_*): forwarded as one
 * argument of that same type. */
#define CURL_DISABLE_TYPECHECK /* the shim defines the functions the type-check macros wrap */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>

#include "util/dl.h"

static struct {
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
} fn;

static const gp_dl_sym syms[] = {
    {"curl_easy_init", &fn.easy_init},           {"curl_easy_setopt", &fn.easy_setopt},
    {"curl_easy_perform", &fn.easy_perform},     {"curl_easy_cleanup", &fn.easy_cleanup},
    {"curl_easy_getinfo", &fn.easy_getinfo},     {"curl_easy_reset", &fn.easy_reset},
    {"curl_easy_strerror", &fn.easy_strerror},   {"curl_slist_append", &fn.slist_append},
    {"curl_slist_free_all", &fn.slist_free_all},
};

static gp_dl_lib lib = {"libcurl", "libcurl4", "libcurl.so.4", syms, sizeof syms / sizeof syms[0],
                        0,         NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open(&lib);
}

int gp_dl_curl_load(void) {
    pthread_once(&once, init);
    return lib.ok ? 0 : -1;
}

CURL *curl_easy_init(void) {
    return gp_dl_curl_load() ? NULL : fn.easy_init();
}

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...) {
    if (gp_dl_curl_load()) return CURLE_FAILED_INIT;
    typedef void (*any_fn)(void);
    va_list ap;
    va_start(ap, option);
    CURLcode rc;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = fn.easy_setopt(curl, option, v);
    } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = fn.easy_setopt(curl, option, v);
    } else if (option < CURLOPTTYPE_OFF_T) {
        any_fn v = va_arg(ap, any_fn);
        rc = fn.easy_setopt(curl, option, v);
    } else if (option < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = fn.easy_setopt(curl, option, v);
    } else { /* CURLOPTTYPE_BLOB: a struct curl_blob * */
        void *v = va_arg(ap, void *);
        rc = fn.easy_setopt(curl, option, v);
    }
    va_end(ap);
    return rc;
}

CURLcode curl_easy_perform(CURL *curl) {
    return gp_dl_curl_load() ? CURLE_FAILED_INIT : fn.easy_perform(curl);
}

/* NULL is a no-op, as in libcurl, and does not load the library. */
void curl_easy_cleanup(CURL *curl) {
    if (curl && !gp_dl_curl_load()) fn.easy_cleanup(curl);
}

/* Every CURLINFO_* takes one pointer (to a long, double, char *, curl_off_t, ...). */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...) {
    if (gp_dl_curl_load()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    void *out = va_arg(ap, void *);
    va_end(ap);
    return fn.easy_getinfo(curl, info, out);
}

void curl_easy_reset(CURL *curl) {
    if (!gp_dl_curl_load()) fn.easy_reset(curl);
}

const char *curl_easy_strerror(CURLcode code) {
    return gp_dl_curl_load() ? "libcurl (libcurl4) could not be loaded" : fn.easy_strerror(code);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s) {
    return gp_dl_curl_load() ? NULL : fn.slist_append(list, s);
}

void curl_slist_free_all(struct curl_slist *list) {
    if (list && !gp_dl_curl_load()) fn.slist_free_all(list);
}
