# otlp.mk: `make bench-otlp` (part of `make bench`): OTLP ingest on one core, the decoders
# and the store in-process (bench/otlp/run.sh), then end to end through an agent pinned to
# one core over POST /v1/traces in both encodings (bench/otlp/http.sh). docs/benchmarks.md.
.PHONY: bench-otlp
bench: bench-otlp
bench-otlp: $(BIN)
	bash bench/otlp/run.sh
	bash bench/otlp/http.sh 400 pb
	bash bench/otlp/http.sh 400 json
