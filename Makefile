# keel — build, test and measure. Every target runs from a clean clone.
GO          ?= go
BIN         := bin/keel
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.Version=$(VERSION)
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK ?= $(GOBIN)/staticcheck
# Tests that need root skip as a user; under CI they fail instead (docs/testing.md).
KEEL_ROOT_TESTS ?= $(if $(CI),require)
# Tests needing the cue CLI or promtool skip without them; under make check
# (and CI) they fail instead (docs/testing.md).
KEEL_REQUIRE_TOOLS ?= $(if $(CI),1)

.PHONY: all build test lint mutate demo e2e e2e-long e2e-ansible fixtures bench check deps deb clean

all: build

## build: the static keel binary in bin/keel
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/keel

## test: unit tests with the race detector (host only, captured fixtures)
test:
	KEEL_ROOT_TESTS=$(KEEL_ROOT_TESTS) KEEL_REQUIRE_TOOLS=$(KEEL_REQUIRE_TOOLS) $(GO) test -race -count=1 ./...

## mutate: one-line mutations of the safety rules, each must fail its tests (internal/mutate)
mutate:
	$(GO) run ./internal/mutate

## lint: gofmt, go vet and staticcheck must all be clean, and no merge left conflict markers
lint:
	@if git grep -n -E '^(<<<<<<< |>>>>>>> )' -- . ':!*.golden'; then echo "conflict markers left by a merge"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./e2e/...

## demo: keel doing its main job on bundled real data (snapshots captured in the test guest)
demo: build
	./examples/demo.sh $(BIN)

## e2e: the real-kernel suite in the qemu test guest (see docs/testing.md)
e2e:
	./e2e/run-e2e.sh

## e2e-long: the kill loop's 50 iterations, kept out of CI for time (CI runs 2, from a random place in the rotation of 11 kinds); docs/reliability.md
e2e-long:
	KEEL_KILL_ITERATIONS=50 E2E_TIMEOUT=120m E2E_PKGS=./e2e/kill ./e2e/run-e2e.sh

## e2e-ansible: the shipped Ansible role run for real in the systemd guest (TestAnsibleRollout), kept out of CI for time; docs/testing.md
e2e-ansible:
	KEEL_E2E_ANSIBLE=1 E2E_TIMEOUT=60m E2E_PKGS=./e2e/audit ./e2e/run-e2e.sh -run TestAnsibleRollout

## fixtures: re-capture the host-side test data from the real kernel
fixtures:
	./e2e/capture-fixtures.sh

## bench: every benchmark; rewrites docs/benchmarks.md
bench:
	./e2e/bench.sh

## deb: the Debian package in dist/ (dpkg-deb, offline; see docs/packaging.md)
deb: ; ./packaging/build-deb.sh dist

## deps: install what the tests need (Debian packages, staticcheck, cue); needs root
deps:
	./.ci/install-deps

## check: everything CI runs: lint, unit tests (cue and promtool required), mutations, e2e
check: KEEL_REQUIRE_TOOLS = 1
check: deps lint test mutate e2e

clean:
	rm -rf bin dist
