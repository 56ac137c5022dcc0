/* dl.c: the loader behind the optional-library shims (dl.h). */
#include "util/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void dl_open(gp_dl_lib *lib, int quiet) {
    lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        const char *why = dlerror();
        if (!quiet)
            fprintf(stderr, "goodput: this command needs %s (%s): cannot load %s: %s\n", lib->lib,
                    lib->package, lib->soname, why ? why : "unknown error");
        return;
    }
    for (size_t i = 0; i < lib->n_syms; i++) {
        void *p = dlsym(lib->handle, lib->syms[i].name);
        if (!p) {
            if (!quiet)
                fprintf(stderr,
                        "goodput: this command needs %s (%s): %s has no symbol %s (too old a "
                        "version?)\n",
                        lib->lib, lib->package, lib->soname, lib->syms[i].name);
            return;
        }
        /* POSIX: dlsym's object pointer becomes a function pointer by copying its bytes;
         * the slot is a function-pointer object of the symbol's own type. */
        memcpy(lib->syms[i].slot, &p, sizeof p);
    }
    lib->ok = 1;
}

void gp_dl_open(gp_dl_lib *lib) {
    dl_open(lib, 0);
}
void gp_dl_open_quiet(gp_dl_lib *lib) {
    dl_open(lib, 1);
}

int gp_dl_require(const char *name) {
    if (!strcmp(name, "curl")) return gp_dl_curl_load();
    if (!strcmp(name, "pq")) return gp_dl_pq_load();
    if (!strcmp(name, "xml2")) return gp_dl_xml2_load();
    if (!strcmp(name, "mhd")) return gp_dl_mhd_load();
    fprintf(stderr, "goodput: internal error: unknown optional library '%s'\n", name);
    return -1;
}
