# Berth: `make run` builds and starts berthd on its embedded PostgreSQL;
# `make test` runs the whole suite (vet, Go tests with -race, conformance).

GO      ?= go
SHARED  ?= ../shared
BIN     := bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build run test vet gotest conformance bench bench-go bench-claims bench-scale bench-perfload fuzz fmt clean

all: build

## build: compile bin/berthd and bin/berth (the operator CLI)
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/berthd ./cmd/berthd
	$(GO) build -o $(BIN)/berth ./cmd/berth

## run: build, then serve on 127.0.0.1:8778 with the embedded PostgreSQL
run: build
	$(BIN)/berthd

## test: the whole suite: go vet, go test -race, then the conformance run
test: vet gotest conformance

vet:
	$(GO) vet ./...

gotest:
	$(GO) test -race -timeout 30m ./... # integration/migrate starts MariaDB and Placements, internal/keystone and integration/keystone real Keystones: minutes on a loaded machine

## conformance: play shared/conformance against bin/berthd, in groups: the
##   defaults, then the policy, RBAC and CORS files against berthd started
##   with --policy open|legacy|secure and --cors-allowed-origin
##   (CONFORMANCE_GROUPS="default secure" to pick groups;
##   CONFORMANCE_GROUPS=default CONFORMANCE_ARGS="--only 'inventory*'" to pick files)
conformance: build
	SHARED='$(abspath $(SHARED))' BERTHD='$(CURDIR)/$(BIN)/berthd' scripts/conformance.sh

## bench: the Go benchmarks, then issue 39's figures (bench-claims,
##   bench-scale, bench-perfload); nothing is asserted
bench: bench-go bench-claims bench-scale bench-perfload

## bench-go: run the Go benchmarks
bench-go:
	$(GO) test -run '^$$' -bench . ./...

## bench-claims: claims/s, berthd's and PostgreSQL's CPU per claim of
##   CLAIMS_BASE (default 0da4e8f, issue 39's baseline) against the working
##   tree, measured in turns, and the ratios (scripts/claim-cost.sh; several
##   minutes; CLAIMS_ARGS="--rounds 5 --claims 5000" for a longer run)
CLAIMS_BASE ?= 0da4e8f
CLAIMS_ARGS ?= --rounds 3 --claims 3000
bench-claims:
	scripts/claim-cost.sh --base $(CLAIMS_BASE) $(CLAIMS_ARGS)

## bench-scale: at SCALE_PROVIDERS (default 100,000) providers, berthd's
##   peak RSS while claiming and GET /resource_providers at 1.39 and 1.0:
##   time and berthd's CPU per list (scripts/claim-profile.sh; seeding takes
##   minutes)
SCALE_PROVIDERS ?= 100000
SCALE_ARGS ?= --claims 3000 --list 10
bench-scale:
	scripts/claim-profile.sh --providers $(SCALE_PROVIDERS) $(SCALE_ARGS)

## bench-perfload: Placement's nested-perfload gate job against berthd and
##   the reference Placement 8.0.0 (/work/shared/reference), requests/s and
##   their ratio (scripts/perfload.sh; PERFLOAD_ARGS=--no-reference for
##   Berth alone)
PERFLOAD_ARGS ?=
bench-perfload:
	scripts/perfload.sh $(PERFLOAD_ARGS)

## fuzz: run each fuzz target for FUZZTIME (default 60s) on one worker;
##   what they find lands in testdata/fuzz and is replayed by go test
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./httpapi/placement -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) -parallel 1
	$(GO) test ./httpapi/berthapi -run '^$$' -fuzz '^FuzzDecodeClaim$$' -fuzztime $(FUZZTIME) -parallel 1
	$(GO) test ./httpapi/wire -run '^$$' -fuzz '^FuzzPyJSONError$$' -fuzztime $(FUZZTIME) -parallel 1
	$(GO) test ./httpapi/placement -run '^$$' -fuzz '^FuzzQueryParsers$$' -fuzztime $(FUZZTIME) -parallel 1
	$(GO) test ./scheduler/scriptlet -run '^$$' -fuzz '^FuzzScriptlet$$' -fuzztime $(FUZZTIME) -parallel 1
	$(GO) test ./integration -run '^$$' -fuzz '^FuzzAPI$$' -fuzztime $(FUZZTIME) -parallel 1

fmt:
	gofmt -l -w .

clean:
	rm -rf $(BIN)
