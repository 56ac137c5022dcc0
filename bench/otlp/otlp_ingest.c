/* otlp_ingest.c: OTLP ingest throughput on one core: decode (protobuf and JSON) and store
 * (one INSERT per span in one transaction, as the agent's pump does) of a 512-span
 * ExportTraceServiceRequest, repeated. Not a test. Build and run: bench/otlp/run.sh */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp/otlp.h"
#include "otlp_json_ref.h" /* the jansson decoder it replaced, for the side-by-side */
#include "store/spans.h"

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
/* CPU time of this process: the machine is shared, wall time is printed beside it. */
static double now_s(void) {
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}
static double wall_s(void) {
    return clock_s(CLOCK_MONOTONIC);
}

int main(int argc, char **argv) {
    const char *pb = argc > 1 ? argv[1] : "bench/otlp/doc.pb";
    const char *js = argc > 2 ? argv[2] : "bench/otlp/doc.json";
    static char buf[2][1 << 22];
    size_t len[2];
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(k ? js : pb, "rb");
        if (!f) return 1;
        len[k] = fread(buf[k], 1, sizeof buf[k], f);
        fclose(f);
    }
    char err[300];
    static const char *names[3] = {"protobuf", "json (yajl stream)", "json (jansson, before)"};
    for (int k = 0; k < 3; k++) {
        size_t spans = 0;
        double t0 = now_s(), w0 = wall_s();
        int reps = 200;
        for (int r = 0; r < reps; r++) {
            gp_span_set s = {0};
            int rc = k == 2 ? ref_decode_json(buf[1], len[1], &s, err, sizeof err)
                     : k == 1
                         ? gp_otlp_decode_json(buf[1], len[1], &s, err, sizeof err)
                         : gp_otlp_decode_pb((const uint8_t *)buf[0], len[0], &s, err, sizeof err);
            if (rc) return 2;
            spans += s.n;
            gp_span_set_free(&s);
        }
        double dt = now_s() - t0, dw = wall_s() - w0;
        printf("decode %-22s %8.0f spans/CPU-s %8.0f spans/wall-s (%zu spans)\n", names[k],
               (double)spans / dt, (double)spans / dw, spans);
    }
    gp_store *st;
    char path[] = "/tmp/gp-otlp-bench.db";
    remove(path);
    if (gp_store_open(path, 0, &st, err, sizeof err)) return 3;
    gp_span_set s = {0};
    gp_otlp_decode_pb((const uint8_t *)buf[0], len[0], &s, err, sizeof err);
    double t0 = now_s(), w0 = wall_s();
    size_t stored = 0;
    for (int r = 0; r < 100; r++) {
        for (size_t i = 0; i < s.n; i++) /* new trace ids: every row is new */
            snprintf(s.v[i].trace_id, sizeof s.v[i].trace_id, "%08x%024zx", r + 1, i / 8 + 1);
        gp_store_begin(st);
        stored += (size_t)gp_store_put_spans(st, s.v, s.n);
        gp_store_commit(st);
    }
    double dt = now_s() - t0, dw = wall_s() - w0;
    printf("store (512 per transaction)    %8.0f spans/CPU-s %8.0f spans/wall-s (%zu spans)\n",
           (double)stored / dt, (double)stored / dw, stored);
    gp_span_set_free(&s);
    gp_store_close(st);
    remove(path);
    return 0;
}
