/* registry.c: the constant table of telemetry backends and the "name:arg" opener.
 * Adding a backend = one new file defining `const gp_source_ops gp_source_X` plus one
 * line in sources_list.h. */
#include "sources/source.h"

#include <stdio.h>
#include <string.h>

#define GP_SOURCE(sym) extern const gp_source_ops sym;
#include "sources/sources_list.h"
#undef GP_SOURCE

static const gp_source_ops *const all_sources[] = {
#define GP_SOURCE(sym) &sym,
#include "sources/sources_list.h"
#undef GP_SOURCE
};

const gp_source_ops *const *gp_source_all(size_t *n) {
    *n = sizeof all_sources / sizeof all_sources[0];
    return all_sources;
}

const gp_source_ops *gp_source_find(const char *name) {
    size_t n;
    const gp_source_ops *const *all = gp_source_all(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

int gp_source_open(const char *spec, const gp_source_opts *opts, gp_source *out, char *err,
                   size_t errlen) {
    char name[32];
    size_t len = strcspn(spec, ":=");
    if (len == 0 || len >= sizeof name) {
        snprintf(err, errlen, "source '%s': expected NAME or NAME:ARG (see goodput agent --help)",
                 spec);
        return -1;
    }
    memcpy(name, spec, len);
    name[len] = 0;
    const char *arg = spec[len] ? spec + len + 1 : "";
    const gp_source_ops *ops = gp_source_find(name);
    if (!ops) {
        size_t n;
        const gp_source_ops *const *all = gp_source_all(&n);
        char known[256] = "";
        for (size_t i = 0; i < n; i++) {
            strncat(known, all[i]->name, sizeof known - strlen(known) - 1);
            if (i + 1 < n) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        snprintf(err, errlen, "source '%s': unknown source '%s' (known: %s)", spec, name, known);
        return -1;
    }
    out->ops = ops;
    out->state = NULL;
    return ops->open(arg, opts, &out->state, err, errlen);
}

void gp_source_close(gp_source *s) {
    if (s->ops && s->ops->close) s->ops->close(s->state);
    s->ops = NULL;
    s->state = NULL;
}
