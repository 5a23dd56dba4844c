# make test: what CI runs. Every module of the repository: gofmt, go vet, go test -race.
MODULES := $(patsubst %/,%,$(dir $(shell find . -name go.mod -not -path "*/testdata/*" | sort)))
ifeq ($(strip $(MODULES)),)
MODULES := .
endif
GO ?= go

.PHONY: test fmt vet boundaries race newest fuzz bench gobench example stress release release-check

test: fmt vet boundaries race newest fuzz

fmt:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@for m in $(MODULES); do echo "go vet $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done

# Every module but the core stands on the core's public API: its packages (tests aside) import
# nothing of the core's internal/, which carries no compatibility promise between releases.
# (the developer tools, tools/ and its benchmark modules, are the core's own; the
# examples are run from this repository, with a workspace of their own, and required by
# nobody: their test helper starts Redis with the core's.)
CORE_INTERNAL := github.com/a7d3e0dd/ratelimit/internal/
boundaries:
	@for m in $(filter-out . ./internal/% ./tools ./tools/% ./examples,$(MODULES)); do \
		bad=$$(cd $$m && $(GO) list -f '{{$$p := .ImportPath}}{{range .Imports}}{{$$p}} imports {{.}}{{"\n"}}{{end}}' ./... | grep ' imports $(CORE_INTERNAL)'); \
		if [ -n "$$bad" ]; then echo "$$m uses the core's internal packages:"; echo "$$bad"; exit 1; fi; \
	done; echo "boundaries: no module but the core imports the core's internal/"

# Go's default of 10 minutes a package is not enough for the core under the race detector on a
# busy 2-core machine (two make test at once, or helpers building beside it).
# An adapter's module says which framework release its tests run on (TestRunsOnTheDeclaredVersion,
# in version_test.go, fails when a workspace raised it); the line after its tests shows it.
race:
	@for m in $(MODULES); do echo "go test -race $$m"; (cd $$m && $(GO) test -race -count=1 -timeout 30m ./... && $(VERSIONS)) || exit 1; done

# An adapter is tested on the oldest framework release it supports (its go.mod, above) and on
# the newest one (its go.newest.mod, outside every workspace, the core from this repository).
newest:
	@for m in $(MODULES); do if [ -f $$m/go.newest.mod ]; then \
		echo "go test -race $$m on the newest tested release (go.newest.mod)"; \
		(cd $$m && export GOWORK=off GOFLAGS=-modfile=go.newest.mod && $(GO) test -race -count=1 -timeout 30m ./... && $(VERSIONS)) || exit 1; \
	fi; done

VERSIONS = if [ -f version_test.go ]; then $(GO) test -race -count=1 -run '^TestRunsOnTheDeclaredVersion$$' -v . | sed -n 's/^ *version_test.go:[0-9]*: /  runs on /p'; fi

# A short run of every fuzz target (of every package of each module) on top of the checked-in
# seed corpora. The budget is a count of executions, not a duration: with a duration, Go 1.26's
# fuzzing coordinator can report "context deadline exceeded" as a failure when the time is up
# while a worker is busy (go.dev/issue/75804, fixed in Go 1.27), which failed CI once on a
# loaded machine with no failing input. 5,000 executions take 1-22 s a target here.
FUZZTIME ?= 5000x
fuzz:
	@for m in $(MODULES); do \
		for d in $$(cd $$m && $(GO) list -f '{{.Dir}}' ./...); do \
			for f in $$(cd $$d && grep -ho '^func Fuzz[A-Za-z0-9_]*' *_test.go 2>/dev/null | sed 's/^func //'); do \
				echo "go test -fuzz=$$f -fuzztime=$(FUZZTIME) $$d"; \
				(cd $$d && $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) .) || exit 1; \
			done; \
		done; \
	done

# The performance table (tools/benchtable): every figure of the performance targets beside
# its floor measured in the same run, the ratio, the target, PASS or MISS; then the store beside
# other Go limiters (tools/peerbench). Both print their tables and write their sections of
# docs/results.md (dated, with the machine, the versions and the load), where the documents
# take their figures from. Each starts and stops a redis-server of its own; together they take
# a few minutes (the results file says how long each took); not part of make test.
# BENCHFLAGS passes flags to benchtable, e.g. BENCHFLAGS='-rounds 5 -v'; BENCHNOTE is what the
# results file says of the machine's load, e.g. BENCHNOTE='idle'.
BENCHNOTE ?=
bench:
	$(GO) run ./tools/benchtable -out docs/results.md -note "$(BENCHNOTE)" $(BENCHFLAGS)
	cd tools/adapterbench && $(GO) run . -out ../../docs/results.md -note "$(BENCHNOTE)"
	cd tools/peerbench && $(GO) run . -out ../../docs/results.md -note "$(BENCHNOTE)"

# Every go test benchmark of the root module.
gobench:
	$(GO) test -run='^$$' -bench=. -benchmem .

example:
	cd examples && $(GO) run ./nethttp

# Two make test at once, three times in a row: the tests must not depend on the machine being
# idle (every test about time runs on injected time). Logs go to a temporary directory.
stress:
	@dir=$$(mktemp -d); for i in 1 2 3; do \
		echo "stress round $$i: two make test at once (logs in $$dir)"; \
		$(MAKE) --no-print-directory test >$$dir/round$$i-a.log 2>&1 & a=$$!; \
		$(MAKE) --no-print-directory test >$$dir/round$$i-b.log 2>&1 & b=$$!; \
		wait $$a; ra=$$?; wait $$b; rb=$$?; \
		if [ $$ra -ne 0 ] || [ $$rb -ne 0 ]; then echo "round $$i failed: see $$dir"; exit 1; fi; \
	done; echo "stress: 3 rounds passed"

# A release of every module (tools/release): make release-check VERSION=v0.1.0 sets the
# modules' requirements on each other, the workspaces and the README's install lines to
# VERSION in a copy of the tree, and checks in a fresh module outside the workspace that every
# install line of the README resolves, builds and installs (our modules from a proxy of files
# made from the tree). make release VERSION=v0.1.0 does the same in the repository, commits it
# and tags every module in dependency order (v0.1.0, adapters/gin/v0.1.0, ...), then checks
# the tagged tree. Push with git push origin HEAD --tags.
release-check:
	@test -n "$(VERSION)" || { echo "usage: make release-check VERSION=vX.Y.Z"; exit 2; }
	$(GO) run ./tools/release -check $(VERSION)

release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z"; exit 2; }
	@test -z "$$(git status --porcelain)" || { echo "release: commit or stash your changes first"; exit 1; }
	$(MAKE) --no-print-directory test
	$(GO) run ./tools/release -tag -check $(VERSION)
