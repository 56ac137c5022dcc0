#!/bin/sh
# seed.sh OUT: builds the fuzz corpora OUT/<target>/ at run time from fuzz/seeds/<target>/,
# fuzz/regress/<target>/ (fixed findings), the examples and ../shared/data (read-only; never
# copied into the repo). Large files are cut to a prefix so executions stay fast; a cut
# input is still a fine seed (the parsers must handle truncation anyway). Idempotent: files
# the fuzzer added to OUT/<target>/ stay.
set -eu
out=${1:-build-fuzz/corpus}
data=${GOODPUT_DATA:-../shared/data}
mkdir -p "$out"

# put TARGET FILE [MAXBYTES [PREFIXBYTE]]: one seed, named after its source.
put() {
    t=$1 f=$2 max=${3:-0} pre=${4:-}
    [ -f "$f" ] || return 0
    mkdir -p "$out/$t"
    name=$(printf '%s' "$f" | tr '/ ' '__' | sed 's/^\.*_*//')
    dst="$out/$t/seed-$name"
    {
        [ -n "$pre" ] && printf "\\$(printf '%03o' "$pre")"
        if [ "$max" -gt 0 ]; then head -c "$max" "$f"; else cat "$f"; fi
    } > "$dst"
}

for d in fuzz/seeds/* fuzz/regress/*; do
    [ -d "$d" ] || continue
    t=fuzz_$(basename "$d")
    for f in "$d"/*; do put "$t" "$f"; done
done

for f in examples/scenarios/*.conf; do put fuzz_scenario "$f"; done
for f in docs/protocol.md; do put fuzz_protocol "$f"; done

if [ -d "$data" ]; then
    for f in "$data"/prom/*.txt "$data"/smi/nvidia_gpu_exporter/*.metrics; do
        put fuzz_promtext "$f" 65536
    done
    put fuzz_dcgm "$data/prom/dcgm_exporter_t4.txt" 65536
    for f in "$data"/smi/telegraf/*.xml "$data"/smi/nvidia_gpu_exporter/*.txt; do
        put fuzz_smi "$f" 65536
    done
    # Kineto: the small gzip traces whole, and a decompressed prefix of one.
    for f in $(find "$data/kineto" -name '*.json.gz' -size -200k | sort | head -4); do
        put fuzz_kineto "$f"
    done
    f=$(find "$data/kineto" -name '*.json.gz' | sort | head -1)
    if [ -n "$f" ]; then
        mkdir -p "$out/fuzz_kineto"
        gzip -dc "$f" 2>/dev/null | head -c 32768 > "$out/fuzz_kineto/seed-prefix.json" || true
    fi
    # nsys: every shared export (whole: a cut SQLite file is only a header); the 2 MiB
    # cloverleaf export is cut to its first MiB, which still carries its schema pages.
    put fuzz_nsys "$data/nsys/con_kernel.sqlite"
    put fuzz_nsys "$data/nsys/profile16.sqlite"
    put fuzz_nsys "$data/nsys/cloverleaf.sqlite" 1048576
    # dcgm-exporter mapping: every Prometheus scrape is a fine seed (other exporters'
    # families are ignored, which is a path too).
    for f in "$data"/prom/*.txt "$data"/smi/nvidia_gpu_exporter/*.metrics; do
        put fuzz_dcgm "$f" 65536
    done
    # protocol lines: the request traces' CSV rows are not lines, but cover the tokenizer.
    put fuzz_protocol "$data/requests/AzureLLMInferenceTrace_conv.csv" 4096
    for f in "$data"/cluster/v2020/job_1_norm.csv "$data"/cluster/v2020/pai_machine_spec.csv \
             "$data"/cluster/v2023/openb_node_list_gpu_node.csv; do
        put fuzz_csv "$f" 16384
    done
    put fuzz_csv "$data/cluster/v2026_genai/pod_gpu_duty_cycle_anon.tar.gz" 65536
    # fuzz_cluster: the first byte picks the reader (see fuzz_cluster.c).
    put fuzz_cluster "$data/cluster/v2023/openb_pod_list_default.csv" 16384 0
    put fuzz_cluster "$data/cluster/v2026_genai/pod_gpu_duty_cycle_anon.tar.gz" 65536 1
    put fuzz_csv "$data/requests/AzureLLMInferenceTrace_conv.csv" 8192
fi
# fuzz_cluster's largest inputs (1 MiB, the target's cap), made here rather than stored: a
# Philly job log of ~5,000 jobs with several attempts each (distinct users and VCs), one of
# 64-attempt jobs, and one nested 1 MiB deep. The reader streams them (yajl events, one job
# at a time), so each stays far below the 256 MB limit; a reader that built a document
# would not (issue 24).
mkdir -p "$out/fuzz_cluster"
awk 'BEGIN { printf "\002["; for (i = 0; i < 2700; i++) { if (i) printf ",";
  printf "{\"status\":\"%s\",\"vc\":\"vc%d\",\"jobid\":\"application_%d\",\"attempts\":[", (i % 3 ? "Pass" : "Failed"), i % 97, i;
  for (a = 0; a < 1 + i % 3; a++) { if (a) printf ",";
    printf "{\"start_time\":\"2017-10-%02d %02d:00:00\",\"end_time\":\"2017-10-%02d %02d:30:00\",\"detail\":[{\"ip\":\"m%d\",\"gpus\":[\"gpu0\",\"gpu1\"]}]}", 1 + i % 28, a, 1 + i % 28, a + 1, i % 50 }
  printf "],\"submitted_time\":\"2017-10-%02d 00:00:00\",\"user\":\"user%d\"}", 1 + i % 28, i }
  printf "]" }' | head -c 1048576 > "$out/fuzz_cluster/gen-philly-jobs"
awk 'BEGIN { printf "\002["; for (i = 0; i < 100; i++) { if (i) printf ",";
  printf "{\"status\":\"Pass\",\"vc\":\"v\",\"attempts\":[";
  for (a = 0; a < 64; a++) { if (a) printf ",";
    printf "{\"start_time\":\"2017-10-01 00:00:00\",\"end_time\":\"2017-10-02 00:00:00\",\"detail\":[{\"ip\":\"m\",\"gpus\":[\"g\",\"g\",\"g\",\"g\",\"g\",\"g\",\"g\",\"g\"]}]}" }
  printf "],\"user\":\"u%d\"}", i } printf "]" }' | head -c 1048576 > "$out/fuzz_cluster/gen-philly-attempts"
awk 'BEGIN { printf "\002"; for (i = 0; i < 1048575; i++) printf "[" }' > "$out/fuzz_cluster/gen-philly-deep"

# Tests' own data (slurm JSON and friends) make fine CSV/JSON seeds too.
for f in tests/unit/data/slurm/*; do put fuzz_cluster "$f" 16384 2; done
# fuzz_ray: the first byte picks the reader (even: Dataset.stats() text, odd: metrics).
put fuzz_ray tests/data/ray/resnet_batch_inference.stats.txt 0 0
put fuzz_ray tests/data/ray/ray_metrics_data_train.prom 0 1
# Scenario files double as attribution blocks (key=value lines) and protocol-like text.
for f in examples/scenarios/*.conf; do put fuzz_attrib "$f" 4096; done
for f in examples/pipeline/*; do put fuzz_protocol "$f" 4096; done

for t in "$out"/*; do
    printf '%s: %s inputs\n' "$(basename "$t")" "$(ls "$t" | wc -l)"
done
