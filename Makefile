# The project's tasks. CI (.ci/run) provisions a machine (PostgreSQL, Chromium, poppler, Node) and
# then runs these same targets, so `make <target>` here is what CI runs. `make help` lists them.
PYTHON ?= python3
PY := .venv/bin/python
BIN := .venv/bin
SRC := app tests bench scripts migrations

.DEFAULT_GOAL := help
.PHONY: help setup check test-fast test contract contract-check frontend fuzz vllm bench bench-gates lock

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

setup:  ## the README's two set-up commands: .venv with the service, its dev tools, the bench's chunkers
	$(PYTHON) -m venv .venv
	$(BIN)/pip install -q -e '.[dev,bench]'

check:  ## format, lint, types (app and tests), import layering
	$(BIN)/ruff format --check $(SRC)
	$(BIN)/ruff check $(SRC)
	$(BIN)/mypy
	$(BIN)/lint-imports

# Both in parallel, one pytest-xdist worker per core (pyproject.toml's addopts; -n 0: one process).
test-fast:  ## the unit tests, in parallel (about 4 min on 2 cores): no API, other program, PostgreSQL or vLLM
	$(PY) -m pytest -q -m "not slow and not postgres and not vllm" --ignore=tests/api

test:  ## the README's test command, in parallel (everything but the vLLM suite; 10-12 min on 2 cores)
	$(PY) -m pytest

contract:  ## regenerate frontend-contract/ (OpenAPI, TypeScript types) and app/viewer/static
	scripts/openapi.sh
	scripts/build_viewer.sh

contract-check:  ## fail when frontend-contract/ or app/viewer/static is not what the app makes
	scripts/contract_check.sh

frontend:  ## the TypeScript helpers' tests
	cd frontend-contract && npm ci --no-audit --no-fund --silent && npm test

# The auth run repeats the SQLite run's inputs (same seed) with a token: 10 examples per operation
# reach every auth check (ignored_auth, missing_required_header) on every operation.
# The three runs at once (each on its own database and port; mostly waiting on the server), each
# one's output printed whole when all are done; fails when any failed.
fuzz:  ## schemathesis on every operation: SQLite, PostgreSQL (100 examples each), SQLite with auth (10)
	@logs="$$(mktemp -d)"; \
	  scripts/schemathesis.sh sqlite >"$$logs/1" 2>&1 & a=$$!; \
	  scripts/schemathesis.sh postgres >"$$logs/2" 2>&1 & b=$$!; \
	  scripts/schemathesis.sh sqlite auth 10 >"$$logs/3" 2>&1 & c=$$!; \
	  status=0; for p in $$a $$b $$c; do wait $$p || status=1; done; \
	  for n in 1 2 3; do echo "--- schemathesis run $$n of 3 (sqlite, postgres, sqlite with auth)"; \
	    cat "$$logs/$$n"; done; rm -rf "$$logs"; exit $$status

vllm:  ## the integration suite against a real vLLM server (CPU, tiny model), then the token bench
	scripts/vllm.sh setup
	@# One server for both (a start costs about a minute on 2 cores): the token bench needs a
	@# 16k context, and the suite reads the server's context where it matters.
	scripts/vllm.sh stop >/dev/null 2>&1 || true
	HIGHLIGHT_VLLM_MAX_MODEL_LEN=16384 scripts/vllm.sh start >/dev/null
	$(PY) -m pytest -m vllm tests/vllm; status=$$?; \
	  [ $$status -ne 0 ] || $(PY) bench/llm_tokens.py --base-url "$$(scripts/vllm.sh url)" --sizes 10; \
	  status=$$(( status || $$? )); scripts/vllm.sh stop >/dev/null; exit $$status

vllm-tokens:  ## decoded tokens per batch, positional vs verdict format, on a long-context vLLM (printed)
	scripts/vllm.sh stop >/dev/null 2>&1 || true
	HIGHLIGHT_VLLM_MAX_MODEL_LEN=16384 scripts/vllm.sh start 8012 >/dev/null
	$(PY) bench/llm_tokens.py --base-url "$$(scripts/vllm.sh url)" --sizes 10; \
	  status=$$?; scripts/vllm.sh stop >/dev/null; exit $$status

bench:  ## the benchmarks' tables (locator, OCR, selection, ...) and bench-gates' three gates
	scripts/bench.sh

bench-gates:  ## gates: every PDF ingests as expected; hostile inputs stay bounded; replicas lose nothing
	$(PY) bench/ingest_all.py
	$(PY) bench/hostile.py
	$(PY) bench/replicas_bench.py

lock:  ## requirements.lock (the image's exact packages) from pyproject.toml, with uv
	scripts/lock.sh
