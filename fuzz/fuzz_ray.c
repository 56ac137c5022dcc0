/* fuzz_ray.c: the Ray readers (src/ingest/ray.c, ray_metrics.c): the first input byte picks
 * Dataset.stats() text (even) or a scrape of Ray's metrics (odd); the rest is parsed,
 * analysed and reported as text and JSON. Errors must be one bounded message. */
#include "fuzz_util.h"

#include <jansson.h>

#include "ingest/ray.h"
#include "ingest/ray_metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 1 << 18) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char err[300];
    err[0] = 0;
    FILE *null = fopen("/dev/null", "w");
    if (!null) return 0;
    if (data[0] % 2 == 0) {
        gp_ray_stats *s = malloc(sizeof *s);
        if (s && gp_ray_stats_parse(text, len, s, err, sizeof err) == 0) {
            gp_ray_analyze(s);
            gp_ray_report_text(s, null, data[0] & 4 ? 0 : 100); /* --wide or 100 columns */
            json_t *j = gp_ray_report_json(s);
            char *d = json_dumps(j, 0);
            free(d);
            json_decref(j);
        } else if (s) {
            fz_check_err(err, sizeof err);
        }
        free(s);
    } else {
        gp_ray_metrics *m = malloc(sizeof *m);
        if (m && gp_ray_metrics_parse(text, len, m, err, sizeof err) == 0) {
            gp_ray_metrics_analyze(m);
            gp_ray_metrics_report_text(m, data[0] & 2, null, data[0] & 4 ? 0 : 100);
            json_t *j = gp_ray_metrics_report_json(m);
            char *d = json_dumps(j, 0);
            free(d);
            json_decref(j);
        } else if (m) {
            fz_check_err(err, sizeof err);
        }
        free(m);
    }
    fclose(null);
    return 0;
}
