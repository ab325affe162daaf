# InfluxDB baseline: a real influxd on loopback and influx-app, the endpoint
# that writes the telemetry stream to it. Included by the root Makefile.
#
#   make influxd                              # influxd 1.6.7 on 127.0.0.1:8086, fresh db under TMP_DATA_DIR/influxdb
#   make e2e-influx-app QUERY=rocksdb-p1      # endpoint, "Influx-complete": every record written, then asked
#   make rocksdb-p1 REPLAY_DURATION=120       # sender (mk/e2e.mk), in another terminal
#   make e2e-influx-app-dropped QUERY=rocksdb-p1   # endpoint, "InfluxDB": drops when writes fall behind
#   make pe-influx-app                        # probe-effect endpoint; then make pe-rocksdb OUT_FILE=influx
#   make influxd-stop
#
# Restart influxd (make influxd-stop influxd) between phases: each start is an
# empty database. Logs: evaluation-output/e2e-influx-app-<QUERY>,
# e2e-influx-app-dropped-<QUERY>, pe-influx-app.
#
# Variables: INFLUX_HTTP (127.0.0.1:8086), INFLUX_RPC (127.0.0.1:8088),
# INFLUX_DIR (TMP_DATA_DIR/influxdb), INFLUX_CONNECTIONS (4), INFLUX_BATCH
# (5000 points per /write), INFLUX_APP_FLAGS (extra influx-app flags).

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data
RECORDING_DIR ?= recordings
LOOM_APP_ADDR ?= 127.0.0.1:7878
PE_ADDR ?= 127.0.0.1:7878
QUERY ?= rocksdb-p1

INFLUX_HTTP ?= 127.0.0.1:8086
INFLUX_RPC ?= 127.0.0.1:8088
INFLUX_DIR ?= $(TMP_DATA_DIR)/influxdb
INFLUX_CONNECTIONS ?= 4
INFLUX_BATCH ?= 5000
INFLUX_APP_FLAGS ?=
INFLUX_APP = $(CARGO_RELEASE_DIR)/influx-app --influx-url http://$(INFLUX_HTTP) \
	--influx-connections $(INFLUX_CONNECTIONS) --batch-size $(INFLUX_BATCH)

.PHONY: influxd influxd-stop influx-build e2e-influx-app e2e-influx-app-dropped pe-influx-app

influxd:
	bash baselines/influxdb/influxd.sh start $(INFLUX_DIR) $(INFLUX_HTTP) $(INFLUX_RPC)

# INFLUXD_CPU_LOG=FILE: first append influxd's CPU time (`influxd CPU: user U s,
# sys S s, total T s`, from /proc/<pid>/stat) to FILE: InfluxDB's endpoint cost is
# influx-app's plus influxd's.
INFLUXD_CPU_LOG ?=
influxd-stop:
	$(if $(INFLUXD_CPU_LOG),@bash baselines/influxdb/influxd.sh cpu $(INFLUX_DIR) >> $(INFLUXD_CPU_LOG) || true)
	bash baselines/influxdb/influxd.sh stop $(INFLUX_DIR)

influx-build:
	$(CARGO_BUILD_ALL)

# Influx-complete: the queue is unbounded, every point is written, then the
# questions are asked once over [newest-80 s, newest-20 s] of the stored (arrival) time.
e2e-influx-app: influx-build
	mkdir -p $(EVAL_OUT)
	set -o pipefail; $(E2E_PIN_APP) $(INFLUX_APP) --addr $(LOOM_APP_ADDR) --query $(QUERY) \
		--complete-data --stop-after-connections 1 $(INFLUX_APP_FLAGS) 2>&1 | tee $(EVAL_OUT)/e2e-influx-app-$(QUERY)

# The published InfluxDB endpoint: batches dropped when writes fall behind;
# periodic questions like loom-app (e2e-mach-app).
e2e-influx-app-dropped: influx-build
	mkdir -p $(EVAL_OUT)
	set -o pipefail; $(E2E_PIN_APP) $(INFLUX_APP) --addr $(LOOM_APP_ADDR) --query $(QUERY) \
		--stop-after-connections 1 $(INFLUX_APP_FLAGS) 2>&1 | tee $(EVAL_OUT)/e2e-influx-app-dropped-$(QUERY)

# Appends to pe-influx-app (one `== pe-influx-app run` header per run); influxd's
# own CPU time is appended by `make influxd-stop` when INFLUXD_CPU_LOG names this log.
pe-influx-app: influx-build
	mkdir -p $(EVAL_OUT)
	@echo "== pe-influx-app run $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/pe-influx-app
	$(INFLUX_APP) --addr $(PE_ADDR) --query probe-effect \
		--stop-after-connections 1 2>&1 | tee -a $(EVAL_OUT)/pe-influx-app

# Sustained write rate into influxd: a fresh influxd, influx-app --complete-data
# with INFLUX_CONNECTIONS writers, a recording sent as fast as possible
# (tcp-replay --no-wait); the `Backlog written:` line has points/s.
#   make influx-throughput INFLUX_CONNECTIONS=1 THROUGHPUT_RECORDING=recordings/rocksdb-p2
THROUGHPUT_RECORDING ?= $(RECORDING_DIR)/rocksdb-p2
THROUGHPUT_ADDR ?= 127.0.0.1:7879
.PHONY: influx-throughput
influx-throughput: influx-build
	@test -f $(THROUGHPUT_RECORDING) || { echo "missing $(THROUGHPUT_RECORDING): make gen-rocksdb-p2 (synthetic) or record-rocksdb-p2"; exit 1; }
	mkdir -p $(EVAL_OUT)
	$(MAKE) --no-print-directory influxd-stop influxd
	@echo "== influx-throughput connections=$(INFLUX_CONNECTIONS) batch=$(INFLUX_BATCH) $(THROUGHPUT_RECORDING) $$(date -u +%FT%TZ)" \
		| tee -a $(EVAL_OUT)/influx-throughput-$(INFLUX_CONNECTIONS)
	set -o pipefail; { $(INFLUX_APP) --addr $(THROUGHPUT_ADDR) --complete-data --query probe-effect \
		--stop-after-connections 1 --report-interval-s 5 2>&1 & \
	  sleep 1; $(CARGO_RELEASE_DIR)/tcp-replay --file-path $(THROUGHPUT_RECORDING) --addr $(THROUGHPUT_ADDR) \
		--speed 1 --no-wait 2>&1 | tail -n 1; wait; } | tee -a $(EVAL_OUT)/influx-throughput-$(INFLUX_CONNECTIONS)
	$(MAKE) --no-print-directory influxd-stop
