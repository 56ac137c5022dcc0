/* fuzz_otlp.c: the OTLP trace decoders (src/otlp/decode_pb.c, decode_json.c) and the
 * workflow analysis over whatever spans they accept.
 *
 * The input's first byte picks the encoding (even: protobuf, odd: JSON); the rest is the
 * document, in an exactly sized heap copy so ASan sees any read past its end. Every span
 * kept must have valid ids and times, and the analysis must partition each workflow's
 * end-to-end time exactly. */
#include "fuzz_util.h"

#include <jansson.h>
#include <math.h>

#include "otlp/otlp.h"
#include "otlp/workflows.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t len = size - 1;
    uint8_t *doc = malloc(len ? len : 1);
    if (!doc) return 0;
    memcpy(doc, data + 1, len);
    gp_span_set set = {0};
    char err[300];
    err[0] = 0;
    int rc = (data[0] & 1) ? gp_otlp_decode_json((const char *)doc, len, &set, err, sizeof err)
                           : gp_otlp_decode_pb(doc, len, &set, err, sizeof err);
    fz_check_err(err, sizeof err);
    if (rc == 0) {
        for (size_t i = 0; i < set.n; i++) {
            if (strlen(set.v[i].trace_id) != 32 || strlen(set.v[i].span_id) != 16 ||
                set.v[i].end_ns < set.v[i].start_ns || set.v[i].start_ns <= 0)
                abort();
        }
        gp_wf_report r;
        if (set.n && gp_wf_analyze(set.v, set.n, NULL, 0, -1, &r) == 0) {
            for (size_t w = 0; w < r.n_wf; w++) {
                double sum = 0;
                for (int k = 0; k < GP_STEP__COUNT; k++)
                    sum += r.wf[w].time_s[k];
                if (fabs(sum - r.wf[w].e2e_s) > 1e-6 * (1 + r.wf[w].e2e_s)) abort();
            }
            json_t *o = gp_wf_json(&r, NULL, 0);
            json_decref(o);
            gp_wf_report_free(&r);
        }
    } else if (set.n != 0 && !(data[0] & 1)) {
        abort(); /* a refused protobuf document keeps nothing */
    }
    gp_span_set_free(&set);
    free(doc);
    return 0;
}
