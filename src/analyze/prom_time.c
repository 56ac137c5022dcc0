/* prom_time.c: Prometheus duration and time forms (see prom_time.h). */
#include "analyze/prom_time.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int gp_prom_parse_duration(const char *s, int64_t *ms) {
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {{"ms", 1},         {"y", 365 * 86400000LL}, {"w", 7 * 86400000LL},
                 {"d", 86400000LL}, {"h", 3600000LL},        {"m", 60000LL},
                 {"s", 1000LL}};
    int64_t total = 0;
    size_t last_unit = 0;
    if (!s || !*s) return -1;
    while (*s) {
        if (!isdigit((unsigned char)*s)) return -1;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (v < 0 || v > 1000000000LL) return -1;
        s = end;
        size_t u = 0;
        for (; u < sizeof units / sizeof units[0]; u++)
            if (!strncmp(s, units[u].u, strlen(units[u].u))) break;
        if (u == sizeof units / sizeof units[0]) return -1;
        /* "ms" is listed first so "m" does not swallow it; order of appearance otherwise
         * must go from large to small units, as Go and Prometheus require */
        size_t rank = u == 0 ? 7 : u;
        if (rank <= last_unit) return -1;
        last_unit = rank;
        total += v * units[u].ms;
        s += strlen(units[u].u);
    }
    if (total <= 0) return -1;
    *ms = total;
    return 0;
}

static int parse_rfc3339(const char *s, int64_t *ms) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int consumed = 0;
    if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
        consumed == 0)
        return -1;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    const char *p = s + consumed;
    double frac = 0;
    if (*p == '.') {
        char *end;
        frac = strtod(p, &end);
        if (end == p + 1) return -1;
        p = end;
    }
    long off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm, n = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5) return -1;
        off_s = (hh * 3600L + mm * 60L) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return -1;
    }
    if (*p) return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - off_s) * 1000 + (int64_t)llround(frac * 1000);
    return 0;
}

int gp_prom_parse_time(const char *s, int64_t now_ms, int64_t *ms) {
    if (!s || !*s) return -1;
    if (!strncmp(s, "now", 3)) {
        if (!s[3]) {
            *ms = now_ms;
            return 0;
        }
        if (s[3] != '-' && s[3] != '+') return -1;
        int64_t d;
        if (gp_prom_parse_duration(s + 4, &d) != 0) return -1;
        *ms = s[3] == '-' ? now_ms - d : now_ms + d;
        return 0;
    }
    if (strchr(s, '-') && strchr(s, ':')) return parse_rfc3339(s, ms);
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0 || v > 4102444800.0) return -1;
    *ms = (int64_t)llround(v * 1000);
    return 0;
}
