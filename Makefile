# restash — the commands of README.md (every one: docs/development.md, "Commands").
SHELL := /bin/bash
export NX_DAEMON := false
export NX_NO_CLOUD := true
export NX_TUI := false
# The pinned Node (.node-version), installed by deploy/local/node.sh outside the clone, comes first
# on PATH for every target; node-gyp builds native modules against its headers.
NODE_VERSION := $(shell tr -d ' \n' < .node-version)
export RESTASH_CACHE ?= $(HOME)/.cache/restash
NODE_HOME := $(RESTASH_CACHE)/node-$(NODE_VERSION)
export PATH := $(NODE_HOME)/bin:$(PATH)
export npm_config_nodedir := $(NODE_HOME)
# Nx's cache and its record of it live outside the clone, keyed by the Nx version, so that a fresh clone
# (CI's) reuses what an earlier run computed from the same inputs (nx.json: lint, typecheck, test, build and the
# integration tests, whose inputs include deploy/ and tools/). FORCE=1 runs the integration tests regardless.
NX_VERSION := $(shell sed -n 's/.*"nx": "[~^]*\([0-9.]*\)".*/\1/p' package.json | head -n 1)
export NX_CACHE_DIRECTORY ?= $(RESTASH_CACHE)/nx-$(NX_VERSION)/cache
export NX_WORKSPACE_DATA_DIRECTORY ?= $(RESTASH_CACHE)/nx-$(NX_VERSION)/workspace-data
NX_FORCE := $(if $(FORCE),--skip-nx-cache,)

.PHONY: runtime install images dev dev-k8s k8s-install k8s-down crds config-doc build lint typecheck check unit integration e2e engines conformance test bench bench-smoke bench-kv bench-vector bench-stream bench-queue bench-workflow

runtime: ## the pinned Node, when missing
	bash deploy/local/node.sh

install: runtime ## redis-server, Java, Maven, Debian's prometheus/promtool (apt), npm packages, Python venv, Kafka jars, the KV engines (Redis 8.2 with RedisJSON and RediSearch, Valkey 9.1: deploy/kv-engines): each when missing
	bash deploy/local/install.sh
	bash deploy/prometheus/install.sh

# TypeScript entries (the stack launcher, the benchmark harness) run from their sources, no build.
RUN_TS := SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register

dev: build ## the whole local stack in the foreground (libs/platform/util-stack); writes .restash/local.env
	$(RUN_TS) libs/platform/util-stack/src/bin/dev.ts

crds: ## deploy/crds/restash.dev_<plural>.yaml and the chart's copy (charts/restash/files/crds/) from the zod schemas of libs/shared/util-resources (unit tests fail while they differ)
	$(RUN_TS) libs/shared/util-resources/src/bin/crds.ts

config-doc: ## the environment tables of docs/configuration.md from each app's zod schema (docs/tools/config-doc.ts; its unit test fails while they differ)
	$(RUN_TS) docs/tools/config-doc.ts

k8s-install: ## the test cluster's binaries (etcd, Kubernetes, kubectl, helm: about 15 minutes cold) and apt packages, when missing
	bash deploy/k8s/install.sh

dev-k8s: build k8s-install ## the test cluster, the operator and the local stack's gateways in the foreground (root); writes .restash/kubeconfig
	$(RUN_TS) libs/platform/util-stack/src/bin/dev-k8s.ts

images: build k8s-install ## the OCI images of every app, the dev engines and the SDK Job (deploy/images/build.sh), cached by content hash in $(RESTASH_CACHE)/images; .restash/images.list names them
	mkdir -p .restash && bash deploy/images/build.sh --no-build --list .restash/images.list

k8s-down: ## stop the test cluster and remove what it made on the host (after a dev-k8s or a test that was killed)
	bash deploy/k8s/cluster.sh down

build: install ## each app with the libraries it imports into dist/apps/<app>/ (tools/build.mjs), cached by Nx
	npx nx run-many -t build --outputStyle=static

lint: install ## eslint of every project (Nx module boundaries), cached by Nx
	npx nx run-many -t lint --outputStyle=static

typecheck: install ## tsc --noEmit of every project, cached by Nx
	npx nx run-many -t typecheck --outputStyle=static

# Jest appends each failed test to $(FAILURES) (tools/jest-failure-log.cjs); a failed run prints them last.
FAILURES := $(CURDIR)/.restash/test-failures.log
REPORT_FAILURES := { echo '== failed tests, in full =='; cat $(FAILURES) 2>/dev/null; echo '== failed tests =='; grep '^✕' $(FAILURES) 2>/dev/null; \
	echo '== their first error lines, by count =='; grep -A1 '^✕' $(FAILURES) 2>/dev/null | grep -v '^✕\|^--$$' | sort | uniq -c | sort -rn | head -n 5; \
	echo '== the first failure again (CI shows the end of the output) =='; awk 'BEGIN { RS = "" } NR == 1' $(FAILURES) 2>/dev/null; exit 1; }

unit: install ## the pure tests of every project (`test` targets: no engine, no helm, no cluster), cached by Nx; failed tests listed at the end
	mkdir -p .restash && rm -f $(FAILURES)
	RESTASH_TEST_FAILURES=$(FAILURES) npx nx run-many -t test --outputStyle=static || $(REPORT_FAILURES)

# What changed: against CHECK_BASE (main by default) plus the working tree's uncommitted and untracked files.
CHECK_BASE ?= main
check: install ## lint, typecheck and pure tests of the projects a change touches (nx affected against $(CHECK_BASE) and the working tree): the inner loop
	mkdir -p .restash && rm -f $(FAILURES)
	RESTASH_TEST_FAILURES=$(FAILURES) npx nx affected -t lint typecheck test --base=$(CHECK_BASE) --outputStyle=static || $(REPORT_FAILURES)

integration: build k8s-install ## the integration tests against real engines (`test-integration`; the chart's template tests run the test cluster's helm); the KV tests twice: on Redis 8.2 with modules (test-integration) and on Valkey 9.1 (test-integration-valkey: KV_ENGINE=valkey); a project whose inputs passed before is not run again (FORCE=1: all)
	mkdir -p .restash && rm -f $(FAILURES)
	RESTASH_TEST_FAILURES=$(FAILURES) npx nx run-many -t test-integration test-integration-valkey --parallel=1 --outputStyle=static $(NX_FORCE) || $(REPORT_FAILURES)

e2e: build k8s-install ## the tests on the test cluster (`test-e2e`: the operator, the CRDs, the Kubernetes client, the chart with its images), never cached, one at a time
	mkdir -p .restash && rm -f $(FAILURES)
	RESTASH_TEST_FAILURES=$(FAILURES) npx nx run-many -t test-e2e --parallel=1 --outputStyle=static --skip-nx-cache || $(REPORT_FAILURES)

conformance: build ## the tests that drive each official SDK (JavaScript and Python) against the local stack, with a count per SDK and version (tools/conformance.mjs; docs/compatibility.md)
	node tools/conformance.mjs

engines: install ## tests of the dev-only engines (deploy/qdrant-local, deploy/embedder-local)
	for dir in deploy/qdrant-local deploy/embedder-local; do .cache/python/venv/bin/python -m unittest discover -s $$dir -p 'test_*.py' || exit 1; done

test: lint typecheck unit integration e2e engines bench-smoke ## what CI runs (.ci/run)

bench: bench-kv bench-vector bench-stream bench-queue bench-workflow

bench-smoke: build ## a few seconds of each benchmark (BENCH_SMOKE=1): fails unless every case gives numbers and no errors
	BENCH_SMOKE=1 KV_ENGINE=redis $(RUN_TS) bench/kv/bench.ts
	BENCH_SMOKE=1 KV_ENGINE=valkey $(RUN_TS) bench/kv/bench.ts
	BENCH_SMOKE=1 $(RUN_TS) bench/vector/bench.ts
	BENCH_SMOKE=1 $(RUN_TS) bench/stream/bench.ts
	BENCH_SMOKE=1 $(RUN_TS) bench/queue/bench.ts
	BENCH_SMOKE=1 $(RUN_TS) bench/workflow/bench.ts

bench-kv: build ## KV gateway vs its data server reached directly, on Redis 8.2 (with RedisJSON and RediSearch) then on Valkey 9.1 (bench/kv, KV_ENGINE)
	KV_ENGINE=redis $(RUN_TS) bench/kv/bench.ts
	KV_ENGINE=valkey $(RUN_TS) bench/kv/bench.ts

bench-vector: build ## vector gateway vs qdrant-local direct, recall@10 (bench/vector)
	$(RUN_TS) bench/vector/bench.ts

bench-stream: build ## Stream gateway (Upstash Kafka REST) vs kafkajs, @platformatic/kafka, confluent straight to the broker (bench/stream)
	$(RUN_TS) bench/stream/bench.ts

bench-queue: build ## queue-gateway + queue-worker (publish to delivery) vs raw BullMQ add-to-process (bench/queue)
	$(RUN_TS) bench/queue/bench.ts

bench-workflow: build ## @upstash/workflow steps vs single publishes on the same queue-gateway + queue-worker (bench/workflow)
	$(RUN_TS) bench/workflow/bench.ts
