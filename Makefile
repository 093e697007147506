# Two commands do everything on a fresh machine:
#   make book   create .venv, install, execute every notebook at PROFILE (default cpu), build the book
#   make test   unit tests, nbval regression checks of the smoke references, a warning-free smoke build
# Both install from requirements/lock.txt (every package pinned, with hashes); `make lock` regenerates it.
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# An existing environment (e.g. VENV=$$CONDA_PREFIX after `conda env create -f environment.yml`) is used as it is.
VENV ?= .venv
BIN := $(VENV)/bin/
PIP ?= pip==26.3
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
LOCK := requirements/lock.txt
# `make lock`: the lock is made by uv for LOCK_PYTHON on Linux x86-64, with the torch of TORCH resolved from the
# CPU wheels in TORCH_WHEELS (a folder or page of wheels; default: pip's find-links) so that no CUDA package enters it.
UV ?= uv==0.13.9
LOCK_PYTHON ?= 3.11
TORCH_WHEELS ?= $(PIP_FIND_LINKS)
PROFILE ?= cpu
NBPARAMS ?=
# Notebooks run JOBS at a time (default: one per core), each training with THREADS threads. Every run uses
# THREADS threads whatever JOBS is, so a parallel build computes exactly what a serial one does.
NPROC := $(shell nproc 2>/dev/null || echo 2)
JOBS ?= $(NPROC)
THREADS ?= 1

# Offline corpora: ../shared/data when it exists (an explicit LMC_DATA_DIR wins).
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)/SHA256SUMS),)
export LMC_DATA_DIR ?= $(SHARED_DATA)
endif

# Counted FLOPs (lmcompanion.models.flops_per_token): one folder for every process, the unit tests' workers included
# (each has its own cache folder, tests/conftest.py), so that a write-up-sized model counted by a unit test is read,
# not counted again, by the notebooks' plans and appendices. A count depends only on the model's config and code and
# the torch version, which name its file.
export LMC_FLOPS_DIR ?= $(abspath $(or $(LMC_CACHE_DIR),.cache))/flops

NB_SRC := $(sort $(shell find notebooks -name '*.py' -not -path '*/.ipynb_checkpoints/*'))
NB_OUT := $(NB_SRC:.py=.ipynb)
PKG := $(shell find src -name '*.py') pyproject.toml
RECORDED := $(shell find book/recorded -name '*.json' 2>/dev/null)
RECORDED_STAMP := _build/.recorded
INSTALLED := $(VENV)/.installed
PROFILE_STAMP := _build/.profile
SMOKE_SRC := _build/smoke-src

# book/, notebooks/ and tests/ are folders too: without .PHONY make would think these targets are done.
.PHONY: help install lock book runs notebooks test test-slow tests lint unit nbval smoke-book page-check references slot-rehearsal clean clean-runs FORCE

help:
	@echo "make book [PROFILE=cpu|gpu|paper|smoke] [NBPARAMS='-p device cuda']  build the book (_build/html)"
	@echo "make runs [PROFILE=cpu]   train every run the book reads, JOBS processes at a time (make book does this first)"
	@echo "make test                 unit tests + nbval + warning-free smoke build (the slow tier apart)"
	@echo "make test-slow            the slow tier: process and signal tests, the GPU pack, offline paper plans, the slot rehearsal"
	@echo "make page-check [HTML=_build/html]  read a built book in headless Chromium at three widths (figures, tables, math, links)"
	@echo "make references           re-execute the nbval references (tests/nbval) at the smoke profile"
	@echo "make lock                 regenerate requirements/lock.txt from pyproject.toml (after changing a dependency)"
	@echo "make gpu-rehearsal        one training step of every model family under bf16 autocast and torch.compile on the CPU"
	@echo "make slot-rehearsal       a GPU slot on the CPU from a fresh clone, two lanes: cut off by its limit, restored, committed, continued"
	@echo "make clean | clean-runs   remove build products | the run store (runs/)"

# The lock first (exact versions, hash-checked, nothing else: --no-deps), then the pinned torch (its dependencies are
# in the lock, so on CPU only torch itself is installed), then this package without touching anything else;
# `tests/lock.py installed` fails unless every locked package is installed at exactly its locked version.
$(INSTALLED): $(LOCK) pyproject.toml
	test -x $(BIN)python || $(PYTHON) -m venv $(VENV)
	$(BIN)python -m pip install -q $(PIP)
	$(BIN)python -m pip install -q --no-deps --require-hashes -r $(LOCK)
	$(BIN)python -m pip install -q $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)python -m pip check
	$(BIN)python tests/lock.py installed
	touch $@

install: $(INSTALLED)

# Regenerate the lock after changing pyproject.toml's dependencies (a unit test fails until then); existing pins are
# kept where they still fit (add --upgrade via LOCK_ARGS=--upgrade to move everything to the newest versions).
LOCK_TOOL := _build/lock-tool/bin/uv
LOCK_ARGS ?=
$(LOCK_TOOL):
	$(PYTHON) -m venv _build/lock-tool
	_build/lock-tool/bin/python -m pip install -q $(UV)

lock: $(LOCK_TOOL)
	@test -n "$(TORCH_WHEELS)" || { echo "set TORCH_WHEELS to a folder holding the CPU wheel of $(TORCH)" >&2; exit 2; }
	mkdir -p _build/lock-tool && printf '%s\n' '$(TORCH)' > _build/lock-tool/torch.txt
	$(LOCK_TOOL) pip compile pyproject.toml --all-extras --python-version $(LOCK_PYTHON) \
	  --python-platform x86_64-manylinux_2_28 --generate-hashes --no-emit-package torch \
	  -c _build/lock-tool/torch.txt --find-links $(TORCH_WHEELS) $(LOCK_ARGS) \
	  --custom-compile-command 'make lock TORCH=$(TORCH) LOCK_PYTHON=$(LOCK_PYTHON)' -o $(LOCK)

# Re-execute the notebooks when the profile or the parameters change.
$(PROFILE_STAMP): FORCE
	@mkdir -p $(@D)
	@echo "$(PROFILE) $(NBPARAMS)" | cmp -s - $@ || echo "$(PROFILE) $(NBPARAMS)" > $@

# Recorded runs (book/recorded: made elsewhere, e.g. on a GPU) are imported into the run store first.
$(RECORDED_STAMP): $(RECORDED) | $(INSTALLED)
	@mkdir -p $(@D)
	$(BIN)python -m lmcompanion import-recorded
	@touch $@

notebooks/%.ipynb: notebooks/%.py $(PKG) $(PROFILE_STAMP) $(RECORDED_STAMP) | $(INSTALLED)
	OMP_NUM_THREADS=$(THREADS) $(BIN)python -m lmcompanion run-notebook $< -o $@ --profile $(PROFILE) $(NBPARAMS)

# A chapter's verdict notebook reads the runs of every other notebook of its chapter. When NBPARAMS is set, each
# notebook trains the runs it reads (below), so a verdict notebook starts after the others of its chapter: in a
# parallel build it then never holds a job slot waiting on their run locks. Otherwise `make book` has trained every
# run first, the notebooks only read them, and the verdict notebooks, the longest (side-by-side timings, counted
# FLOPs), start first, the hourglass chapter's (the longest) at the head: make starts jobs in the order listed, and
# a verdict notebook left to the end kept one core busy alone for most of a minute.
VERDICT_NB := $(filter %_verdicts.ipynb,$(NB_OUT))
ifeq ($(strip $(NBPARAMS)),)
NB_ORDER := $(filter notebooks/hourglass/%,$(VERDICT_NB)) $(filter-out notebooks/hourglass/%,$(VERDICT_NB)) \
  $(filter-out $(VERDICT_NB),$(NB_OUT))
else
$(foreach v,$(VERDICT_NB),$(eval $(v): $(filter-out $(v),$(filter $(dir $(v))%,$(NB_OUT)))))
NB_ORDER := $(NB_OUT)
endif

notebooks: $(NB_ORDER)

# Every run the notebooks read is trained first, TRAIN_JOBS processes at a time (THREADS threads each), in the plan's
# order: a core never waits on another notebook's run lock, and none idles while runs are left. Then the notebooks
# only read finished runs. Skipped when NBPARAMS changes what the notebooks plan (their seeds, steps, overrides):
# then each notebook trains what it reads, as before. One process at a time at the GPU profiles (one GPU).
TRAIN_JOBS ?= $(if $(filter gpu paper,$(PROFILE)),1,$(JOBS))

runs: $(INSTALLED) $(RECORDED_STAMP)
ifeq ($(strip $(NBPARAMS)),)
	$(BIN)python -m lmcompanion train-chapter all --profile $(PROFILE) --jobs $(TRAIN_JOBS) --threads $(THREADS) \
	  --no-progress
else
	@echo "NBPARAMS is set ($(NBPARAMS)): each notebook trains the runs it reads"
endif

# The source of a build, linked from the intro (the book carries the code that made it): the project's files as they
# are on disk (tracked or not, committed or not), without build products, run outputs or executed notebooks; written
# under a temporary name and renamed whole.
SOURCE_FILES := README.md docs LICENSE CITATION.cff CONTRIBUTING.md Makefile pyproject.toml environment.yml _config.yml \
  _toc.yml .ci requirements src notebooks book tests
define source-archive
	mkdir -p $(1) && tar -czf $(1)/.lmcompanion-source.tar.gz.tmp$$$$ --exclude=book/generated \
	  --exclude='notebooks/*.ipynb' --exclude=__pycache__ --exclude=.ipynb_checkpoints --exclude='*.egg-info' \
	  $(SOURCE_FILES) && mv $(1)/.lmcompanion-source.tar.gz.tmp$$$$ $(1)/lmcompanion-source.tar.gz
endef

book: $(INSTALLED)
	$(MAKE) runs
	$(MAKE) -j$(JOBS) notebooks
	$(BIN)python -m lmcompanion pages notebooks book/generated --sources notebooks
	$(call source-archive,book/generated)
	$(BIN)jupyter-book build . -W -n --keep-going
	@echo "Built the book at the $(PROFILE) profile: $(abspath _build/html/index.html)"

test: $(INSTALLED)
	$(MAKE) lint
	$(MAKE) unit
	$(MAKE) nbval
	$(MAKE) smoke-book

tests: test

# The formatter and the linter ([tool.ruff] in pyproject.toml), checking only: `ruff format` and `ruff check --fix`
# repair what they find. Then the chapters' declarations against _toc.yml and the intro's and README's tables.
lint: $(INSTALLED)
	$(BIN)ruff format --check --quiet
	$(BIN)ruff check --quiet
	$(BIN)python -m lmcompanion contents

# The unit tests run in JOBS worker processes (pytest-xdist; default one per core), THREADS threads each: their models
# are tiny, and run faster on one thread (much faster than two threads each on a busy machine); a test that compares
# thread counts sets them itself. Each worker has its own temporary folders, and so its own run store and cache
# (tests/conftest.py). worksteal: an idle worker takes tests queued for the other, so one slow test does not leave a
# core idle at the end.
unit: $(INSTALLED)
	OMP_NUM_THREADS=$(THREADS) $(BIN)python -m pytest -q tests -p no:cacheprovider --numprocesses $(JOBS) \
	  --dist worksteal --durations=15 -m "not slow"

# The slow tier (tests/conftest.py SLOW: each test 9 s or more on the 2-core build machine, about 730 of the unit
# tests' 1,000 CPU seconds), then the slot rehearsal over a fresh smoke run store (trained by the pool, as make nbval
# trains its own). CI runs it after make test (.ci/run).
test-slow: $(INSTALLED)
	OMP_NUM_THREADS=$(THREADS) $(BIN)python -m pytest -q tests -p no:cacheprovider --numprocesses $(JOBS) \
	  --dist worksteal --durations=15 -m slow
	runs=$$(mktemp -d) && export LMC_RUNS_DIR=$$runs LMC_PROGRESS=0 OMP_NUM_THREADS=$(THREADS) \
	  TORCHINDUCTOR_CACHE_DIR=$$runs-inductor && \
	  $(BIN)python -m lmcompanion train-chapter all --profile smoke --jobs $(JOBS) --threads $(THREADS) \
	    --no-progress && \
	  LMC_REHEARSAL_RUNS=$$runs $(BIN)python -m pytest -q -p no:cacheprovider tests/test_campaign.py -k rehearsal; \
	  status=$$?; rm -rf $$runs $$runs-inductor; exit $$status

# In a fresh run store, as `make book` does: every run the smoke notebooks read is trained first by the pool (JOBS
# processes, THREADS threads each; a run trained there is bit for bit the run a notebook trains), then the committed
# smoke references are re-executed JOBS at a time (pytest-xdist; --dist loadfile keeps each notebook's cells in one
# worker, in order, in one kernel), reading those runs, and their outputs compared (exactly, after the sanitizer
# removes decimal numbers and verdict words); then every number the runs recorded is compared with
# tests/nbval/runs.json within the tolerance of tests/regression.py. All run with THREADS threads, as the book's
# notebooks do and `make references` did, so the check does not depend on the machine's core count. Compiled
# kernels (here and in the rehearsal of make test-slow) go to a fresh Inductor cache: a shared one may hold kernels
# built for another instruction set (ATEN_CPU_CAPABILITY=avx2 on an AVX-512 machine read them and crashed).
# The verdict notebooks first: they take longest (benches, the appendix's counts), and started last they would leave
# one core idle at the end (--no-loadscope-reorder keeps this order; xdist would start the notebooks with most cells).
NBVAL_NB := $(sort $(wildcard tests/nbval/*/*.ipynb))
NBVAL_ORDER := $(filter %_verdicts.ipynb,$(NBVAL_NB)) $(filter-out %_verdicts.ipynb,$(NBVAL_NB))

nbval: $(INSTALLED)
	runs=$$(mktemp -d) && export LMC_RUNS_DIR=$$runs LMC_PROGRESS=0 OMP_NUM_THREADS=$(THREADS) \
	  TORCHINDUCTOR_CACHE_DIR=$$runs-inductor && \
	  $(BIN)python -m lmcompanion train-chapter all --profile smoke --jobs $(JOBS) --threads $(THREADS) \
	    --no-progress && \
	  $(BIN)python -m pytest -q -p no:cacheprovider --numprocesses $(JOBS) --dist loadfile \
	    --no-loadscope-reorder --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	    $(NBVAL_ORDER) && \
	  LMC_REGRESSION_RUNS=$$runs $(BIN)python -m pytest -q -p no:cacheprovider tests/check_runs.py; \
	  status=$$?; rm -rf $$runs $$runs-inductor; exit $$status

# The book rendered from the smoke references, with warnings as errors.
smoke-book: $(INSTALLED)
	rm -rf $(SMOKE_SRC) && mkdir -p $(SMOKE_SRC)
	cp _config.yml _toc.yml $(SMOKE_SRC)/ && cp -r book $(SMOKE_SRC)/book && cp -r tests/nbval $(SMOKE_SRC)/notebooks
	cd notebooks && find . -name '*.py' -exec cp --parents {} $(abspath $(SMOKE_SRC))/notebooks/ \;  # the .py downloads
	ln -s $(abspath src) $(SMOKE_SRC)/src   # pages include code from the package
	$(BIN)python -m lmcompanion pages $(SMOKE_SRC)/notebooks $(SMOKE_SRC)/book/generated --sources notebooks
	$(call source-archive,$(SMOKE_SRC)/book/generated)
	$(BIN)jupyter-book build $(SMOKE_SRC) -W -n --keep-going --path-output _build/smoke
	grep -q '_sources/notebooks/prologue/baseline.py' _build/smoke/_build/html/notebooks/prologue/baseline.html
	test -s _build/smoke/_build/html/_sources/notebooks/prologue/baseline.py   # the page's .py source, downloadable
	tar -tzf _build/smoke/_build/html/_downloads/*/lmcompanion-source.tar.gz src/lmcompanion/cli.py > /dev/null  # the intro's link

# A built book read as a reader sees it, in headless Chromium at a phone's, a laptop's and a wide window's width
# (tests/page_check.py): every figure shown at its file's aspect ratio, no table, code block or equation wider than
# the text column outside a visible scroll container (at the laptop and wide widths, no table that needs one), no
# raw TeX, every internal link resolving. HTML is the book's folder: _build/html (make book), or the smoke book,
# _build/smoke/_build/html (make smoke-book). Chromium and its driver come from Debian: apt-get install -y chromium
# chromium-driver. About a minute for the smoke book on two cores; not part of make test (CI installs no Chromium).
HTML ?= _build/html
PAGE_CHECK_ARGS ?= -q
page-check: $(INSTALLED)
	$(BIN)python tests/page_check.py $(HTML) $(PAGE_CHECK_ARGS)

# Every smoke notebook, re-executed in a fresh run store; then the numbers of every run it trained.
references: $(INSTALLED)
	runs=$$(mktemp -d) && export LMC_RUNS_DIR=$$runs LMC_PROGRESS=0 OMP_NUM_THREADS=$(THREADS) && \
	  for src in $(NB_SRC); do \
	    out=tests/nbval/$${src#notebooks/}; $(BIN)python -m lmcompanion run-notebook $$src -o $${out%.py}.ipynb \
	      --profile smoke || exit 1; \
	  done && $(BIN)python tests/regression.py dump $$runs tests/nbval/runs.json; \
	  status=$$?; rm -rf $$runs; exit $$status

# Before a GPU slot (docs/campaign.md): one training step of every model family under bf16 autocast, eagerly and
# under torch.compile, on the CPU, so that dtype and graph errors appear here. About 11 minutes on the 2-core build
# machine (Inductor compiles 15 models), so not part of `make test`.
gpu-rehearsal: $(INSTALLED)
	OMP_NUM_THREADS=$(THREADS) $(BIN)python -m pytest -q -p no:cacheprovider tests/gpu_rehearsal.py

# A GPU slot rehearsed on the CPU as it will run there (tests/slot_rehearsal.py): from a fresh clone of the last
# commit, the pack; slot 1 in another fresh clone with the carried pack only, its time limit firing in the middle of
# a run; its archive restored and committed here; slot 2 from that commit, its first run the one cut off;
# the next plan reading the measured minutes. A few minutes on two cores, so not part of `make test` (its fast part,
# the slots, the measured minutes and the restore, is in tests/test_campaign.py). Commit first: it clones HEAD.
slot-rehearsal: $(INSTALLED)
	OMP_NUM_THREADS=$(THREADS) $(BIN)python tests/slot_rehearsal.py

clean:
	rm -rf _build $(NB_OUT) book/generated

clean-runs:
	rm -rf runs
