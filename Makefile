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

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
export GOTOOLCHAIN := local

LOCALBIN := $(CURDIR)/bin
CONTROLPLANE := $(LOCALBIN)/controlplane
KUBE_DIR := $(LOCALBIN)/kube/$(KUBE_VERSION)
ETCD := $(LOCALBIN)/etcd/$(ETCD_VERSION)/etcd
KWOK := $(LOCALBIN)/kwok/$(KWOK_VERSION)/kwok
CONTROLLER_GEN := $(LOCALBIN)/controller-gen/$(CONTROLLER_GEN_VERSION)/controller-gen
KUSTOMIZE := $(LOCALBIN)/kustomize/$(KUSTOMIZE_VERSION)/kustomize
KUBECTL := $(LOCALBIN)/kubectl
BUILD_TOOL := hack/build-tool.sh

# Progress of tool builds: "[n/m] building X", where m counts the tools that
# are missing when make starts.
TOOL_FILES = $(KUBE_DIR)/.built $(ETCD) $(KWOK) $(CONTROLLER_GEN) $(KUSTOMIZE)
export BUILD_TOTAL := $(words $(filter-out $(wildcard $(TOOL_FILES)),$(TOOL_FILES)))
export BUILD_COUNTER := $(LOCALBIN)/.build-count-$(shell echo $$PPID)

KUBE_LDFLAGS := -s -w $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=$(word 2,$(subst ., ,$(KUBE_VERSION:v%=x.%))) \
	-X $(pkg).gitMinor=$(word 3,$(subst ., ,$(KUBE_VERSION:v%=x.%))) -X $(pkg).gitTreeState=clean)

# Debian packages for the suites that run real databases and Prometheus.
DEBIAN_PACKAGES ?= prometheus postgresql-15 mariadb-server prometheus-postgres-exporter prometheus-mysqld-exporter

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests from the Go markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./controllers/...;./internal/..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when generated files differ from what is committed.
	@git diff --exit-code -- api config || { echo "generated files are out of date: run 'make manifests generate' and commit"; exit 1; }

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

##@ Test

.PHONY: test
test: deps controlplane verify-generated vet test-unit test-integration ## Run every test suite (installs and builds what it needs).

.PHONY: test-unit
test-unit: ## Unit tests: pure builders, setters, the decision engine.
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /tests/)

.PHONY: test-integration
test-integration: controlplane ## Integration and end-to-end tests on the local control plane.
	$(GO) test -count=1 -p 1 -timeout 40m ./tests/...

.PHONY: bench-reconcile
bench-reconcile: controlplane manifests ## Print the time from create to Available for 1 and for 50 Databases.
	$(GO) test -count=1 -run '^$$' -bench BenchmarkCreateToAvailable -benchtime 1x -timeout 30m ./tests/e2e/

.PHONY: bench-controlplane
bench-controlplane: controlplane ## Print the local control plane's start time and a 3-replica StatefulSet's time to Ready.
	$(GO) test -count=1 -run '^$$' -bench BenchmarkControlPlane -benchtime 3x ./tests/cluster/

##@ Run

.PHONY: build
build: ## Build the manager binary.
	$(GO) build -o $(LOCALBIN)/manager ./cmd

.PHONY: run
run: controlplane manifests build ## Run the operator: against $$KUBECONFIG if set, else on a local control plane with a sample Database.
	$(GO) run ./hack/run --manager $(LOCALBIN)/manager --crds config/crd/bases --samples config/samples --state .local/cluster $(RUN_FLAGS)

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) $(KUBECTL) ## Install the CRDs into the cluster of $$KUBECONFIG.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) $(KUBECTL) ## Remove the CRDs (and every Database) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) $(KUBECTL) ## Deploy the operator image $$IMG to the cluster.
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

.PHONY: controlplane
controlplane: $(CONTROLPLANE)/.$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION) $(KUBECTL) ## Build the local control plane's binaries.

$(CONTROLPLANE)/.$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION): $(KUBE_DIR)/.built $(ETCD) $(KWOK)
	rm -rf $(CONTROLPLANE) && mkdir -p $(CONTROLPLANE)/kwok-stages
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do ln -s $(KUBE_DIR)/$$b $(CONTROLPLANE)/$$b; done
	ln -s $(ETCD) $(CONTROLPLANE)/etcd
	ln -s $(KWOK) $(CONTROLPLANE)/kwok
	stages=$$($(GO) env GOMODCACHE)/sigs.k8s.io/kwok@$(KWOK_VERSION)/kustomize/stage; \
	cp $$stages/node/fast/node-initialize.yaml $$stages/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	   $$stages/pod/fast/pod-ready.yaml $$stages/pod/fast/pod-complete.yaml $$stages/pod/fast/pod-delete.yaml $(CONTROLPLANE)/kwok-stages/
	chmod -R u+w $(CONTROLPLANE)/kwok-stages
	touch $@

$(KUBECTL): $(KUBE_DIR)/.built
	ln -sf $(KUBE_DIR)/kubectl $(KUBECTL)

$(KUBE_DIR)/.built: hack/tools/kube/go.mod hack/tools/kube/go.sum
	cd hack/tools/kube && ../../../$(BUILD_TOOL) "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $(KUBE_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$(KUBE_LDFLAGS)" \
		-o $(KUBE_DIR)/ ./kube-apiserver ./kube-controller-manager ./kube-scheduler ./kubectl
	touch $@

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/go.sum
	cd hack/tools/etcd && ../../../$(BUILD_TOOL) "etcd $(ETCD_VERSION)" \
		env CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(ETCD) .

$(KWOK):
	$(BUILD_TOOL) "kwok $(KWOK_VERSION)" env GOBIN=$(dir $(KWOK)) CGO_ENABLED=0 $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

$(CONTROLLER_GEN):
	$(BUILD_TOOL) "controller-gen $(CONTROLLER_GEN_VERSION)" env GOBIN=$(dir $(CONTROLLER_GEN)) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(KUSTOMIZE):
	$(BUILD_TOOL) "kustomize $(KUSTOMIZE_VERSION)" env GOBIN=$(dir $(KUSTOMIZE)) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

.PHONY: tools
tools: controlplane controller-gen kustomize ## Build every pinned tool.

.PHONY: controller-gen kustomize
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen.
kustomize: $(KUSTOMIZE) ## Build kustomize.

.PHONY: clean
clean: ## Remove built binaries (keeps the tool cache) and local cluster state.
	rm -rf $(LOCALBIN)/manager .local
