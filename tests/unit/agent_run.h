/* agent_run.h: the path users run, for tests: a scenario file -> the real agent (source
 * sim:FILE, as fast as possible, no sockets) -> a fresh store. The simulator shows the
 * agent only what a node shows (processes, job map); owners and allocations are the
 * agent's own attribution. */
#ifndef GP_TEST_AGENT_RUN_H
#define GP_TEST_AGENT_RUN_H

#include <stdio.h>
#include <stdlib.h>

#include "agent/agent.h"
#include "sim/scenario.h"
#include "store/store.h"

/* Runs the scenario into db_path (which must not exist). Returns 0, or -1 with err. */
static inline int gp_test_agent_run(const char *scenario_path, const char *db_path, char *err,
                                    size_t errlen) {
    char spec[1024];
    snprintf(spec, sizeof spec, "sim:%s", scenario_path);
    gp_agent_opts o = {.source_spec = spec, .db_path = db_path, .speed = 0};
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, errlen) != 0) return -1;
    int rc = gp_agent_run(a, NULL, err, errlen);
    gp_agent_close(a);
    return rc;
}

/* Writes sc to dir/name.conf and runs it into dir/name.db; returns the store (read
 * only) or NULL with err. */
static inline gp_store *gp_test_agent_store(const gp_scenario *sc, const char *dir,
                                            const char *name, char *err, size_t errlen) {
    char conf[512], db[512];
    snprintf(conf, sizeof conf, "%s/%s.conf", dir, name);
    snprintf(db, sizeof db, "%s/%s.db", dir, name);
    FILE *f = fopen(conf, "w");
    if (!f || gp_scenario_write(sc, f) != 0) {
        if (f) fclose(f);
        snprintf(err, errlen, "cannot write %s", conf);
        return NULL;
    }
    fclose(f);
    remove(db);
    if (gp_test_agent_run(conf, db, err, errlen) != 0) return NULL;
    gp_store *s;
    if (gp_store_open(db, GP_STORE_READONLY, &s, err, errlen) != 0) return NULL;
    return s;
}

/* The demo scenario cut at `duration` (most of its jobs still run at 38m) written to
 * dir/demo.conf and run into dir/demo.db, whose path goes to db. 0, or -1 with err. */
static inline int gp_test_demo_cut(const char *dir, const char *duration, char *db, size_t dblen,
                                   char *err, size_t errlen) {
    char conf[600], cmd[2400];
    snprintf(conf, sizeof conf, "%s/demo.conf", dir);
    snprintf(db, dblen, "%s/demo.db", dir);
    snprintf(cmd, sizeof cmd,
             "sed 's/^duration = 1h/duration = %s/' %s/examples/scenarios/demo.conf > %s", duration,
             getenv("GOODPUT_SRC") ? getenv("GOODPUT_SRC") : ".", conf);
    if (system(cmd) != 0) {
        snprintf(err, errlen, "cannot write %.200s", conf);
        return -1;
    }
    return gp_test_agent_run(conf, db, err, errlen);
}

#endif
