# satpage: one entry point for set-up, the main job, tests and long runs.
# `make run` and `make test` each do the whole set-up first (idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
TOOLS := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)
GO_TEST_FLAGS ?= -race -count=1
# loadgroup: the tests sharing a module- or session-scoped fixture run on one worker
# (conftest.py), so a cluster or a compare run is made once, not once per worker.
# Three workers on two cores for the whole suite: its integration tests wait on other
# processes (clusters starting, replays one request at a time, chaos runs of fixed
# length), and a third worker fills that time; the unit tier keeps the CPU busy with two.
PYTEST_FLAGS ?= -n 3 --dist loadgroup
PYTEST_UNIT_FLAGS ?= -n 2 --dist loadgroup

.PHONY: setup run test test-unit pytest pytest-unit gotest gotest-unit replay-vectors lint proto proto-check build kernels bench help

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

setup:  ## install everything (Debian packages, .venv, Go tools, helm); safe to run twice
	bash scripts/setup.sh --with-helm

run: setup build  ## the main job: satpage compare on the default scenario, in-process
	$(VENV)/bin/satpage compare

test: setup build kernels proto-check view-check lint  ## the whole suite, both tiers (what CI runs)
	@# Python and Go side by side: the integration tests spend much of their time waiting
	@# (clusters starting, chaos runs of fixed length), which the Go tests fill.
	$(MAKE) --no-print-directory -j2 --output-sync=target pytest gotest replay-vectors

test-unit:  ## the unit tier: in-process tests only (no redis, cluster, helm, chromium, Dask, subprocess), under 90 s
	$(MAKE) --no-print-directory -j2 --output-sync=target pytest-unit gotest-unit

pytest:  ## Python tests (warnings are errors); exit 5 (nothing collected) is a failure
	$(PY) -m pytest $(PYTEST_FLAGS)

pytest-unit:  ## Python unit tier: neither integration nor slow (the root conftest.py fails a unit test that starts a process)
	$(PY) -m pytest $(PYTEST_UNIT_FLAGS) -m "not integration and not slow"

gotest:  ## Go tests with the race detector
	cd services && go test $(GO_TEST_FLAGS) ./...

gotest-unit:  ## Go unit tier: -short skips every test that starts a redis-server (storetest.RedisServer); the race detector is make test's
	cd services && go test -count=1 -short ./...

replay-vectors:  ## the engine's counts replayed in-process by the service, without -race (R = 2 too slow under it)
	cd services && go test -count=1 -run ReplayVectors ./internal/clustertest/

lint:  ## ruff for Python, go vet for Go
	$(VENV)/bin/ruff check orbit-model pager client sim bench
	cd services && go vet ./...

WHEEL_SRC := orbit-model pager client sim
DIST ?= dist
.PHONY: wheels
wheels:  ## $(DIST)/*.whl: orbit-model, satpage-pager, satpage-client, satpage (this platform's: with satnode, gateway, satcheck)
	rm -rf $(DIST) build/wheel-bin $(addsuffix /build,$(WHEEL_SRC)) && mkdir -p $(DIST) build/wheel-bin
	cd services && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o ../build/wheel-bin/ ./cmd/satnode ./cmd/gateway ./cmd/satcheck
	SATPAGE_WHEEL_BIN=$(CURDIR)/build/wheel-bin $(PY) -m pip wheel -q --no-deps --no-build-isolation -w $(DIST) $(addprefix ./,$(WHEEL_SRC))
	rm -rf $(addsuffix /build,$(WHEEL_SRC))
	@ls -l $(DIST)

build:  ## build the Go binaries into bin/
	mkdir -p bin
	cd services && CGO_ENABLED=0 go build -trimpath -o ../bin/ ./cmd/...

kernels:  ## compile the engine's numba kernels into their caches (beside the sources) once, as build does the Go binaries, not once per test worker
	$(VENV)/bin/satpage compare --sessions 20 --set faults.count=2 --json >/dev/null

proto:  ## regenerate Go and Python stubs from services/proto
	cd services && $(CURDIR)/$(PY) -m grpc_tools.protoc -Iproto \
	  --plugin=protoc-gen-go=$(TOOLS)/protoc-gen-go --plugin=protoc-gen-go-grpc=$(TOOLS)/protoc-gen-go-grpc \
	  --go_out=gen --go_opt=paths=source_relative \
	  --go-grpc_out=gen --go-grpc_opt=paths=source_relative \
	  satpage/v1/satpage.proto
	$(PY) -m grpc_tools.protoc -Isatpage_client/rpc=services/proto/satpage/v1 \
	  --python_out=client --pyi_out=client --grpc_python_out=client satpage_client/rpc/satpage.proto

proto-check: proto  ## fail when the checked-in stubs differ from what the .proto generates
	@git diff --exit-code --stat -- services/gen client/satpage_client/rpc \
	  || { echo "generated stubs are stale: run 'make proto' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- services/gen client/satpage_client/rpc)" \
	  || { echo "untracked generated stubs: run 'make proto' and commit" >&2; git status --short -- services/gen client/satpage_client/rpc >&2; exit 1; }

.PHONY: view view-check
view:  ## rebuild satpage view's front end (sim/web -> sim/satpage/view/static/view.js)
	cd sim/web && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent build

view-check: view  ## fail when the committed view.js differs from what sim/web builds
	@git diff --exit-code --stat -- sim/satpage/view/static \
	  || { echo "sim/satpage/view/static/view.js is stale: run 'make view' and commit" >&2; exit 1; }

.PHONY: bench-view
bench-view:  ## satpage view at Starlink scale (4,408 satellites, 10,000 sessions) in headless chromium: redraw times vs the baseline renderer
	$(PY) bench/bench_view.py

.PHONY: bench-strategies
bench-strategies:  ## default compare: all ten strategies vs the five of before, wall and CPU (target < 60 s)
	$(PY) bench/bench_strategies.py

.PHONY: bench-faults
bench-faults:  ## compare faults (R = 1, 2) vs the default run without failures, wall and CPU (target < 60 s)
	$(PY) bench/bench_faults.py

.PHONY: bench-population
bench-population:  ## footprint population, 150 satellites x 1 day at 10 s, vs brute force and NumPy
	$(PY) bench/bench_population.py

# --- deployment: images, Docker Swarm and Kubernetes end-to-end runs ---
.PHONY: images e2e-swarm e2e-k8s
images: setup  ## build the satnode, gateway and redis images (Docker if an engine answers, else scripts/image-pack.py) and print their sizes
	bash scripts/build-images.sh

e2e-swarm: setup  ## 150 satellites on a single-node Docker Swarm (mTLS, replicas 2), replays + a whole satellite killed mid-replay and at a scenario time, checked against the engine (long; installs, starts and stops Docker)
	bash scripts/e2e-swarm.sh

e2e-k8s: setup  ## 150 satellite pods on a real single-node Kubernetes (../shared/k8s; installs its Debian packages), mTLS, replicas 2, replays + a satnode kill + a pod deletion mid-replay + one at a scenario time, checked against the engine (long)
	bash scripts/e2e-k8s.sh

.PHONY: bench-orbit
bench-orbit:  ## Starlink-sized day: visibility + handovers for 1,000 points, ISL routes, vs Skyfield/networkx
	$(PY) bench/bench_orbit.py

.PHONY: bench-pager
bench-pager:  ## pager engine vs the scalar loop (accesses/s, ratio), peak memory, satpage paper --runs 500000
	$(PY) bench/bench_pager.py

.PHONY: bench-compare
# the commit before the one-system work (one pricing per NetworkUse, packages by product,
# strategies as plugins): bench-compare-baseline times both trees
BENCH_BASELINE ?= bb88a37
bench-compare:  ## satpage compare at scale: Starlink TLEs (or 72x22 Walker), 100,000 sessions, 24 h
	$(PY) bench/bench_compare.py

.PHONY: bench-compare-baseline
# The large half: the 3,023-satellite Starlink catalogue, 5,000 sessions over 2 h, five
# strategies on two Dask workers (the whole day of 100,000 sessions is bench-compare's)
BENCH_LARGE_ARGS ?= --sessions 5000 --hours 2 --repeats 2
bench-compare-baseline:  ## default and large compare here vs BENCH_BASELINE, alternating fresh processes: wall and CPU ratios (CPU within 5 %), bench/results/compare-baseline-*.json and their lines in docs/strategies.md
	$(PY) bench/bench_compare.py --baseline $(BENCH_BASELINE) --scenario default
	$(PY) bench/bench_compare.py --baseline $(BENCH_BASELINE) --scenario large $(BENCH_LARGE_ARGS)

.PHONY: bench-scale
bench-scale:  ## satpage compare at scale: 100k/300k sessions over 24 h on starlink-gen1 and the Starlink TLEs, 1M on starlink-gen1, Dask 1 vs 2 workers, starlink-15s (10k sessions, 24 h) beside its elevation-driven baseline (hours; --quick: minutes; --only-15s: just that)
	$(PY) bench/bench_scale.py $(BENCH_SCALE_FLAGS)

.PHONY: chaos
chaos: build  ## 150 satellites, R = 2, two gateways: SIGKILL 3 satellites, pause 3, partition 3, kill each gateway once, cut 2 ISLs under load for 120 s; Porcupine checks the history (exit 1 on a lost page or a non-linearizable read)
	$(VENV)/bin/satpage cluster chaos --replicas 2 --gateways 2 --kill 3 --pause 3 --partition 3 --kill-gateway 2 --cut-links 2 --seed 1 --sessions 12 --seconds 120 --expect-no-loss --json

.PHONY: bench-services fuzz-services
bench-services: build  ## local 150-satellite cluster: page faults/s and p50/p99 by hop count (0,1,2,4,8) vs redis-benchmark
	$(PY) bench/bench_services.py --out bench/results/bench-services-150.json

fuzz-services:  ## fuzz the satnode handlers, the gateway (over mutual TLS with tokens), the constellation parser, the ISL schedule reader and raw wire bytes to a secure satellite and gateway (30 s each; corpus in services/**/testdata/fuzz)
	cd services && go test -run XXX -fuzz FuzzHandlers -fuzztime 30s ./internal/node/
	cd services && go test -run XXX -fuzz FuzzParseSpec -fuzztime 30s ./internal/constellation/
	cd services && go test -run XXX -fuzz FuzzGateway -fuzztime 30s ./internal/gateway/
	cd services && go test -run XXX -fuzz FuzzParseSchedule -fuzztime 30s ./internal/constellation/
	cd services && go test -run XXX -fuzz FuzzWire -fuzztime 30s ./internal/auth/
