/* findings_group.c: see findings_group.h. Groups are keyed by class and fix text: two
 * findings of one class with different advice (say, idle time from data loading and from
 * sync) stay apart because the reader acts on them differently. */
#include "report/findings_group.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/term.h"

static double waste_of(const gp_finding *x) {
    return x->wasted_gpu_s >= 0 ? x->wasted_gpu_s : -1;
}

size_t gp_findings_group(const gp_finding *f, size_t n, gp_finding_group **out) {
    gp_finding_group *g = calloc(n ? n : 1, sizeof *g);
    size_t ng = 0;
    if (!g) abort();
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        for (; k < ng; k++) {
            const gp_finding *y = &f[g[k].idx[0]];
            if (y->cls == f[i].cls && strcmp(y->recommendation, f[i].recommendation) == 0) break;
        }
        if (k == ng) {
            g[ng].idx = calloc(n, sizeof *g[ng].idx);
            if (!g[ng].idx) abort();
            g[ng].wasted_gpu_s = -1;
            ng++;
        }
        /* keep the group's findings largest waste first (insertion; groups are small) */
        size_t pos = g[k].n;
        while (pos > 0 && waste_of(&f[g[k].idx[pos - 1]]) < waste_of(&f[i])) {
            g[k].idx[pos] = g[k].idx[pos - 1];
            pos--;
        }
        g[k].idx[pos] = i;
        g[k].n++;
        if (f[i].wasted_gpu_s >= 0)
            g[k].wasted_gpu_s = (g[k].wasted_gpu_s < 0 ? 0 : g[k].wasted_gpu_s) + f[i].wasted_gpu_s;
    }
    /* rank by total waste, unknown last; ties keep the order given (stable insertion) */
    for (size_t i = 1; i < ng; i++) {
        gp_finding_group t = g[i];
        size_t j = i;
        while (j > 0 && g[j - 1].wasted_gpu_s < t.wasted_gpu_s) {
            g[j] = g[j - 1];
            j--;
        }
        g[j] = t;
    }
    *out = g;
    return ng;
}

void gp_finding_groups_free(gp_finding_group *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(g[i].idx);
    free(g);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* "rank 12" -> prefix "rank", number 12; 0 when the scope is not "<word> <integer>" */
static int split_scope(const char *s, char *prefix, size_t cap, long *num) {
    const char *sp = strrchr(s, ' ');
    if (!sp || sp == s || !sp[1]) return 0;
    char *end;
    long v = strtol(sp + 1, &end, 10);
    if (*end || v < 0) return 0;
    size_t pl = (size_t)(sp - s);
    if (pl >= cap) return 0;
    memcpy(prefix, s, pl);
    prefix[pl] = 0;
    *num = v;
    return 1;
}

static void append(char *buf, size_t cap, size_t *len, const char *s) {
    size_t k = strlen(s);
    if (*len + k + 1 > cap) k = cap - *len - 1;
    memcpy(buf + *len, s, k);
    *len += k;
    buf[*len] = 0;
}

void gp_finding_group_scopes(const gp_finding *f, const gp_finding_group *g, char *buf,
                             size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    if (cap < 2) return;
    char p0[96], p[96];
    long *nums = malloc(g->n * sizeof *nums);
    if (!nums) abort();
    int same = g->n > 1;
    for (size_t i = 0; i < g->n && same; i++) {
        const char *s = f[g->idx[i]].scope_id;
        if (!split_scope(s, i ? p : p0, sizeof p, &nums[i]) || (i && strcmp(p, p0) != 0)) same = 0;
    }
    if (!same) {
        for (size_t i = 0; i < g->n; i++) {
            if (i) append(buf, cap, &len, ", ");
            append(buf, cap, &len, f[g->idx[i]].scope_id);
        }
        free(nums);
        return;
    }
    qsort(nums, g->n, sizeof *nums, cmp_long);
    char t[128];
    snprintf(t, sizeof t, "%ss ", p0);
    append(buf, cap, &len, t);
    for (size_t i = 0; i < g->n;) {
        size_t j = i;
        while (j + 1 < g->n && nums[j + 1] <= nums[j] + 1)
            j++;
        if (j > i + 1 || (j == i + 1 && nums[j] != nums[i]))
            snprintf(t, sizeof t, "%s%ld-%ld", i ? ", " : "", nums[i], nums[j]);
        else
            snprintf(t, sizeof t, "%s%ld", i ? ", " : "", nums[i]);
        append(buf, cap, &len, t);
        i = j + 1;
    }
    free(nums);
}

static void fmt_waste(char *buf, size_t cap, double gpu_s, const gp_group_text_opts *o) {
    if (gpu_s < 0) {
        snprintf(buf, cap, "waste unknown");
        return;
    }
    double v = gpu_s / o->unit_s;
    if (v >= 100)
        snprintf(buf, cap, "%.0f %s wasted", v, o->unit);
    else
        snprintf(buf, cap, "%.3g %s wasted", v, o->unit);
}

static void fmt_num(char *buf, size_t cap, double v) {
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else if (fabs(v) >= 1e6 || (fabs(v) < 1e-3 && v != 0))
        snprintf(buf, cap, "%.3g", v);
    else if (fabs(v - round(v)) < 1e-9)
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%.4g", v);
}

void gp_findings_print_grouped(FILE *out, const gp_finding *f, size_t n,
                               const gp_group_text_opts *o) {
    if (n == 0) {
        fprintf(out, "  none\n");
        return;
    }
    gp_finding_group *g;
    size_t ng = gp_findings_group(f, n, &g);
    gp_style st = gp_style_for(out);
    char scopes[2048], waste[64], head[256], line[2400];
    for (size_t k = 0; k < ng; k++) {
        const gp_finding *x = &f[g[k].idx[0]];
        gp_finding_group_scopes(f, &g[k], scopes, sizeof scopes);
        fmt_waste(waste, sizeof waste, g[k].wasted_gpu_s, o);
        snprintf(head, sizeof head, "%2zu. %s%s%s", k + 1, st.warn, gp_finding_class_name(x->cls),
                 st.off);
        const char *sn = gp_scope_name(x->scope);
        if (g[k].n == 1 && strncmp(scopes, sn, strlen(sn)) != 0)
            snprintf(line, sizeof line, "%s %s, %s", sn, scopes, waste);
        else if (g[k].n == 1)
            snprintf(line, sizeof line, "%s, %s", scopes, waste);
        else
            snprintf(line, sizeof line, "on %zu %ss, %s", g[k].n, gp_scope_name(x->scope), waste);
        fprintf(out, "%s %s\n", head, line);
        if (g[k].n > 1) {
            gp_wrap_print(out, "    ", 6, scopes, o->width);
            snprintf(line, sizeof line, "largest, %s: %s", x->scope_id, x->summary);
            gp_wrap_print(out, "    ", 6, line, o->width);
        } else {
            gp_wrap_print(out, "    ", 6, x->summary, o->width);
        }
        for (int e = 0; o->evidence && e < x->n_evidence; e++) {
            char v[32], th[32];
            fmt_num(v, sizeof v, x->evidence[e].value);
            fmt_num(th, sizeof th, x->evidence[e].threshold);
            snprintf(line, sizeof line, "%s = %s %s %s (%s)", x->evidence[e].metric, v,
                     x->evidence[e].op, th, x->evidence[e].source);
            gp_wrap_print(out, "    evidence: ", 14, line, o->width);
        }
        if (x->recommendation[0]) {
            char lab[32];
            snprintf(lab, sizeof lab, "    %s: ", o->fix ? o->fix : "fix");
            gp_wrap_print(out, lab, (int)strlen(lab), x->recommendation, o->width);
        }
    }
    gp_finding_groups_free(g, ng);
}

json_t *gp_findings_groups_json(const gp_finding *f, size_t n) {
    gp_finding_group *g;
    size_t ng = gp_findings_group(f, n, &g);
    json_t *arr = json_array();
    for (size_t k = 0; k < ng; k++) {
        const gp_finding *x = &f[g[k].idx[0]];
        json_t *o = json_object(), *sc = json_array();
        for (size_t i = 0; i < g[k].n; i++)
            json_array_append_new(sc, json_string(f[g[k].idx[i]].scope_id));
        json_object_set_new(o, "class", json_string(gp_finding_class_name(x->cls)));
        json_object_set_new(o, "findings", json_integer((json_int_t)g[k].n));
        json_object_set_new(o, "scopes", sc);
        json_object_set_new(o, "wasted_gpu_s",
                            g[k].wasted_gpu_s >= 0 ? json_real(g[k].wasted_gpu_s) : json_null());
        json_object_set_new(o, "recommendation", json_string(x->recommendation));
        json_array_append_new(arr, o);
    }
    gp_finding_groups_free(g, ng);
    return arr;
}
