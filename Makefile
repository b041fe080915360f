# mnemo — make targets. `make test` is what CI runs (with `make coverage`).
GO       ?= go
BIN      ?= bin/mnemo
COVERMIN ?= 95
FUZZTIME ?= 20s

.PHONY: build test coverage lint bench load fuzz run clean

build:
	$(GO) build -o $(BIN) ./cmd/mnemo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: lint
	$(GO) test -race -count=1 ./...

# Fails when statement coverage of the whole module is below $(COVERMIN)%.
coverage:
	$(GO) test -count=1 -covermode=atomic -coverprofile=coverage.out ./...
	@$(GO) tool cover -func=coverage.out | tail -1
	@$(GO) tool cover -func=coverage.out | awk -v min=$(COVERMIN) '/^total:/ { sub("%","",$$3); if ($$3+0 < min) { printf "coverage %.1f%% is below %d%%\n", $$3, min; exit 1 } }'

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./memory/

# The load tool: the real store, model client, Thinker and reflector against
# a fake model on 127.0.0.1. LOADFLAGS="-users 200 -messages 10" and so on.
load:
	$(GO) run ./cmd/mnemo-load $(LOADFLAGS)

# Runs every fuzz target for $(FUZZTIME) each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

run:
	$(GO) run ./cmd/mnemo chat

clean:
	rm -rf bin coverage.out
