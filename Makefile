# The README's two commands: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
# bench/port.py times the 198-hunk step on this commit's code beside this tree's, in the same
# run: main before issue 23's port work (PORT_AGAINST= leaves it out)
PORT_AGAINST ?= 3ac6171
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Python's bytecode cache is on for everything make runs, as after a `pip install`: with
# PYTHONDONTWRITEBYTECODE set (this machine's image sets it) pytest re-writes every test module's
# assertions in each of its processes (~9 s of CPU each) and every `sgpatch` the tests start
# compiles sgpatch from source. __pycache__ is git-ignored; results do not depend on it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install test test-fast lint pythons format demo bench dist clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)  ## venv with sgpatch (editable) and the test tools

# pytest-xdist workers: the suite is CPU-bound, one per core
TEST_WORKERS ?= 2
test: $(STAMP)  ## the whole suite, real-release tests included (wheels cached in ~/.cache/sgpatch)
	$(PY) -m pytest -n $(TEST_WORKERS) -v

test-fast: $(STAMP)  ## unit tests only
	$(PY) -m pytest -m "not real"

lint: $(STAMP)  ## ruff (style, format) and mypy (types, 0 errors on src/)
	$(PY) -m ruff check src tests bench tools noxfile.py
	$(PY) -m ruff format --check src tests bench tools noxfile.py
	$(PY) -m mypy

pythons: $(STAMP)  ## the unit suite on Python 3.10, 3.12 and 3.13 (nox; .ci/run runs it)
	$(VENV)/bin/nox

format: $(STAMP)
	$(PY) -m ruff format src tests bench tools
	$(PY) -m ruff check --fix src tests bench tools

demo: $(STAMP)  ## fetch a real SGLang release and apply kimi-eagle3-sm120 to it
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash examples/demo.sh

bench: $(STAMP)  ## accuracy (vs GNU patch / git) and speed (vs the stack's floor; AGAINST=REV adds REV's rows) -> docs/benchmarks.md
	$(PY) bench/port.py --out docs/benchmarks.md $(if $(PORT_AGAINST),--against $(PORT_AGAINST))  # first: its timed steps must not follow the others' removals (bench/port.py run_steps)
	$(PY) bench/accuracy.py --out docs/benchmarks.md
	$(PY) bench/suites.py --out docs/benchmarks.md  # GNU patch / git suites: only with $$SGPATCH_SUITE_GNU_PATCH / $$SGPATCH_SUITE_GIT
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/scale.py --out docs/benchmarks.md  # hunks per diff vs GNU patch
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) bench/speed.py --out docs/benchmarks.md $(if $(AGAINST),--against $(AGAINST))

dist: $(STAMP)  ## dist/sgpatch-<version>-py3-none-any.whl, what examples/Dockerfile installs
	$(PY) tools/dist.py --out dist

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache .mypy_cache .nox demo-tree
