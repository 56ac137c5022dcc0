/* dl.h: optional libraries loaded only by the commands that use them.
 *
 * The product binary links libc, SQLite, jansson, yajl and zlib and nothing else, so
 * `goodput --version` or `goodput report` map a handful of shared objects instead of the
 * ~45 that libcurl, libpq, libxml2 and libmicrohttpd pull in with their TLS, Kerberos,
 * LDAP and ICU dependencies. Those four are opened with dlopen() by name (the Debian
 * soname) the first time one of their functions is called: src/util/dl_curl.c, dl_pq.c,
 * dl_xml2.c and dl_mhd.c define the very functions the code calls, with the library
 * headers' prototypes, each forwarding through a pointer resolved by dlsym(). Call sites
 * stay as they are; a function the code starts to use must be added to its shim (the link
 * fails with "undefined reference" until it is).
 *
 * When a library is missing (or lacks a symbol), the first call prints one line
 *   goodput: this command needs libcurl (libcurl4): cannot load libcurl.so.4: <reason>
 * on stderr and every forwarded call returns the library's own failure value (NULL,
 * CURLE_FAILED_INIT, PGRES_FATAL_ERROR, MHD_NO, ...), so the caller's ordinary error path
 * runs. A command that knows up front it needs a library calls gp_dl_require() and exits
 * 1 on failure, before doing any work.
 *
 * Loading is thread-safe (pthread_once per library); after it the pointers are read-only.
 * Handles are never closed: the libraries keep threads and atexit handlers of their own.
 * Tests link the real libraries as well; the shims then forward to the same objects. */
#ifndef GP_UTIL_DL_H
#define GP_UTIL_DL_H

#include <stddef.h>

/* Loads "curl", "pq", "xml2" or "mhd" (see above) if not loaded yet. Returns 0 when it is
 * usable, -1 when not (the reason was printed once on stderr) or the name is unknown. */
int gp_dl_require(const char *name);

/* For the shims: one optional library and the symbols it must export. */
typedef struct {
    const char *name; /* the symbol, e.g. "curl_easy_init" */
    void *slot;       /* where its address is stored: a function-pointer object */
} gp_dl_sym;

typedef struct {
    const char *lib;     /* "libcurl", as a user knows it */
    const char *package; /* the Debian package that provides it, "libcurl4" */
    const char *soname;  /* "libcurl.so.4" */
    const gp_dl_sym *syms;
    size_t n_syms;
    int ok;       /* 1 once every slot is filled */
    void *handle; /* the dlopen handle, or NULL */
} gp_dl_lib;

/* Opens lib and fills every slot, printing the reason on stderr when it cannot. Not
 * thread-safe by itself: each shim calls it from its pthread_once init function, so it
 * runs once per library and process. */
void gp_dl_open(gp_dl_lib *lib);
/* The same, silent: for an optional speed-up whose caller has a fallback (libdeflate). */
void gp_dl_open_quiet(gp_dl_lib *lib);

/* The loaders of each shim (gp_dl_require dispatches to them). */
int gp_dl_curl_load(void);
int gp_dl_pq_load(void);
int gp_dl_xml2_load(void);
int gp_dl_mhd_load(void);

#endif
