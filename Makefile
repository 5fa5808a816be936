# dbpilot — build, run and test. `make help` lists the targets.
#
# Every tool is built or installed by this Makefile at a pinned version into
# bin/<tool>/<version>/, so a tool is rebuilt only when its pin changes.

# Image of the operator, for deploy and bundle.
VERSION ?= 0.1.0
IMAGE_TAG_BASE ?= quay.io/dbpilot/dbpilot
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
CONTAINER_TOOL ?= docker

# Pinned tool versions (see ../shared/TOOLCHAIN.md for why these).
KUBE_VERSION ?= v1.36.3
ETCD_VERSION ?= v3.6.16
KWOK_VERSION ?= v0.8.0
CONTROLLER_GEN_VERSION ?= v0.21.0
KUSTOMIZE_VERSION ?= v5.8.1
OPERATOR_SDK_VERSION ?= v1.33.0
OPM_VERSION ?= v1.69.0
COREDNS_VERSION ?= v1.13.1
OLM_VERSION ?= v0.38.0
GRPC_HEALTH_PROBE_VERSION ?= v0.4.40
VERSITYGW_VERSION ?= v1.8.0

# The bundle: channels follow the stable/fast/candidate naming.
CHANNELS ?= candidate,fast,stable
DEFAULT_CHANNEL ?= stable
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# createdAt of the CSV: the release date, so `make bundle` is reproducible.
CREATED_AT ?= 2026-11-22T00:00:00Z
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
# Releases pin every image (the operator's and the RELATED_IMAGE_* operand
# images) by digest: `make bundle USE_IMAGE_DIGESTS=true` resolves them from
# their registries (it needs to reach them).
USE_IMAGE_DIGESTS ?= false
ifeq ($(USE_IMAGE_DIGESTS), true)
	BUNDLE_GEN_FLAGS += --use-image-digests
endif

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
export GOTOOLCHAIN := local
# One build configuration for all that make compiles: static (no cgo) and
# with trimmed paths, as the images' programs must be built
# (internal/localimages.GoBinary). The tests, vet and the images' manager
# and instance programs then share each compiled package: a first make test
# compiles the operator's dependencies once, not once per configuration.
# No DWARF either: the compiler runs about 15 % faster, and stack traces do
# not need it. Set GOFLAGS (even to nothing) to compile otherwise; the flags
# of Go's env file are kept.
export CGO_ENABLED := 0
export GOFLAGS ?= $(strip $(shell $(GO) env GOFLAGS) -trimpath -gcflags=all=-dwarf=false)

LOCALBIN := $(CURDIR)/bin
CONTROLPLANE := $(LOCALBIN)/controlplane
KUBE_DIR := $(LOCALBIN)/kube/$(KUBE_VERSION)
ETCD := $(LOCALBIN)/etcd/$(ETCD_VERSION)/etcd
KWOK := $(LOCALBIN)/kwok/$(KWOK_VERSION)/kwok
CONTROLLER_GEN := $(LOCALBIN)/controller-gen/$(CONTROLLER_GEN_VERSION)/controller-gen
KUSTOMIZE := $(LOCALBIN)/kustomize/$(KUSTOMIZE_VERSION)/kustomize
OPERATOR_SDK := $(LOCALBIN)/operator-sdk/$(OPERATOR_SDK_VERSION)/operator-sdk
SCORECARD_TEST := $(LOCALBIN)/operator-sdk/$(OPERATOR_SDK_VERSION)/scorecard-test
OPM := $(LOCALBIN)/opm/$(OPM_VERSION)/opm
COREDNS := $(LOCALBIN)/coredns/$(COREDNS_VERSION)/coredns
OLM_DIR := $(LOCALBIN)/olm/$(OLM_VERSION)
GRPC_HEALTH_PROBE := $(LOCALBIN)/grpc-health-probe/$(GRPC_HEALTH_PROBE_VERSION)/grpc_health_probe
VERSITYGW := $(LOCALBIN)/versitygw/$(VERSITYGW_VERSION)/versitygw
KUBECTL := $(LOCALBIN)/kubectl
# kwok's Stage manifests (node and pod lifecycles), copied from its module.
KWOK_STAGES := $(dir $(KWOK))stages
# The tools make test builds beside the real node's suites: kwok (the kwok
# suites and the harness's own tests), OLM's (the real node's OLM test, the
# catalog) and the S3 server (the backup tests).
LATE_TOOLS := $(KWOK_STAGES)/.copied $(OLM_DIR)/.built $(OPM) $(GRPC_HEALTH_PROBE) $(VERSITYGW)
# The tools of the checks make test runs beside the real node's suites or
# after them: the generated files' and the OLM checks'.
CHECK_TOOLS := $(CONTROLLER_GEN) $(KUSTOMIZE) $(OPERATOR_SDK)
BUILD_TOOL := hack/build-tool.sh
# The tools that run briefly (the generators and checkers) or serve the
# tests lightly (CoreDNS, the S3 server, the catalog's health probe) are
# compiled without optimisations: a first build takes about a fifth less
# time (controller-gen: 56 s against 70 s), and their speed does not
# matter. The control plane, kwok and OLM's operators stay optimised.
UNOPTIMISED := -gcflags="all=-N -l -dwarf=false"

# Progress of tool builds: "[n/m] building X", where m counts the tools that
# are missing when make starts.
TOOL_FILES = $(KUBE_DIR)/.built $(ETCD) $(KWOK) $(CONTROLLER_GEN) $(KUSTOMIZE) $(OPERATOR_SDK) $(OPM) $(COREDNS) $(OLM_DIR)/.built $(GRPC_HEALTH_PROBE) $(VERSITYGW)
export BUILD_TOTAL := $(words $(filter-out $(wildcard $(TOOL_FILES)),$(TOOL_FILES)))
export BUILD_COUNTER := $(LOCALBIN)/.build-count-$(shell echo $$PPID)

KUBE_LDFLAGS := -s -w $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=$(word 2,$(subst ., ,$(KUBE_VERSION:v%=x.%))) \
	-X $(pkg).gitMinor=$(word 3,$(subst ., ,$(KUBE_VERSION:v%=x.%))) -X $(pkg).gitTreeState=clean)

OSDK_VERSION_PKG := github.com/operator-framework/operator-sdk/internal/version
OPERATOR_SDK_LDFLAGS := -s -w -X $(OSDK_VERSION_PKG).Version=$(OPERATOR_SDK_VERSION) \
	-X $(OSDK_VERSION_PKG).GitVersion=$(OPERATOR_SDK_VERSION) -X $(OSDK_VERSION_PKG).GitCommit=$(OPERATOR_SDK_VERSION) \
	-X $(OSDK_VERSION_PKG).KubernetesVersion=v1.27.8 -X $(OSDK_VERSION_PKG).ImageVersion=$(OPERATOR_SDK_VERSION)

# Debian packages for the suites that run real databases and Prometheus.
DEBIAN_PACKAGES ?= prometheus postgresql-15 mariadb-server prometheus-postgres-exporter prometheus-mysqld-exporter \
	mariadb-backup sysbench containerd runc containernetworking-plugins iptables nftables

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
# The manager's RBAC comes in two roles: manager-role, from the controllers'
# markers, holds only namespaced kinds and is granted where the operator
# watches (OLM: in each target namespace); manager-cluster-role holds the
# cluster-scoped kinds (internal/storageclass, internal/priorityclass) and is
# granted cluster-wide.
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests from the Go markers.
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="./controllers/..." output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=manager-cluster-role paths="{./internal/storageclass/...,./internal/priorityclass/...,./internal/nodedrain/...}" output:rbac:stdout > config/rbac/cluster_role.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

# COPY_TREE_TO copies the tree's files (tracked, and untracked but not
# ignored) into the directory that follows it: the checks that generate
# files generate them there, so the suites make test runs beside them never
# see the tree rewritten.
COPY_TREE_TO = git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [[ ! -e "$$f" ]] || printf '%s\0' "$$f"; done | xargs -0 cp --parents -t

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when the generated files differ from what the Go markers generate (generated in a copy of the tree, which the suites make test runs beside it never see rewritten).
	@copy=$$(mktemp -d) && trap 'rm -rf "$$copy"' EXIT && \
	$(COPY_TREE_TO) "$$copy" && \
	$(MAKE) --no-print-directory -C "$$copy" manifests generate CONTROLLER_GEN=$(CONTROLLER_GEN) > /dev/null && \
	diff -r api "$$copy/api" && diff -r config "$$copy/config" || { echo "generated files are out of date: run 'make manifests generate' and commit"; exit 1; }

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

##@ Test

.PHONY: test
test: deps controlplane-realnode ## Run every test suite (installs and builds what it needs): the real node's suites, then the OLM checks, beside everything that needs no real node (the generated files' check among it); then the real node's CPU-judging tests alone.
	claims=$$(mktemp -d) && trap 'rm -rf "$$claims"' EXIT && \
	$(MAKE) --no-print-directory -j2 --output-sync=line test-on-realnode test-beside-realnode SHARED_CLAIMS="$$claims"
	$(MAKE) --no-print-directory test-realnode-cpu

# What runs beside the real node's suites yields the CPU to them: they are
# the longer stream (their test binary compiles while the late tools build,
# and their waits are timed).
BESIDE := nice -n 10
# The late tools, built once by whichever of make test's two streams asks
# first (the other waits for the lock, then finds them built).
# (A recipe makes bin/ first: the nice of the stream beside the real node's
# must reach the build, not only mkdir.)
LATE_TOOLS_BUILD = flock $(LOCALBIN)/.late-tools.lock $(MAKE) --no-print-directory -j1 $(CHECK_TOOLS) $(LATE_TOOLS)

.PHONY: test-on-realnode
test-on-realnode: ## The real node's suites but the CPU-judging tests, then the OLM checks (whose scorecard runs on a real node too), one at a time; then what is left of the shared work.
	$(MAKE) --no-print-directory realnode-suites
	$(MAKE) --no-print-directory test-olm
	$(MAKE) --no-print-directory shared-work

.PHONY: test-beside-realnode
test-beside-realnode: ## What needs no real node, one at a time and at a lower CPU priority than the real node's suites: the generated files' check, the late tools (kwok's, OLM's, the S3 server) and the OLM checks', the kwok suites; then what is left of the shared work.
	@mkdir -p $(LOCALBIN)
	$(BESIDE) $(LATE_TOOLS_BUILD)
	$(BESIDE) $(MAKE) --no-print-directory -j1 verify-generated test-kwok
	$(BESIDE) $(MAKE) --no-print-directory shared-work

# The shared work: what either of make test's streams may run once its own
# is done, each item once, taken by the first stream free (an item is
# claimed by making its directory in SHARED_CLAIMS; without SHARED_CLAIMS
# every item runs). With Go's caches warm
# the stream beside the real node's ends first and takes it all; with them
# cold (the tools compiling beside the real node's suites) the real node's
# stream ends about 4 minutes first, and takes its part.
SHARED_WORK := vet test-unit fuzz-decide fuzz-builders
SHARED_CLAIMS ?=
.PHONY: shared-work
shared-work: ## Run the shared work's items (vet, the unit tests, the fuzzers with one worker each) that no other stream of make test has taken.
	@for item in $(SHARED_WORK); do \
		if [[ -z "$(SHARED_CLAIMS)" ]] || mkdir "$(SHARED_CLAIMS)/$$item" 2>/dev/null; then $(MAKE) --no-print-directory $$item FUZZFLAGS=-parallel=1; fi; \
	done

# The fuzzers' budgets are counts of executions, not durations: a duration
# races Go's fuzzing coordinator at its deadline, which then fails the
# target with a bare "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in Go 1.27). Each count is about 15 s of one
# worker on this machine, and a loaded machine only takes longer.
FUZZ_DECIDE_EXECS ?= 50000
FUZZ_BUILDERS_EXECS ?= 10000
FUZZFLAGS ?=
.PHONY: fuzz
fuzz: fuzz-decide fuzz-builders ## Fuzz the auto-pilot's decision engine (bounds, no NaN, determinism) for FUZZ_DECIDE_EXECS inputs and the builders (random valid Databases: valid, restricted children) for FUZZ_BUILDERS_EXECS.

.PHONY: fuzz-decide fuzz-builders
fuzz-decide:
	$(GO) test -run '^$$' -fuzz FuzzDecide -fuzztime $(FUZZ_DECIDE_EXECS)x $(FUZZFLAGS) ./autopilot/

fuzz-builders:
	$(GO) test -run '^$$' -fuzz FuzzBuilders -fuzztime $(FUZZ_BUILDERS_EXECS)x $(FUZZFLAGS) ./controllers/desired/

.PHONY: test-unit
test-unit: ## Unit tests: pure builders, setters, the decision engine, the instance program's statements.
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /tests/ -e /internal/localcluster -e /internal/objectstore)

# REALNODE=skip lets the suites that need a real node skip on a machine that
# cannot run one; by default they fail there.
REALNODE ?=
# The real-node tests that judge the pods' CPU (the auto-pilot's, against
# real load): they run with nothing beside them.
REALNODE_CPU_TESTS ?= ^TestAutopilot
.PHONY: test-integration
test-integration: controlplane ## Integration and end-to-end tests on the local control plane (kwok, and the real node; REALNODE=skip skips its suites where the machine cannot run one): the kwok suites beside the real node's, then the real node's CPU-judging tests alone.
	$(MAKE) --no-print-directory -j2 --output-sync=line test-kwok test-realnode
	$(MAKE) --no-print-directory test-realnode-cpu

.PHONY: test-kwok
test-kwok: controlplane ## The integration suites on kwok's fake nodes (and the object store's), one package at a time.
	$(GO) test -count=1 -p 1 -timeout 40m $$($(GO) list ./internal/objectstore/... ./tests/... | grep -v /tests/realnode)

.PHONY: test-realnode realnode-suites
test-realnode: controlplane realnode-suites ## The real node's suites but the CPU-judging tests, one package at a time (one real node per machine).

# The end-to-end suite but its OLM test first: that and the harness's own
# tests (which start kwok's fake nodes too) need the late tools, which make
# test builds beside it (its backup test waits for the S3 server's build).
# Its tests that share the node run two at a time, within the node's CPU
# (besideOtherTests); -parallel only needs to let them all queue there.
REALNODE_LATE_TESTS ?= ^TestOLMInstallsTheOperator$$
realnode-suites: controlplane-realnode
	DBPILOT_REALNODE=$(REALNODE) $(GO) test -count=1 -parallel 8 -timeout 50m -skip '$(REALNODE_CPU_TESTS)|$(REALNODE_LATE_TESTS)' ./tests/realnode/
	@mkdir -p $(LOCALBIN)
	$(LATE_TOOLS_BUILD)
	DBPILOT_REALNODE=$(REALNODE) $(GO) test -count=1 -timeout 20m -run '$(REALNODE_LATE_TESTS)' ./tests/realnode/
	DBPILOT_REALNODE=$(REALNODE) $(GO) test -count=1 -timeout 10m ./internal/localcluster/...

.PHONY: test-realnode-cpu
test-realnode-cpu: controlplane-realnode ## The real node's CPU-judging tests (the auto-pilot's under real load).
	DBPILOT_REALNODE=$(REALNODE) $(GO) test -count=1 -timeout 30m -run '$(REALNODE_CPU_TESTS)' ./tests/realnode/

CHAOS_OPS ?= 1000
CHAOS_ROUNDS ?= 3
.PHONY: test-chaos
test-chaos: controlplane ## The long chaos run: on the real node CHAOS_ROUNDS rounds of switchovers, scaling, backups and tier changes under a writer while managers are killed (rows lost), then CHAOS_OPS lifecycle operations on kwok while two managers are killed at random; ends with the chaos line (make test runs 1 round and 200 operations).
	GO=$(GO) hack/chaos.sh $(CHAOS_OPS) $(CHAOS_ROUNDS)

.PHONY: bench-reconcile
bench-reconcile: controlplane manifests ## Print the time from create to Available for 1 and for 50 Databases.
	$(GO) test -count=1 -run '^$$' -bench BenchmarkCreateToAvailable -benchtime 1x -timeout 30m ./tests/e2e/

N ?= 1000
.PHONY: bench-scale
bench-scale: controlplane manifests ## N Databases under the manager binary next to a raw client creating the same children: convergence, memory, CPU, API requests, steady-state writes; ends with the scale line.
	@mkdir -p out
	DBPILOT_SCALE_N=$(N) $(GO) test -count=1 -run '^$$' -bench BenchmarkScale -benchtime 1x -timeout 90m ./tests/scale/ > out/bench-scale.log 2>&1 || { tail -n 60 out/bench-scale.log; exit 1; }
	@grep -E '^(raw|operator|scale) ' out/bench-scale.log

.PHONY: demo-autopilot
demo-autopilot: controlplane manifests deps ## Watch the auto-pilot scale a Database hands-off: local control plane, real Prometheus, a replayed load trace.
	$(GO) run ./hack/demo-autopilot $(DEMO_FLAGS)

.PHONY: bench-autopilot
bench-autopilot: ## Replay the trace suite through the auto-pilot, the HPA baseline and the flap-free oracles (charts in out/autopilot/), in the default and every shipped world (the noisy one also over 16 noise seeds), and time a 10,000-Database cycle.
	mkdir -p out/autopilot
	$(GO) run ./autopilot/cmd/sim --charts out/autopilot
	@for world in autopilot/sim/testdata/worlds/*.json; do echo "world $$(basename $$world .json):"; $(GO) run ./autopilot/cmd/sim --world $$world | tail -3; done
	@echo "world noisy over seeds 7-22:"; $(GO) run ./autopilot/cmd/sim --world autopilot/sim/testdata/worlds/noisy.json --seeds 16 | tail -3
	$(GO) test -count=1 -run '^$$' -bench BenchmarkDecideCycle -benchtime 3x ./autopilot/

.PHONY: bench-failover
bench-failover: controlplane ## On the real node: kill the primary's pod under a writer (failover delay 0, asynchronous and synchronous replication; and the default delay of 30 s) and switch over; print write-unavailable seconds and rows lost.
	DBPILOT_BENCH_DEFAULT_DELAY=1 $(GO) test -count=1 -p 1 -timeout 30m -run 'TestFailoverKeepsTheDatabaseWritable|TestSynchronousFailoverLosesNothing|TestPrimaryPodKilledWithTheDefaultDelay' -v ./tests/realnode/ | grep -E '^ +(failover|defaultdelay)_test.go:[0-9]+: (failover|switchover) '

.PHONY: bench-autopilot-real
bench-autopilot-real: controlplane ## On the real node, under pgbench load: seconds from load start to the auto-pilot's decision and to the new capacity ready (reads: a replica; writes: a tier), next to what the HPA would do on the same CPU series.
	$(GO) test -count=1 -p 1 -timeout 30m -run 'TestAutopilotOnRealLoad|TestAutopilotOnRealMariaDBLoad' -v ./tests/realnode/ | grep -E '^ +autopilot_test.go:[0-9]+: (autopilot|hpa) '

.PHONY: bench-backup
bench-backup: controlplane ## Print backup and restore throughput (MB/s) into and out of a real S3 server, and the time from a commit to its WAL or binary log in the store, for PostgreSQL and MariaDB.
	$(GO) test -count=1 -run '^$$' -bench 'BenchmarkPostgresBackup|BenchmarkMariaDBBackup' -benchtime 1x -timeout 30m ./tests/instance/ | grep -E '^backup '

.PHONY: bench-controlplane
bench-controlplane: controlplane ## Print the local control plane's start time and a 3-replica StatefulSet's time to Ready; with a real node, its cold start and a PostgreSQL pod's time to Ready.
	$(GO) test -count=1 -run '^$$' -bench 'BenchmarkControlPlane|BenchmarkRealNode' -benchtime 3x ./internal/localcluster/

##@ OLM bundle

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ and bundle.Dockerfile the operator-sdk way (reproducible).
	$(OPERATOR_SDK) generate kustomize manifests -q --interactive=false
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)
	sed -i 's/^    createdAt: .*/    createdAt: "$(CREATED_AT)"/' bundle/manifests/dbpilot.clusterserviceversion.yaml

.PHONY: verify-bundle
verify-bundle: $(CONTROLLER_GEN) $(KUSTOMIZE) $(OPERATOR_SDK) ## Fail when the bundle differs from what `make bundle` generates (in a copy of the tree), or bundle/ holds untracked files.
	@copy=$$(mktemp -d) && trap 'rm -rf "$$copy"' EXIT && \
	$(COPY_TREE_TO) "$$copy" && \
	$(MAKE) --no-print-directory -C "$$copy" bundle CONTROLLER_GEN=$(CONTROLLER_GEN) KUSTOMIZE=$(KUSTOMIZE) OPERATOR_SDK=$(OPERATOR_SDK) \
		-o $(CONTROLLER_GEN) -o $(KUSTOMIZE) -o $(OPERATOR_SDK) > /dev/null && \
	diff -r bundle "$$copy/bundle" && diff bundle.Dockerfile "$$copy/bundle.Dockerfile" && diff -r config "$$copy/config" || { echo "the bundle is out of date: run 'make bundle' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- bundle)" || { git status --porcelain -- bundle; echo "untracked bundle files: run 'make bundle' and commit"; exit 1; }

.PHONY: verify-catalog
verify-catalog: $(OPM) ## Fail when catalog/ differs from what `make catalog` renders from the bundle (rendered into a temporary directory), or does not validate.
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	hack/render-catalog.sh $(OPM) bundle "$$out/dbpilot" $(BUNDLE_IMG) $(DEFAULT_CHANNEL) $(CHANNELS) > /dev/null && \
	$(OPM) validate "$$out" && \
	diff -r catalog "$$out" || { echo "the catalog is out of date: run 'make catalog' and commit"; exit 1; }

.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate the bundle with operator-framework/api (OperatorHub suite) and operator-sdk.
	cd hack/tools/olm && $(GO) run ./bundle-validate --k8s-version=1.36 $(CURDIR)/bundle
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework --optional-values=k8s-version=1.36

.PHONY: scorecard
scorecard: $(OPERATOR_SDK) $(SCORECARD_TEST) ## Scorecard: the real `operator-sdk scorecard` on a local real node where the machine allows one (or against $$KUBECONFIG with SCORECARD_CLUSTER=1), else the six built-in tests offline.
ifeq ($(SCORECARD_CLUSTER),1)
	$(OPERATOR_SDK) scorecard bundle --wait-time 120s
else
	@if $(GO) run ./hack/realnode-check; then \
		$(MAKE) controlplane-realnode && $(GO) run ./hack/scorecard --operator-sdk $(OPERATOR_SDK) --scorecard-test $(SCORECARD_TEST) --bundle bundle; \
	else \
		cd hack/tools/olm && $(GO) run ./scorecard-offline --scorecard-test $(SCORECARD_TEST) --bundle $(CURDIR)/bundle --work-dir $(LOCALBIN)/scorecard-root; \
	fi
endif

.PHONY: catalog
catalog: $(OPM) ## Render the bundle into the file-based catalog catalog/ and validate it.
	hack/render-catalog.sh $(OPM) bundle catalog/dbpilot $(BUNDLE_IMG) $(DEFAULT_CHANNEL) $(CHANNELS)
	$(OPM) validate catalog

.PHONY: catalog-build
catalog-build: catalog ## Build the catalog image (needs a container engine).
	$(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a container engine).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: test-olm
test-olm: verify-bundle bundle-validate scorecard verify-catalog ## The OLM checks: bundle up to date, validators, scorecard, catalog up to date (nothing in the tree rewritten).

##@ Run

.PHONY: build
build: ## Build the manager and the instance program.
	$(GO) build -o $(LOCALBIN)/manager ./cmd
	$(GO) build -o $(LOCALBIN)/instance ./cmd/instance

.PHONY: run
run: $(if $(KUBECONFIG),,controlplane) manifests build ## Run the operator: against $KUBECONFIG if set, else on a local control plane (a real node where the machine allows it) with a sample Database.
	$(GO) run ./hack/run --manager $(LOCALBIN)/manager --crds config/crd/bases --samples config/samples --state .local/cluster $(RUN_FLAGS)

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) $(KUBECTL) ## Install the CRDs into the cluster of $KUBECONFIG.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) $(KUBECTL) ## Remove the CRDs (and every Database) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) $(KUBECTL) ## Deploy the operator image IMG to the cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) $(KUBECTL) ## Remove the operator from the cluster.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: docker-build
docker-build: ## Build the operator image (needs a container engine).
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CONTAINER_TOOL) push $(IMG)

##@ Tools

.PHONY: deps
deps: ## Install the Debian packages the suites need (apt-get as root; otherwise print what to install).
	@hack/install-debian-packages.sh $(DEBIAN_PACKAGES)

.PHONY: controlplane controlplane-realnode
CONTROLPLANE_STAMP := $(CONTROLPLANE)/.$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION)-$(COREDNS_VERSION)-$(OLM_VERSION)-$(OPM_VERSION)

controlplane: controlplane-realnode $(LATE_TOOLS) ## Build the local cluster's binaries (control plane, kwok, the real node's, OLM's), linked into bin/controlplane.

# What the real node's suites use but their OLM and S3 backup tests: every
# binary but the late tools, whose links dangle until they are built (make
# test builds them beside the suites).
controlplane-realnode: $(CONTROLPLANE_STAMP) $(KUBECTL) ## Build the local cluster's binaries but kwok's, OLM's and the S3 server, linked into bin/controlplane.


$(CONTROLPLANE_STAMP): $(KUBE_DIR)/.built $(ETCD) $(COREDNS)
	rm -rf $(CONTROLPLANE) && mkdir -p $(CONTROLPLANE)
	for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do ln -s $(KUBE_DIR)/$$b $(CONTROLPLANE)/$$b; done
	for b in olm catalog copy-content cpb crds; do ln -s $(OLM_DIR)/$$b $(CONTROLPLANE)/olm-$$b; done
	ln -s $(ETCD) $(CONTROLPLANE)/etcd
	ln -s $(KWOK) $(CONTROLPLANE)/kwok
	ln -s $(KWOK_STAGES) $(CONTROLPLANE)/kwok-stages
	ln -s $(COREDNS) $(CONTROLPLANE)/coredns
	ln -s $(GRPC_HEALTH_PROBE) $(CONTROLPLANE)/grpc_health_probe
	ln -s $(OPM) $(CONTROLPLANE)/opm
	ln -s $(VERSITYGW) $(CONTROLPLANE)/versitygw
	touch $@

# kwok's Stage manifests (node and pod lifecycles), from its module.
$(KWOK_STAGES)/.copied: $(KWOK)
	stages=$$($(GO) env GOMODCACHE)/sigs.k8s.io/kwok@$(KWOK_VERSION)/kustomize/stage; \
	rm -rf $(KWOK_STAGES) && mkdir -p $(KWOK_STAGES) && \
	cp $$stages/node/fast/node-initialize.yaml $$stages/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	   $$stages/pod/fast/pod-ready.yaml $$stages/pod/fast/pod-complete.yaml $$stages/pod/fast/pod-delete.yaml $(KWOK_STAGES)/
	chmod -R u+w $(KWOK_STAGES)
	touch $@

# kubectl alone, for install and deploy: building the control plane just to
# get kubectl would take minutes.
$(KUBECTL): hack/tools/kube/go.mod hack/tools/kube/go.sum
	test -x $(KUBE_DIR)/kubectl || { cd hack/tools/kube && ../../../$(BUILD_TOOL) "kubectl $(KUBE_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $(KUBE_DIR)/ ./kubectl; }
	ln -sf $(KUBE_DIR)/kubectl $(KUBECTL)

$(KUBE_DIR)/.built: hack/tools/kube/go.mod hack/tools/kube/go.sum
	cd hack/tools/kube && ../../../$(BUILD_TOOL) "kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl $(KUBE_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$(KUBE_LDFLAGS)" \
		-o $(KUBE_DIR)/ ./kube-apiserver ./kube-controller-manager ./kube-scheduler ./kubelet ./kube-proxy ./kubectl
	touch $@

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/go.sum
	cd hack/tools/etcd && ../../../$(BUILD_TOOL) "etcd $(ETCD_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(ETCD) .

$(KWOK):
	$(BUILD_TOOL) "kwok $(KWOK_VERSION)" env GOBIN=$(dir $(KWOK)) CGO_ENABLED=0 $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

$(CONTROLLER_GEN):
	$(BUILD_TOOL) "controller-gen $(CONTROLLER_GEN_VERSION)" env GOBIN=$(dir $(CONTROLLER_GEN)) $(GO) install $(UNOPTIMISED) sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(KUSTOMIZE):
	$(BUILD_TOOL) "kustomize $(KUSTOMIZE_VERSION)" env GOBIN=$(dir $(KUSTOMIZE)) $(GO) install $(UNOPTIMISED) sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(OPERATOR_SDK) $(SCORECARD_TEST) &: hack/tools/operator-sdk/go.mod hack/tools/operator-sdk/go.sum
	cd hack/tools/operator-sdk && ../../../$(BUILD_TOOL) "operator-sdk and scorecard-test $(OPERATOR_SDK_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath $(UNOPTIMISED) -ldflags "$(OPERATOR_SDK_LDFLAGS)" -o $(dir $(OPERATOR_SDK)) \
		github.com/operator-framework/operator-sdk/cmd/operator-sdk github.com/operator-framework/operator-sdk/images/scorecard-test
	touch $(OPERATOR_SDK) $(SCORECARD_TEST)

$(OPM): hack/tools/opm/go.mod hack/tools/opm/go.sum
	cd hack/tools/opm && ../../../$(BUILD_TOOL) "opm $(OPM_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath $(UNOPTIMISED) -tags json1,containers_image_openpgp \
		-ldflags "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.gitCommit=$(OPM_VERSION) -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$(OPM_VERSION)" \
		-o $(OPM) github.com/operator-framework/operator-registry/cmd/opm

$(COREDNS): hack/tools/coredns/go.mod hack/tools/coredns/go.sum hack/tools/coredns/main.go
	cd hack/tools/coredns && ../../../$(BUILD_TOOL) "coredns $(COREDNS_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath $(UNOPTIMISED) -ldflags "-s -w" -o $(COREDNS) .

$(OLM_DIR)/.built: hack/tools/olm-operators/go.mod hack/tools/olm-operators/go.sum
	cd hack/tools/olm-operators && ../../../$(BUILD_TOOL) "OLM $(OLM_VERSION) (olm, catalog, copy-content, cpb)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(OLM_DIR)/ \
		github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
		github.com/operator-framework/operator-lifecycle-manager/cmd/catalog \
		github.com/operator-framework/operator-lifecycle-manager/cmd/copy-content \
		github.com/operator-framework/operator-lifecycle-manager/util/cpb
	rm -rf $(OLM_DIR)/crds && cp -r $$(cd hack/tools/olm-operators && $(GO) list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)/deploy/chart/crds $(OLM_DIR)/crds
	chmod -R u+w $(OLM_DIR)/crds
	touch $@

$(GRPC_HEALTH_PROBE): hack/tools/grpc-health-probe/go.mod hack/tools/grpc-health-probe/go.sum
	cd hack/tools/grpc-health-probe && ../../../$(BUILD_TOOL) "grpc_health_probe $(GRPC_HEALTH_PROBE_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath $(UNOPTIMISED) -ldflags "-s -w" -o $(GRPC_HEALTH_PROBE) github.com/grpc-ecosystem/grpc-health-probe

$(VERSITYGW): hack/tools/versitygw/go.mod hack/tools/versitygw/go.sum
	cd hack/tools/versitygw && ../../../$(BUILD_TOOL) "versitygw $(VERSITYGW_VERSION) (S3 server for the backup tests)" \
		env CGO_ENABLED=0 $(GO) build -trimpath $(UNOPTIMISED) -ldflags "-s -w" -o $(VERSITYGW) github.com/versity/versitygw/cmd/versitygw

.PHONY: realnode-tools
realnode-tools: $(COREDNS) $(OLM_DIR)/.built $(GRPC_HEALTH_PROBE) ## Build the real node's extra tools: CoreDNS, OLM's operators, grpc_health_probe.

.PHONY: tools
tools: controlplane realnode-tools controller-gen kustomize operator-sdk opm ## Build every pinned tool.

.PHONY: operator-sdk opm
operator-sdk: $(OPERATOR_SDK) $(SCORECARD_TEST) ## Build operator-sdk and the scorecard test program.
opm: $(OPM) ## Build opm.

.PHONY: controller-gen kustomize
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen.
kustomize: $(KUSTOMIZE) ## Build kustomize.

.PHONY: clean
clean: ## Remove built binaries (keeps the tool cache) and local cluster state.
	rm -rf $(LOCALBIN)/manager .local
