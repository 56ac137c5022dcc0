/* fuzz_attrib.c: what attribution reads from other people's processes
 * (src/attribution/cgroup.c): /proc/PID/cgroup text and the environ block, both written by
 * whoever owns the process. The first byte splits the input between the two. */
#include "fuzz_util.h"

#include "attribution/owner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t cut = size > 1 ? (size_t)data[0] * (size - 1) / 255 : 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    char *cg = malloc(cut ? cut : 1), *env = malloc(n - cut ? n - cut : 1);
    if (cg && env) {
        memcpy(cg, rest, cut);
        memcpy(env, rest + cut, n - cut);
        gp_owner o;
        memset(&o, 0, sizeof o);
        int bad = 0;
        (void)gp_attrib_parse_cgroup(cg, cut, &o, &bad);
        gp_attrib_parse_environ(env, n - cut, &o);
        gp_attrib_derive_job(&o);
        if (!memchr(o.job_id, 0, sizeof o.job_id)) abort();
    }
    free(cg);
    free(env);
    return 0;
}
