# mnemo — make targets. CI (.ci/run) runs `make test`, `make e2e` and `make coverage`.
GO       ?= go
BIN      ?= bin/mnemo
COVERMIN ?= 95
FUZZTIME ?= 20s
# The version `mnemo version` prints; the Dockerfile stamps it the same way.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
BUILDDATE ?= $(shell date -u +%Y-%m-%d)

.PHONY: build pgo image test test-race test-plain test-norace e2e coverage lint bench load soak fuzz mutation crash run clean bench-recall

# A static binary, as the Dockerfile builds it: no libc to load at each start.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w -X main.version=$(VERSION) -X main.buildDate=$(BUILDDATE)" -o $(BIN) ./cmd/mnemo

# cmd/mnemo/default.pgo, the CPU profile the go command builds mnemo with
# (profile-guided optimisation: every `go build ./cmd/mnemo`, the
# Dockerfile's too): a piped chat of 3000 messages through runWith against a
# fake model (BenchmarkPipedChat). Run it again after large changes to
# the chat path; a stale profile still builds, it just helps less.
pgo:
	$(GO) test -run '^$$' -bench '^BenchmarkPipedChat$$' -benchtime 3000x -count 1 -cpuprofile cmd/mnemo/default.pgo -o $${TMPDIR:-/tmp}/mnemo-pgo.test ./cmd/mnemo

# The container image (deploy/Dockerfile); needs a Docker daemon.
image:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) --build-arg BUILDDATE=$(BUILDDATE) -t mnemo:$(VERSION) -t mnemo:latest .

# deadcode (golang.org/x/tools/cmd/deadcode, fetched through the module
# proxy at DEADCODE_VERSION on first use): no function outside tests may
# be unreachable from mnemo's main packages. The fakes and test harnesses
# (packages named *test, agent/fake, the conformance table, the recall
# bench, the CONFIG.md generator) are reached from tests only, by design.
DEADCODE_VERSION ?= v0.52.0
DEADCODE_SKIP  = (^|/)[a-z]*test/|^agent/fake/|/conformance/|/recallbench/|/configdoc/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@out=$$($(GO) run golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION) ./...) || exit 1; \
	  out=$$(echo "$$out" | grep -Ev '$(DEADCODE_SKIP)'); \
	  if [ -n "$$out" ]; then echo "unreachable functions (deadcode): remove them, or move a test's helper into its _test.go file:"; echo "$$out"; exit 1; fi; \
	  echo "deadcode: no unreachable functions"

# The race detector runs on the packages that have concurrency: their code
# or their tests start goroutines or share state between them (sync,
# sync/atomic, channels, signals, child processes). It finds nothing in
# code that runs on one goroutine and makes it 2 to 10 times slower, so
# the other packages (today agent/clock, agent/defaults, agent/fake,
# agent/llm, cmd/internal/config and its configdoc, deploy:
# values, parsing, templates) run without it. A package missing from this list is still
# tested, without -race; `make test` fails if such a package imports sync
# or sync/atomic, the sign it belongs here. The slowest come first, so
# that they do not start last and finish alone.
RACE_PKGS ?= ./memory/... ./cmd/mnemo-load ./cmd/mnemo ./cmd/internal/wiring ./bots/... \
	./reflector ./agent ./agent/clock/clocktest ./agent/llm/llmtest ./agent/llm/openai \
	./agent/logtest ./agent/openaitest ./agent/text \
	./cmd/internal/app ./cmd/internal/control ./cmd/internal/metrics ./cmd/internal/turns ./cmd/internal/userdata \
	./cmd/internal/budget ./cmd/internal/state .
PLAIN_PKGS = $(filter-out $(shell $(GO) list $(RACE_PKGS)),$(shell $(GO) list ./...))

# Tests of the race packages that run on one goroutine and spend seconds
# of CPU (the reply formatter's linearity guard, memory_list's size
# bounds): `make test` runs them without -race (10 times faster, nothing
# for the detector to see); `make coverage` runs them too.
NORACE_TESTS ?= ^(TestFormatIsLinear|TestListResultShortcutExact|TestMemoryListBudget)$$
NORACE_PKGS  ?= ./bots/slack ./memory

# The end-to-end tests that take long (`make e2e`; CI runs it): the soak,
# the child processes killed at every write boundary (reflection, intake
# journal, memory store), the signal tests against a child mnemo, the
# benchmark run against a built binary, the Dockerfile's own build command
# (a static, profile-guided build of the whole program: minutes of CPU on
# a clean cache). `make test` skips them; `make coverage` runs them too.
E2E_TESTS ?= ^(TestSoak|TestCrashAtEveryWriteBoundary|TestIntakeCrashSlack|TestIntakeCrashDiscord|TestCrashSafety|TestSigtermChatWaitsTheGraceThenKeepsTheTurnJournaled|TestSigtermServeCancelsAHungReplyAfterTheGrace|TestSecondSignalStopsAtOnce|TestBenchSmallRun|TestDockerBuildCommand)$$
E2E_PKGS  ?= ./cmd/mnemo ./cmd/mnemo-load ./memory ./deploy

# A -race binary sleeps a second before it exits, for threads still
# running to report races (every test binary, every child mnemo a test
# starts): RACE_ENV turns that off (GORACE=... from the environment is kept
# after it; goleak fails the tests that leave goroutines running).
RACE_ENV = GORACE="atexit_sleep_ms=0 $(GORACE)"

# Lint and the three runs go side by side. Each run goes through
# gotestsum (gotest.tools/gotestsum, fetched through the module proxy at
# GOTESTSUM_VERSION on first use), which prints a line per package as it
# finishes ("PASS pkg (12.3s)"), the output of every failed test, and a
# closing "DONE n tests … in …" line. Many tests wait (on the network,
# child processes, discordgo's one-second Close) rather than compute,
# hence -p 4 test binaries at once and -parallel 8 for the tests that call
# t.Parallel (bots/discord and its fake).
GOTESTSUM_VERSION ?= v1.13.0
GOTESTSUM = $(GO) run gotest.tools/gotestsum@$(GOTESTSUM_VERSION) --format pkgname-and-test-fails --format-icons text --format-hide-empty-pkg --raw-command -- $(GO) test -json

test:
	@$(MAKE) --no-print-directory -j4 lint test-race test-plain test-norace

test-race:
	$(RACE_ENV) $(GOTESTSUM) -race -count=1 -p 4 -parallel 8 -skip '$(E2E_TESTS)|$(NORACE_TESTS)' $(RACE_PKGS)

test-plain:
	@bad=$$($(GO) list -f '{{.ImportPath}}: {{join .Imports " "}}' $(PLAIN_PKGS) | grep -E ' sync(/atomic)?( |$$)' | cut -d: -f1); \
	  if [ -n "$$bad" ]; then echo "these packages import sync or sync/atomic: add them to RACE_PKGS (Makefile):"; echo "$$bad"; exit 1; fi
	$(GOTESTSUM) -count=1 -skip '$(E2E_TESTS)' $(PLAIN_PKGS)

test-norace:
	$(GOTESTSUM) -count=1 -run '$(NORACE_TESTS)' $(NORACE_PKGS)

# The long end-to-end tests `make test` leaves out (see E2E_TESTS), with
# the race detector.
e2e:
	$(RACE_ENV) $(GO) test -race -count=1 -timeout 30m -run '$(E2E_TESTS)' $(E2E_PKGS)

# Fails when statement coverage of the whole module is below $(COVERMIN)%.
# -pgo=off: with cmd/mnemo's default.pgo, go 1.26 links cmd/mnemo's
# covered test against a bots/registry built for another variant
# ("fingerprint mismatch"); coverage needs no profile-guided build.
coverage:
	$(GO) test -pgo=off -count=1 -covermode=atomic -coverprofile=coverage.out ./...
	@$(GO) tool cover -func=coverage.out | tail -1
	@$(GO) tool cover -func=coverage.out | awk -v min=$(COVERMIN) '/^total:/ { sub("%","",$$3); if ($$3+0 < min) { printf "coverage %.1f%% is below %d%%\n", $$3, min; exit 1 } }'

# One table of mnemo's own cost on this machine (bin/mnemo as a child
# process against a scripted model, fake Slack and fake Discord on
# 127.0.0.1; serve's open files, goroutines and RSS at 100, 1,000 and
# 10,000 distinct people), plus the go test benchmarks, printed and written into
# cmd/mnemo-load/README.md's Performance section. A quick run:
# BENCHFLAGS="-messages 20 -sizes 0,200 -users 1,10 -benchtime 100ms -distinct 100".
BENCHFLAGS ?=
bench: build
	$(GO) run ./cmd/mnemo-load -bench -bin $(BIN) -go $(GO) -readme cmd/mnemo-load/README.md $(BENCHFLAGS)

# The load tool: the real store, model client, Thinker and reflector against
# a fake model on 127.0.0.1. LOADFLAGS="-users 200 -messages 10" and so on.
load:
	$(GO) run ./cmd/mnemo-load $(LOADFLAGS)

# The crash test's long form: a child `mnemo chat` killed with SIGKILL
# before each disk operation of a reflection (as in `make e2e`) and at
# CRASH_KILLS random moments, restarted each time; the memory must hold
# every intended change exactly once.
CRASH_KILLS ?= 300
crash:
	@MNEMO_CRASH_RANDOM=$(CRASH_KILLS) $(GO) test -count=1 -timeout 30m -v -run '^TestCrashAtEveryWriteBoundary$$' ./cmd/mnemo > crash.out 2>&1; rc=$$?; \
	  grep -E '^(ok|FAIL|--- FAIL)|random kills|write boundaries|crash_test' crash.out; rm -f crash.out; exit $$rc

# The soak: `mnemo serve` (the real runWith path, both adapters on slack-go
# and discordgo) against the fake Slack, the fake Discord and a scripted
# model, $(SOAKMESSAGES) messages from 100 users while Slack redelivers,
# Discord replays, both reconnect and a person edits the memory files. It
# fails unless every message is answered once, every reflection's writes
# and every hand edit are in the files, and goroutines and open files are
# back to their start; it prints its figures. `make e2e` runs it with
# 1,000 messages. SOAKFLAGS="-soak.seed N -soak.free -soak.report soak.json"
# and so on (the flags are in cmd/mnemo/soak_test.go); GOFLAGS=-race too.
SOAKMESSAGES ?= 10000

soak:
	$(GO) test -count=1 -timeout 30m -run '^TestSoak$$' -v ./cmd/mnemo -args -soak.messages $(SOAKMESSAGES) $(SOAKFLAGS)

# Runs every fuzz target for $(FUZZTIME) each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Mutation testing with gremlins (installed at $(GREMLINS_VERSION) when
# missing): every package's tests are run against mutated code, with the
# test cache off. Not part of `make test`; slow (the Discord package's
# tests take ~40 s a run). MUTATION_PKGS="./bots/internal/split" runs one;
# MUTATIONFLAGS="--workers 2 --threshold-efficacy 95" and so on. The fakes
# (openaitest, discordtest, slacktest) and the recall bench tool
# (memory/search/recallbench) are not mutated. Mutants that cannot
# be killed are listed in .gremlins-equivalent.md. A mutant's time limit is
# the coefficient times the first (coverage) run, compile included: 3 marks
# slow-but-finishing mutants of small packages as timed out on a busy
# machine, hiding survivors, hence 10.
GREMLINS_VERSION ?= v0.6.0
GREMLINS         ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)/gremlins
MUTATION_PKGS    ?= ./memory ./memory/search ./reflector ./agent ./agent/llm/openai ./bots/internal/queue ./bots/internal/split ./bots/internal/thread ./bots/internal/clean ./bots/internal/memorycmd ./bots/internal/settings ./bots/internal/pipeline ./bots/internal/intake ./bots/discord ./bots/slack ./cmd/internal/config
MUTATIONFLAGS    ?= --workers 1 --timeout-coefficient 10

mutation:
	@if ! $(GO) version -m $(GREMLINS) 2>/dev/null | grep -q 'github.com/go-gremlins/gremlins[[:space:]]*$(GREMLINS_VERSION)'; then \
	  echo "installing gremlins $(GREMLINS_VERSION)"; \
	  GOBIN=$(abspath $(dir $(GREMLINS))) $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION) || exit 1; \
	fi
	@for pkg in $(MUTATION_PKGS); do \
	  echo "== $$pkg"; \
	  GOFLAGS="$$GOFLAGS -count=1" $(GREMLINS) unleash $(MUTATIONFLAGS) \
	    --exclude-files '(^|/)(openaitest|discordtest|slacktest|recallbench)/' $$pkg || exit 1; \
	done

run:
	$(GO) run ./cmd/mnemo chat

clean:
	rm -rf bin coverage.out

# Recall of memory/search against a textbook BM25 (memory/search/recallbench):
# recall@5 and @10 per kind of question over a generated year and a half of
# memory. RECALL_DATA=/tmp/locomo/a,/tmp/locomo/b adds the sets in those
# folders (memory/{facts,episodes}/*.md and questions.json, see LoadDir);
# RECALL_MISSES=1 lists the questions mnemo misses.
bench-recall:
	$(GO) test -count=1 -run '^TestRecallReport$$' -v ./memory/search/recallbench
