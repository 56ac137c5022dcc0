/* scrape_store.h: windows scraped from inference servers, in and out of the store
 * (table scrape_windows), and their section of `goodput report`. */
#ifndef GP_INGEST_SCRAPE_STORE_H
#define GP_INGEST_SCRAPE_STORE_H

#include <jansson.h>
#include <stdio.h>

#include "ingest/scrape.h"
#include "store/store.h"

/* Stores one window (inside the caller's transaction); creates the job row if new. */
int gp_scrape_store_window(gp_store *s, const gp_scrape_window *w);
/* Report section: per scraped service, request and token rates, error ratio and latency
 * percentiles over the windows in the store. Prints nothing when there are none. */
void gp_scrape_report_text(gp_store *s, const char *job_id, FILE *out);
void gp_scrape_report_json(gp_store *s, const char *job_id, json_t *root);

#endif
