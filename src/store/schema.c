/* schema.c: the store's schema as an ordered list of migrations.
 *
 * Migration N takes the database from user_version N-1 to N inside one transaction, so a
 * store opened by a newer goodput is upgraded in place and never left half-migrated.
 * Never edit a released migration: append a new one. Unknown values are NULL columns. */
#include "store/schema.h"

#include <stdio.h>

/* Columns of the rollup tables (migration 6, store/rollup.h): a gauge as sum and count
 * of the known values, a counter as its last known value. */
#define GP_ROLLUP_GAUGES                                                                           \
    " gpu_util_sum REAL, gpu_util_n INTEGER,"                                                      \
    " sm_active_sum REAL, sm_active_n INTEGER,"                                                    \
    " sm_occupancy_sum REAL, sm_occupancy_n INTEGER,"                                              \
    " tensor_active_sum REAL, tensor_active_n INTEGER,"                                            \
    " dram_active_sum REAL, dram_active_n INTEGER,"                                                \
    " mem_util_sum REAL, mem_util_n INTEGER,"                                                      \
    " fp16_active_sum REAL, fp16_active_n INTEGER,"                                                \
    " fp32_active_sum REAL, fp32_active_n INTEGER,"                                                \
    " fp64_active_sum REAL, fp64_active_n INTEGER,"                                                \
    " mem_used_bytes_sum REAL, mem_used_bytes_n INTEGER,"                                          \
    " power_w_sum REAL, power_w_n INTEGER,"                                                        \
    " sm_clock_mhz_sum REAL, sm_clock_mhz_n INTEGER,"                                              \
    " mem_clock_mhz_sum REAL, mem_clock_mhz_n INTEGER,"                                            \
    " temp_c_sum REAL, temp_c_n INTEGER,"
#define GP_ROLLUP_LASTS                                                                            \
    " mem_total_bytes INTEGER,"                                                                    \
    " energy_mj INTEGER,"                                                                          \
    " pcie_tx_bytes INTEGER,"                                                                      \
    " pcie_rx_bytes INTEGER,"                                                                      \
    " nvlink_tx_bytes INTEGER,"                                                                    \
    " nvlink_rx_bytes INTEGER,"
/* Backfill of rows stored before migration 6: sums and counts; a counter's value at the
 * bucket's last sample with it (max works: counters are monotonic); throttle reasons
 * OR'ed bit by bit (max(x & bit) is bit when any row has it; NVML's reasons use < 32 bits). */
#define GP_ROLLUP_BACKFILL_GAUGES                                                                  \
    " sum(gpu_util), count(gpu_util),"                                                             \
    " sum(sm_active), count(sm_active),"                                                           \
    " sum(sm_occupancy), count(sm_occupancy),"                                                     \
    " sum(tensor_active), count(tensor_active),"                                                   \
    " sum(dram_active), count(dram_active),"                                                       \
    " sum(mem_util), count(mem_util),"                                                             \
    " sum(fp16_active), count(fp16_active),"                                                       \
    " sum(fp32_active), count(fp32_active),"                                                       \
    " sum(fp64_active), count(fp64_active),"                                                       \
    " sum(mem_used_bytes), count(mem_used_bytes),"                                                 \
    " sum(power_w), count(power_w),"                                                               \
    " sum(sm_clock_mhz), count(sm_clock_mhz),"                                                     \
    " sum(mem_clock_mhz), count(mem_clock_mhz),"                                                   \
    " sum(temp_c), count(temp_c),"
#define GP_ROLLUP_BACKFILL_LASTS                                                                   \
    " max(mem_total_bytes),"                                                                       \
    " max(energy_mj),"                                                                             \
    " max(pcie_tx_bytes),"                                                                         \
    " max(pcie_rx_bytes),"                                                                         \
    " max(nvlink_tx_bytes),"                                                                       \
    " max(nvlink_rx_bytes),"

#define GP_ROLLUP_BACKFILL_THROTTLE                                                                \
    "max(throttle_reasons & 1)"                                                                    \
    " | max(throttle_reasons & 2)"                                                                 \
    " | max(throttle_reasons & 4)"                                                                 \
    " | max(throttle_reasons & 8)"                                                                 \
    " | max(throttle_reasons & 16)"                                                                \
    " | max(throttle_reasons & 32)"                                                                \
    " | max(throttle_reasons & 64)"                                                                \
    " | max(throttle_reasons & 128)"                                                               \
    " | max(throttle_reasons & 256)"                                                               \
    " | max(throttle_reasons & 512)"                                                               \
    " | max(throttle_reasons & 1024)"                                                              \
    " | max(throttle_reasons & 2048)"                                                              \
    " | max(throttle_reasons & 4096)"                                                              \
    " | max(throttle_reasons & 8192)"                                                              \
    " | max(throttle_reasons & 16384)"                                                             \
    " | max(throttle_reasons & 32768)"                                                             \
    " | max(throttle_reasons & 65536)"                                                             \
    " | max(throttle_reasons & 131072)"                                                            \
    " | max(throttle_reasons & 262144)"                                                            \
    " | max(throttle_reasons & 524288)"                                                            \
    " | max(throttle_reasons & 1048576)"                                                           \
    " | max(throttle_reasons & 2097152)"                                                           \
    " | max(throttle_reasons & 4194304)"                                                           \
    " | max(throttle_reasons & 8388608)"                                                           \
    " | max(throttle_reasons & 16777216)"                                                          \
    " | max(throttle_reasons & 33554432)"                                                          \
    " | max(throttle_reasons & 67108864)"                                                          \
    " | max(throttle_reasons & 134217728)"                                                         \
    " | max(throttle_reasons & 268435456)"                                                         \
    " | max(throttle_reasons & 536870912)"                                                         \
    " | max(throttle_reasons & 1073741824)"                                                        \
    " | max(throttle_reasons & 2147483648)"

static const char *const migrations[] = {
    /* 1: the initial schema */
    "CREATE TABLE devices ("
    "  uuid TEXT PRIMARY KEY, idx INTEGER, name TEXT, host TEXT, pci_bus_id TEXT,"
    "  memory_total_bytes INTEGER, mig_mode INTEGER, parent_uuid TEXT, model TEXT,"
    "  first_seen_ns INTEGER, last_seen_ns INTEGER);"
    "CREATE TABLE jobs ("
    "  id TEXT PRIMARY KEY, name TEXT, user TEXT, origin TEXT,"
    "  submitted_ns INTEGER, allocated_ns INTEGER, ready_ns INTEGER, ended_ns INTEGER,"
    "  exit_state TEXT, exit_code INTEGER, unit_name TEXT, flops_per_unit REAL,"
    "  bytes_per_unit REAL);"
    "CREATE TABLE allocations ("
    "  job_id TEXT NOT NULL, uuid TEXT NOT NULL, from_ns INTEGER NOT NULL, to_ns INTEGER,"
    "  PRIMARY KEY (job_id, uuid, from_ns));"
    "CREATE TABLE samples ("
    "  uuid TEXT NOT NULL, ts_ns INTEGER NOT NULL, gpu_util REAL, sm_active REAL,"
    "  sm_occupancy REAL, tensor_active REAL, dram_active REAL, mem_util REAL,"
    "  fp16_active REAL, fp32_active REAL, fp64_active REAL, mem_used_bytes INTEGER,"
    "  mem_total_bytes INTEGER, power_w REAL, energy_mj INTEGER, sm_clock_mhz REAL,"
    "  mem_clock_mhz REAL, pcie_tx_bytes INTEGER, pcie_rx_bytes INTEGER,"
    "  nvlink_tx_bytes INTEGER, nvlink_rx_bytes INTEGER, temp_c REAL,"
    "  throttle_reasons INTEGER, xid INTEGER, PRIMARY KEY (uuid, ts_ns)) WITHOUT ROWID;"
    "CREATE TABLE proc_samples ("
    "  uuid TEXT NOT NULL, ts_ns INTEGER NOT NULL, pid INTEGER NOT NULL, sm_share REAL,"
    "  mem_bytes INTEGER, job_id TEXT, PRIMARY KEY (uuid, ts_ns, pid)) WITHOUT ROWID;"
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, ts_ns INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, rank INTEGER, step INTEGER, units REAL, start_ns INTEGER,"
    "  name TEXT, edge INTEGER, arrival_ns INTEGER, first_token_ns INTEGER,"
    "  prompt_tokens INTEGER, output_tokens INTEGER, ok INTEGER, item INTEGER,"
    "  enqueue_ns INTEGER, worker TEXT, bytes INTEGER);"
    "CREATE INDEX events_job_ts ON events(job_id, ts_ns);"
    "CREATE TABLE findings ("
    "  id INTEGER PRIMARY KEY, job_id TEXT, class TEXT NOT NULL, scope TEXT NOT NULL,"
    "  scope_id TEXT, t0_ns INTEGER, t1_ns INTEGER, wasted_gpu_s REAL, wasted_cost REAL,"
    "  confidence REAL, summary TEXT, recommendation TEXT, evidence_json TEXT);"
    "CREATE INDEX findings_job ON findings(job_id);",
    /* 2: the fleet ledger's spool (src/fleet/ledger.c): rows waiting for PostgreSQL in
     * order, one per key (a newer version replaces the waiting one), and a digest of the
     * last version spooled per key so unchanged rows are not sent again. */
    "CREATE TABLE ledger_spool ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, key TEXT NOT NULL,"
    "  payload TEXT NOT NULL, UNIQUE (kind, key));"
    "CREATE TABLE ledger_sent ("
    "  kind TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,"
    "  PRIMARY KEY (kind, key)) WITHOUT ROWID;",
    /* 3: windows scraped from inference servers' /metrics (src/ingest/scrape.h), and the
     * SLOs a job declares in its hello (slo_ttft, slo_tpot, slo_e2e; seconds). */
    "CREATE TABLE scrape_windows ("
    "  job_id TEXT NOT NULL, t0_ns INTEGER NOT NULL, t1_ns INTEGER NOT NULL, flavor TEXT,"
    "  requests_per_s REAL, ok_per_s REAL, errors_per_s REAL, error_ratio REAL,"
    "  prompt_tokens_per_s REAL, generation_tokens_per_s REAL,"
    "  ttft_count REAL, ttft_mean_s REAL, ttft_p50_s REAL, ttft_p90_s REAL, ttft_p99_s REAL,"
    "  itl_count REAL, itl_mean_s REAL, itl_p50_s REAL, itl_p90_s REAL, itl_p99_s REAL,"
    "  e2e_count REAL, e2e_mean_s REAL, e2e_p50_s REAL, e2e_p90_s REAL, e2e_p99_s REAL,"
    "  running REAL, waiting REAL, kv_cache_usage REAL, counter_reset INTEGER,"
    "  PRIMARY KEY (job_id, t1_ns)) WITHOUT ROWID;"
    "ALTER TABLE jobs ADD COLUMN slo_ttft_s REAL;"
    "ALTER TABLE jobs ADD COLUMN slo_tpot_s REAL;"
    "ALTER TABLE jobs ADD COLUMN slo_e2e_s REAL;",
    /* 4: a finding's badput by bucket (wasted_gpu_s is their total) and, apart from it,
     * the headroom a fix recovers from productive time with its counterfactual
     * (model/finding.h). Rows written before: NULL buckets, read as "not split". */
    "ALTER TABLE findings ADD COLUMN badput_not_ready_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_startup_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_data_wait_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_checkpoint_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_wasted_progress_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_recovery_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_idle_allocated_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN badput_other_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN headroom_gpu_s REAL;"
    "ALTER TABLE findings ADD COLUMN headroom_cost REAL;"
    "ALTER TABLE findings ADD COLUMN counterfactual TEXT;",
    /* 5: each event's identity (gp_event_key), unique per job, so the same event delivered
     * twice (client retries, a replay into the same store, a restarted agent) is stored
     * once. Rows stored before this migration have NULL keys, which never conflict. */
    ("ALTER TABLE events ADD COLUMN dedup_key INTEGER;"
     "CREATE UNIQUE INDEX events_dedup ON events(job_id, dedup_key);"),
    /* 6: OpenTelemetry spans (otlp/, store/spans.h): one row per span, keyed by its ids so a
     * span sent twice is stored once; end_ns indexed for windows and retention. */
    ("CREATE TABLE spans ("
     "  trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_id TEXT, name TEXT,"
     "  kind INTEGER, step INTEGER, operation TEXT, model TEXT, in_tokens INTEGER,"
     "  out_tokens INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
     "  status INTEGER, service TEXT, host TEXT,"
     "  PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;"
     "CREATE INDEX spans_end ON spans(end_ns);"),
    /* 7: scrape windows per (engine, model) label pair of a server (vLLM data-parallel
     * engines, one row each; src/ingest/scrape.h gp_scrape_engine). The server's total
     * stays in scrape_windows. engine / model '' where the server has no such label. */
    "CREATE TABLE scrape_engine_windows ("
    "  job_id TEXT NOT NULL, t1_ns INTEGER NOT NULL, engine TEXT NOT NULL, model TEXT NOT NULL,"
    "  t0_ns INTEGER NOT NULL, flavor TEXT,"
    "  requests_per_s REAL, ok_per_s REAL, errors_per_s REAL,"
    "  prompt_tokens_per_s REAL, generation_tokens_per_s REAL,"
    "  ttft_count REAL, ttft_mean_s REAL, ttft_p50_s REAL, ttft_p99_s REAL,"
    "  itl_count REAL, itl_mean_s REAL, itl_p50_s REAL, itl_p99_s REAL,"
    "  e2e_count REAL, e2e_mean_s REAL, e2e_p50_s REAL, e2e_p99_s REAL,"
    "  queue_count REAL, queue_mean_s REAL, queue_p99_s REAL,"
    "  prefill_mean_s REAL, decode_mean_s REAL,"
    "  running REAL, waiting REAL, kv_cache_usage REAL, preemptions_per_s REAL,"
    "  prefix_cache_hit_ratio REAL, spec_accept_ratio REAL, batch_size REAL,"
    "  compute_mean_s REAL, slo_ttft_frac REAL, slo_itl_frac REAL, slo_ok_per_s REAL,"
    "  PRIMARY KEY (job_id, t1_ns, engine, model)) WITHOUT ROWID;",
    /* 8: the store's time span (gp_store_time_span, read by every job summary) from three
     * index lookups instead of one probe per job: a summary's cost no longer grows with
     * the number of jobs in the store (issue 24, cardinality). */
    ("CREATE INDEX events_ts ON events(ts_ns);"
     "CREATE INDEX allocations_from ON allocations(from_ns);"
     "CREATE INDEX allocations_end ON allocations(COALESCE(to_ns, from_ns));"),
    /* 9: rollups of device samples at 1 minute and 1 hour (store/rollup.h), written as
     * samples arrive, so raw samples can be deleted after the retention window while
     * reports over longer spans read the rollups. A row is bucket (t1_ns - step, t1_ns];
     * samples already stored are rolled up here. */
    "CREATE TABLE rollup_1m ("
    "  uuid TEXT NOT NULL, t1_ns INTEGER NOT NULL, n INTEGER NOT NULL,"
    "  first_ts_ns INTEGER NOT NULL, last_ts_ns INTEGER NOT NULL," GP_ROLLUP_GAUGES GP_ROLLUP_LASTS
    "  throttle_reasons INTEGER, xid INTEGER, PRIMARY KEY (uuid, t1_ns)) WITHOUT ROWID;"
    "CREATE TABLE rollup_1h ("
    "  uuid TEXT NOT NULL, t1_ns INTEGER NOT NULL, n INTEGER NOT NULL,"
    "  first_ts_ns INTEGER NOT NULL, last_ts_ns INTEGER NOT NULL," GP_ROLLUP_GAUGES GP_ROLLUP_LASTS
    "  throttle_reasons INTEGER, xid INTEGER, PRIMARY KEY (uuid, t1_ns)) WITHOUT ROWID;"
    "INSERT INTO rollup_1m SELECT uuid, (ts_ns / 60000000000 + (ts_ns % 60000000000 != 0)) * "
    "60000000000,"
    " count(*), min(ts_ns), max(ts_ns), " GP_ROLLUP_BACKFILL_GAUGES GP_ROLLUP_BACKFILL_LASTS
    " (" GP_ROLLUP_BACKFILL_THROTTLE "), max(xid) FROM samples"
    " GROUP BY uuid, (ts_ns / 60000000000 + (ts_ns % 60000000000 != 0));"
    "INSERT INTO rollup_1h SELECT uuid, (ts_ns / 3600000000000 + (ts_ns % 3600000000000 != 0)) * "
    "3600000000000,"
    " count(*), min(ts_ns), max(ts_ns), " GP_ROLLUP_BACKFILL_GAUGES GP_ROLLUP_BACKFILL_LASTS
    " (" GP_ROLLUP_BACKFILL_THROTTLE "), max(xid) FROM samples"
    " GROUP BY uuid, (ts_ns / 3600000000000 + (ts_ns % 3600000000000 != 0));",
    /* 10: spans as a rowid table with the same columns and the same uniqueness (a unique
     * index on trace and span id, so INSERT OR IGNORE still stores a span sent twice
     * once). A span row is ~200 bytes: in a WITHOUT ROWID table every insert moved such
     * rows around the key-ordered b-tree; appending to a rowid table and updating two
     * narrow indexes stores spans about 2x faster (bench/otlp). */
    "CREATE TABLE spans_v8 ("
    "  trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_id TEXT, name TEXT,"
    "  kind INTEGER, step INTEGER, operation TEXT, model TEXT, in_tokens INTEGER,"
    "  out_tokens INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    "  status INTEGER, service TEXT, host TEXT);"
    "INSERT INTO spans_v8 SELECT trace_id, span_id, parent_id, name, kind, step, operation,"
    "  model, in_tokens, out_tokens, start_ns, end_ns, status, service, host FROM spans;"
    "DROP TABLE spans;"
    "ALTER TABLE spans_v8 RENAME TO spans;"
    "CREATE UNIQUE INDEX spans_id ON spans(trace_id, span_id);"
    "CREATE INDEX spans_end ON spans(end_ns);",
    /* 11: ended jobs' summaries (engine/accounting/summary_table.h), written once from the
     * accounting module's result, so /metrics, the API and the dashboard read an ended job
     * in one indexed lookup instead of re-reading its history (issue 24). acct_version and
     * ended_ns say which accounting and which end a row is for: a row that no longer
     * matches is computed again. Unknown values (negative in gp_job_summary) are NULL. Rows
     * for jobs that ended before this migration are filled in lazily, when first read.
     * allocations(uuid, from_ns): a summary reads the other jobs on its GPUs (shared-GPU
     * split, energy holders) by GPU; without it each read scanned every allocation, so
     * summarising all ended jobs cost jobs x jobs. IF NOT EXISTS: tests rebuild older
     * versions by hand from a current store. */
    "CREATE TABLE IF NOT EXISTS job_summaries ("
    "  job_id TEXT PRIMARY KEY, acct_version INTEGER NOT NULL, ended_ns INTEGER NOT NULL,"
    "  n_gpus INTEGER, allocated_gpu_h REAL, queue_wait_s REAL, time_to_ready_s REAL,"
    "  busy_gpu_h REAL, mean_gpu_util REAL, mean_sm_active REAL, mean_tensor_active REAL,"
    "  mean_dram_active REAL, mean_mem_used_frac REAL, proc_mem_max_bytes REAL,"
    "  energy_kwh REAL, span_s REAL, kind INTEGER, allocated_gpu_s REAL,"
    "  productive_gpu_s REAL, not_ready_gpu_s REAL, startup_gpu_s REAL, data_wait_gpu_s REAL,"
    "  checkpoint_gpu_s REAL, wasted_progress_gpu_s REAL, recovery_gpu_s REAL,"
    "  idle_allocated_gpu_s REAL, other_gpu_s REAL, goodput REAL, first_alloc_ns INTEGER,"
    "  ready_ns INTEGER, steps INTEGER, kept_steps INTEGER, redone_steps INTEGER, units REAL,"
    "  median_step_s REAL, requests INTEGER, good_requests INTEGER, failed_requests INTEGER,"
    "  tokens REAL, good_tokens REAL, serving_gpu_s REAL, items INTEGER, busy_gpu_s REAL)"
    "  WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS allocations_uuid ON allocations(uuid, from_ns);",
    /* 12: per scrape window and latency, the share of observations above the histogram's
     * largest finite bucket (gp_latency.beyond_top): a percentile whose rank falls there is
     * Prometheus' floor, not a reading, and the report says so. Added as columns (the
     * added_columns list below, so a store rebuilt by hand as an older version migrates
     * too); rows stored before have NULL, read as "not known whether a floor". */
    "",
    /* 13: ended jobs' results (summary and diagnosis), computed once by the agent and read
     * by every reader (engine/results/job_results.h). sum_fp and diag_fp say which engine
     * and options a result is for; [t0_ns, t1_ns] is the job's time range and raw_t0_ns
     * the first raw sample the result read (NULL: none). The triggers delete a result when
     * any row it depends on arrives or changes after it was computed (the job's events,
     * allocations or job row; any sample, process row, allocation or rollup minute inside
     * its range), whoever writes it, so a result is never served over data it has not
     * seen; retention deletes those whose raw samples it prunes (store.c). events_stage:
     * the stage events (kind 5) alone, so a report's pipeline section finds a trainer's
     * none without visiting its million steps (the one part of a report of ended jobs
     * the stored results leave; an index only stage events pay for). */
    "CREATE INDEX IF NOT EXISTS events_stage ON events(job_id, ts_ns) WHERE kind = 5;"
    "CREATE TABLE IF NOT EXISTS job_results ("
    "  job_id TEXT PRIMARY KEY, sum_fp TEXT NOT NULL, diag_fp TEXT NOT NULL,"
    "  t0_ns INTEGER NOT NULL, t1_ns INTEGER NOT NULL, raw_t0_ns INTEGER,"
    "  summary BLOB NOT NULL, diag BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS job_results_t1 ON job_results(t1_ns);"
    "CREATE TRIGGER IF NOT EXISTS job_results_ev AFTER INSERT ON events"
    "  WHEN NEW.ts_ns <= (SELECT max(t1_ns) FROM job_results)"
    "   OR EXISTS (SELECT 1 FROM job_results WHERE job_id = NEW.job_id) BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.job_id"
    "   OR (t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns); END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_sample AFTER INSERT ON samples"
    "  WHEN NEW.ts_ns <= (SELECT max(t1_ns) FROM job_results) BEGIN"
    "  DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_proc AFTER INSERT ON proc_samples"
    "  WHEN NEW.ts_ns <= (SELECT max(t1_ns) FROM job_results) BEGIN"
    "  DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_alloc AFTER INSERT ON allocations BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.job_id OR (t1_ns >= NEW.from_ns"
    "   AND (NEW.to_ns IS NULL OR t0_ns <= NEW.to_ns)); END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_alloc_up AFTER UPDATE ON allocations BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.job_id OR job_id = OLD.job_id"
    "   OR (t1_ns >= min(NEW.from_ns, OLD.from_ns) AND (NEW.to_ns IS NULL OR OLD.to_ns IS NULL"
    "   OR t0_ns <= max(NEW.to_ns, OLD.to_ns))); END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_job AFTER INSERT ON jobs BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_job_up AFTER UPDATE ON jobs BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.id OR job_id = OLD.id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_r1m AFTER INSERT ON rollup_1m BEGIN"
    "  DELETE FROM job_results WHERE t1_ns > NEW.t1_ns - 60000000000"
    "   AND t0_ns <= NEW.t1_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_r1m_up AFTER UPDATE ON rollup_1m BEGIN"
    "  DELETE FROM job_results WHERE t1_ns > NEW.t1_ns - 60000000000"
    "   AND t0_ns <= NEW.t1_ns; END;",
    /* 14: the same rule as 13's triggers on samples, process rows and events, at less cost
     * per row (every GPU-sample the agent stores ran two of them: bench/agent_cost). They
     * compared each row's time with max(t1_ns) over job_results, an index seek per row;
     * they now read one stored bound, job_results_hwm.t1_ns, kept >= every stored result's
     * t1_ns by the triggers on job_results (raised when a result is stored or its t1_ns
     * raised; never lowered when one is deleted, which only makes a row look further,
     * never less far). -1 while no result is stored. Without the row (deleted by hand) the
     * bound reads as unknown and every row looks: never a result kept over a later row.
     * The events trigger keeps its lookup of the event's own job. */
    "CREATE TABLE IF NOT EXISTS job_results_hwm ("
    "  id INTEGER PRIMARY KEY CHECK (id = 0), t1_ns INTEGER NOT NULL);"
    "INSERT OR REPLACE INTO job_results_hwm(id, t1_ns)"
    "  VALUES (0, ifnull((SELECT max(t1_ns) FROM job_results), -1));"
    "CREATE TRIGGER IF NOT EXISTS job_results_hwm_in AFTER INSERT ON job_results BEGIN"
    "  UPDATE job_results_hwm SET t1_ns = NEW.t1_ns WHERE id = 0 AND t1_ns < NEW.t1_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_results_hwm_up AFTER UPDATE OF t1_ns ON job_results BEGIN"
    "  UPDATE job_results_hwm SET t1_ns = NEW.t1_ns WHERE id = 0 AND t1_ns < NEW.t1_ns; END;"
    "DROP TRIGGER IF EXISTS job_results_ev;"
    "DROP TRIGGER IF EXISTS job_results_sample;"
    "DROP TRIGGER IF EXISTS job_results_proc;"
    "CREATE TRIGGER job_results_ev AFTER INSERT ON events"
    "  WHEN NEW.ts_ns <= ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),"
    "   9223372036854775807)"
    "   OR EXISTS (SELECT 1 FROM job_results WHERE job_id = NEW.job_id) BEGIN"
    "  DELETE FROM job_results WHERE job_id = NEW.job_id"
    "   OR (t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns); END;"
    "CREATE TRIGGER job_results_sample AFTER INSERT ON samples"
    "  WHEN NEW.ts_ns <= ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),"
    "   9223372036854775807) BEGIN"
    "  DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END;"
    "CREATE TRIGGER job_results_proc AFTER INSERT ON proc_samples"
    "  WHEN NEW.ts_ns <= ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),"
    "   9223372036854775807) BEGIN"
    "  DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END;",
    /* 15: jobs whose events retention deleted (gp_store_retain_events), with the result
     * they had when it did (job_results' row, moved here). Its events are gone, so
     * computing the job again would give a number from partial data: every reader serves
     * this result (engine/results/job_results.h), whatever engine build stored it, and
     * anything that would compute the job from its events refuses instead. No trigger
     * touches this table: a late row of the job does not make its lost events come back.
     * before_ns: the job's events before it were deleted (all of them: t1_ns + 1). */
    "CREATE TABLE IF NOT EXISTS job_events_pruned ("
    "  job_id TEXT PRIMARY KEY, before_ns INTEGER NOT NULL, pruned_at_ns INTEGER NOT NULL,"
    "  sum_fp TEXT NOT NULL, diag_fp TEXT NOT NULL, t0_ns INTEGER NOT NULL,"
    "  t1_ns INTEGER NOT NULL, raw_t0_ns INTEGER, summary BLOB NOT NULL, diag BLOB NOT NULL);",
    /* 16: running jobs' accounting prefixes (engine/accounting/acct_prefix.h): the agent
     * saves a running job's incremental accounting state, folded up to t_ns (samples and
     * process rows) and frozen before ev_t_ns (events), so a reader folds only what came
     * after. A prefix is served only while it is exactly what computing the job gives:
     * the triggers delete it when a row it read, or a row before its bounds, arrives
     * later (an event of the job at or before ev_t_ns; any sample or process row at or
     * before t_ns, through job_prefix_hwm as migration 14 does for results; an allocation
     * of the job or on its GPUs; a job row inserted or deleted under its id), and
     * retention deletes those whose raw samples it prunes (raw_t0_ns). fp: the engine and
     * the state's layout; 'claim' while the agent computes one (never served). */
    "CREATE TABLE IF NOT EXISTS job_prefix ("
    "  job_id TEXT PRIMARY KEY, fp TEXT NOT NULL, t_ns INTEGER NOT NULL,"
    "  ev_t_ns INTEGER NOT NULL, raw_t0_ns INTEGER NOT NULL, computed_ns INTEGER NOT NULL,"
    "  state BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS job_prefix_hwm ("
    "  id INTEGER PRIMARY KEY CHECK (id = 0), t_ns INTEGER NOT NULL);"
    "INSERT OR REPLACE INTO job_prefix_hwm(id, t_ns)"
    "  VALUES (0, ifnull((SELECT max(t_ns) FROM job_prefix), -1));"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_hwm_in AFTER INSERT ON job_prefix BEGIN"
    "  UPDATE job_prefix_hwm SET t_ns = NEW.t_ns WHERE id = 0 AND t_ns < NEW.t_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_hwm_up AFTER UPDATE OF t_ns ON job_prefix BEGIN"
    "  UPDATE job_prefix_hwm SET t_ns = NEW.t_ns WHERE id = 0 AND t_ns < NEW.t_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_ev AFTER INSERT ON events"
    "  WHEN NEW.ts_ns <= (SELECT ev_t_ns FROM job_prefix WHERE job_id = NEW.job_id) BEGIN"
    "  DELETE FROM job_prefix WHERE job_id = NEW.job_id; END;"
    /* The two on samples and process rows drop any older copy first, so their text is
     * exactly what own_rows.c knows (as migration 14's). */
    "DROP TRIGGER IF EXISTS job_prefix_sample;"
    "DROP TRIGGER IF EXISTS job_prefix_proc;"
    "CREATE TRIGGER job_prefix_sample AFTER INSERT ON samples"
    "  WHEN NEW.ts_ns <= ifnull((SELECT t_ns FROM job_prefix_hwm WHERE id = 0),"
    "   9223372036854775807) BEGIN"
    "  DELETE FROM job_prefix WHERE t_ns >= NEW.ts_ns; END;"
    "CREATE TRIGGER job_prefix_proc AFTER INSERT ON proc_samples"
    "  WHEN NEW.ts_ns <= ifnull((SELECT t_ns FROM job_prefix_hwm WHERE id = 0),"
    "   9223372036854775807) BEGIN"
    "  DELETE FROM job_prefix WHERE t_ns >= NEW.ts_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_alloc AFTER INSERT ON allocations BEGIN"
    "  DELETE FROM job_prefix WHERE job_id = NEW.job_id"
    "   OR job_id IN (SELECT job_id FROM allocations WHERE uuid = NEW.uuid); END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_alloc_up AFTER UPDATE ON allocations BEGIN"
    "  DELETE FROM job_prefix WHERE job_id = NEW.job_id OR job_id = OLD.job_id"
    "   OR job_id IN (SELECT job_id FROM allocations WHERE uuid = NEW.uuid OR uuid = OLD.uuid);"
    "  END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_job AFTER INSERT ON jobs BEGIN"
    "  DELETE FROM job_prefix WHERE job_id = NEW.id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_prefix_job_del AFTER DELETE ON jobs BEGIN"
    "  DELETE FROM job_prefix WHERE job_id = OLD.id; END;",
    /* 17: running jobs' saved events (engine/diagnosis/ev_prefix.h): the agent saves a
     * running job's events compactly, as segments (t0_ns, t_ns] chained from its start, so
     * the diagnosis's loader reads only the rows after them. Served only while they are
     * exactly the job's rows up to the last t_ns: the triggers delete a job's segments
     * when an event of the job at or before their last t_ns is inserted or deleted, any of
     * its events is changed, or a job row is inserted or deleted under its id. fp: the
     * engine and the records' layout; 'claim' while the agent writes one. */
    "CREATE TABLE IF NOT EXISTS job_ev_prefix ("
    "  job_id TEXT NOT NULL, t_ns INTEGER NOT NULL, t0_ns INTEGER NOT NULL, fp TEXT NOT NULL,"
    "  computed_ns INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (job_id, t_ns));"
    "CREATE TRIGGER IF NOT EXISTS job_ev_prefix_ev AFTER INSERT ON events"
    "  WHEN NEW.ts_ns <= (SELECT max(t_ns) FROM job_ev_prefix WHERE job_id = NEW.job_id) BEGIN"
    "  DELETE FROM job_ev_prefix WHERE job_id = NEW.job_id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_ev_prefix_ev_del AFTER DELETE ON events"
    "  WHEN OLD.ts_ns <= (SELECT max(t_ns) FROM job_ev_prefix WHERE job_id = OLD.job_id) BEGIN"
    "  DELETE FROM job_ev_prefix WHERE job_id = OLD.job_id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_ev_prefix_ev_up AFTER UPDATE ON events BEGIN"
    "  DELETE FROM job_ev_prefix WHERE job_id = OLD.job_id OR job_id = NEW.job_id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_ev_prefix_job AFTER INSERT ON jobs BEGIN"
    "  DELETE FROM job_ev_prefix WHERE job_id = NEW.id; END;"
    "CREATE TRIGGER IF NOT EXISTS job_ev_prefix_job_del AFTER DELETE ON jobs BEGIN"
    "  DELETE FROM job_ev_prefix WHERE job_id = OLD.id; END;",
};

/* Columns a migration adds. ALTER TABLE ADD COLUMN has no IF NOT EXISTS: each is added only
 * where missing, as migration 11's IF NOT EXISTS does for its table. */
static const struct {
    int version;
    const char *table, *column;
} added_columns[] = {
    {12, "scrape_windows", "ttft_beyond_top"},
    {12, "scrape_windows", "itl_beyond_top"},
    {12, "scrape_windows", "e2e_beyond_top"},
    {12, "scrape_engine_windows", "ttft_beyond_top"},
    {12, "scrape_engine_windows", "itl_beyond_top"},
    {12, "scrape_engine_windows", "e2e_beyond_top"},
    {12, "scrape_engine_windows", "queue_beyond_top"},
};

/* Adds migration `version`'s columns (REAL, NULL for existing rows) that the table lacks. */
static int add_columns(sqlite3 *db, int version, char **msg) {
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        if (added_columns[i].version != version) continue;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", -1,
                               &st, NULL) != SQLITE_OK)
            return SQLITE_ERROR;
        sqlite3_bind_text(st, 1, added_columns[i].table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, added_columns[i].column, -1, SQLITE_STATIC);
        int have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
        sqlite3_finalize(st);
        if (have) continue;
        char sql[160];
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s REAL", added_columns[i].table,
                 added_columns[i].column);
        int rc = sqlite3_exec(db, sql, NULL, NULL, msg);
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

int gp_schema_latest(void) {
    return (int)(sizeof migrations / sizeof migrations[0]);
}

int gp_schema_migrate(sqlite3 *db, char *err, size_t errlen) {
    sqlite3_stmt *st;
    int version = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) goto fail;
    if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version > gp_schema_latest()) {
        snprintf(err, errlen, "store schema version %d is newer than this goodput knows (%d)",
                 version, gp_schema_latest());
        return -1;
    }
    for (int v = version; v < gp_schema_latest(); v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version=%d", v + 1);
        char *msg = NULL;
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(db, migrations[v], NULL, NULL, &msg) != SQLITE_OK ||
            add_columns(db, v + 1, &msg) != SQLITE_OK ||
            sqlite3_exec(db, bump, NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "store migration to version %d failed: %s", v + 1,
                     msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
fail:
    snprintf(err, errlen, "store: %s", sqlite3_errmsg(db));
    return -1;
}

/* Appends s to buf at *len (truncation is detected by the caller from *len >= cap). */
static void put(char *buf, size_t cap, size_t *len, const char *s) {
    int n = snprintf(buf + (*len < cap ? *len : cap), *len < cap ? cap - *len : 0, "%s", s);
    *len += (size_t)(n > 0 ? n : 0);
}

/* One table of the latest schema (latest: its columns from the in-memory copy) against
 * the store's: the TEMP statement that fills in what the store lacks, "" when nothing. */
static int shadow_sql(sqlite3 *latest, sqlite3 *db, const char *table, char *sql, size_t cap) {
    sqlite3_stmt *want = NULL, *have = NULL;
    size_t len = 0, n_missing = 0, n_have = 0;
    int rc = -1;
    if (sqlite3_prepare_v2(latest, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &want,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1, 'main') WHERE name = ?2", -1,
                           &have, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(want, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(have, 1, table, -1, SQLITE_STATIC);
    char body[4096];
    size_t blen = 0;
    while (sqlite3_step(want) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(want, 0);
        sqlite3_bind_text(have, 2, col, -1, SQLITE_TRANSIENT);
        int present = sqlite3_step(have) == SQLITE_ROW;
        sqlite3_reset(have);
        put(body, sizeof body, &blen, blen ? ", " : "");
        if (present)
            n_have++;
        else
            n_missing++, put(body, sizeof body, &blen, "NULL AS ");
        put(body, sizeof body, &blen, "\"");
        put(body, sizeof body, &blen, col);
        put(body, sizeof body, &blen, "\"");
    }
    if (blen >= sizeof body) goto out;
    if (!n_missing) {
        sql[0] = '\0';
    } else if (!n_have) { /* the whole table is newer than the store: empty */
        put(sql, cap, &len, "CREATE TEMP TABLE \"");
        put(sql, cap, &len, table);
        put(sql, cap, &len, "\" AS SELECT ");
        put(sql, cap, &len, body);
        put(sql, cap, &len, " LIMIT 0");
    } else {
        put(sql, cap, &len, "CREATE TEMP VIEW \"");
        put(sql, cap, &len, table);
        put(sql, cap, &len, "\" AS SELECT ");
        put(sql, cap, &len, body);
        put(sql, cap, &len, " FROM main.\"");
        put(sql, cap, &len, table);
        put(sql, cap, &len, "\"");
    }
    rc = len < cap ? 0 : -1;
out:
    sqlite3_finalize(want);
    sqlite3_finalize(have);
    return rc;
}

int gp_schema_shadow(sqlite3 *db, char *err, size_t errlen) {
    sqlite3 *latest = NULL;
    sqlite3_stmt *tables = NULL;
    int rc = -1;
    /* The latest schema, built where it costs nothing to write: memory. */
    if (sqlite3_open_v2(":memory:", &latest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "store: the latest schema: out of memory");
        goto out;
    }
    if (gp_schema_migrate(latest, err, errlen) != 0) goto out;
    if (sqlite3_prepare_v2(latest,
                           "SELECT name FROM sqlite_master WHERE type = 'table'"
                           " AND name NOT LIKE 'sqlite_%' ORDER BY name",
                           -1, &tables, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: %s", sqlite3_errmsg(latest));
        goto out;
    }
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        char sql[8192];
        char *msg = NULL;
        if (shadow_sql(latest, db, table, sql, sizeof sql) != 0) {
            snprintf(err, errlen, "store: cannot read table %s as the latest schema", table);
            goto out;
        }
        if (sql[0] && sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "store: reading table %s as the latest schema: %s", table,
                     msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            goto out;
        }
    }
    rc = 0;
out:
    sqlite3_finalize(tables);
    sqlite3_close(latest);
    return rc;
}
