/* fuzz_scenario.c: scenario files (src/sim/scenario.c, gp_scenario_parse_string). A
 * parsed scenario is written back and must parse again. */
#include "fuzz_util.h"

#include "sim/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *text = fz_cstr(data, size);
    if (!text) return 0;
    gp_scenario sc;
    char err[512];
    err[0] = 0;
    if (gp_scenario_parse_string(text, "fuzz.conf", &sc, err, sizeof err) == 0) {
        char *out = NULL;
        size_t outlen = 0;
        FILE *f = open_memstream(&out, &outlen);
        if (f) {
            int wrc = gp_scenario_write(&sc, f);
            fclose(f);
            gp_scenario sc2;
            if (wrc == 0 &&
                gp_scenario_parse_string(out, "rewrite.conf", &sc2, err, sizeof err) == 0)
                gp_scenario_free(&sc2);
            free(out);
        }
        gp_scenario_free(&sc);
    }
    fz_check_err(err, sizeof err);
    free(text);
    return 0;
}
