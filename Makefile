# Race Lab. Every target installs what it needs into .venv first; nothing else is needed by hand.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# The first Python 3.11-3.13 with venv; Debian's own python3 first, so kernels run for any user.
PYTHON ?= $(shell for p in /usr/bin/python3 python3.11 python3.12 python3.13 python3; do \
  command -v $$p >/dev/null 2>&1 && $$p -c 'import sys, venv, ensurepip; \
  sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null && { command -v $$p; break; }; done)

export TF_CPP_MIN_LOG_LEVEL := 2
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help setup sandbox chromium postgresql demo test build lab instructor-lab tensorboard bench bench-lessons bench-grading bench-cluster worker hub lint clean

help:
	@echo "make demo   build the course and autograde the bundled demo class (prints scores)"
	@echo "make test   run the whole test suite"
	@echo "make lab    JupyterLab on notebooks/ (class mode: make lab EXCHANGE=DIR [STUDENT=id]; PORT=N)"
	@echo "make instructor-lab  JupyterLab with Formgrader on build/course (GRADEBOOK_URL=... for a server gradebook)"
	@echo "make tensorboard     TensorBoard (with the profiler) on lesson 06's traces"
	@echo "make build  regenerate notebooks/ from solutions/"
	@echo "make bench  harness benchmark: schedules and seconds to a verdict per subject"
	@echo "make bench-lessons   each lesson's run time and hidden tests' time against the budgets"
	@echo "make bench-grading   grading: racelab vs plain nbgrader, 1 vs 2 workers, repeatability"
	@echo "make bench-cluster   grading on a local Dask cluster vs local workers (ARGS=... for fewer)"
	@echo "make hub    JupyterHub for a class on this server (EXCHANGE=DIR PORT=8000 IP=... AUTH=dummy|shared-password|pam)"
	@echo "make worker SCHEDULER=ADDRESS  a Dask grading worker for racelab grade --cluster ADDRESS"
	@echo "make lint   ruff"

setup: $(STAMP) sandbox

$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ]; then \
	  echo "Race Lab needs Python 3.11-3.13 (3.11 recommended) with the venv module." >&2; \
	  echo "On Debian/Ubuntu: apt-get install python3 python3-venv; or set PYTHON=/path/to/python3.11" >&2; \
	  exit 1; fi
	@echo "Installing Race Lab into $(VENV) with $(PYTHON) ($$($(PYTHON) --version))"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[cluster,dev,gradebook,hub]'
	@touch $(STAMP)

# Grading kernels run inside bubblewrap (Debian package); installed here when missing.
SANDBOX := $(shell command -v bwrap 2>/dev/null)
sandbox:
ifeq ($(SANDBOX),)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing bubblewrap (the grading sandbox)"; \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null; \
	else echo "Grading needs bubblewrap: sudo apt-get install bubblewrap" >&2; exit 1; fi
endif

# The browser test drives Debian's chromium (never a downloaded browser); installed when missing.
CHROMIUM := $(shell command -v chromium 2>/dev/null)
chromium:
ifeq ($(CHROMIUM),)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing chromium (the browser the end-to-end test drives)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
	else echo "The browser test needs Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi
endif

# The gradebook, cluster and hub tests start their own PostgreSQL server from Debian's programs
# (never a system service: no main cluster is created); installed when missing.
POSTGRES := $(wildcard /usr/lib/postgresql/*/bin/postgres)
postgresql:
ifeq ($(POSTGRES),)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing PostgreSQL's server programs (the gradebook tests start their own server)"; \
	  mkdir -p /etc/postgresql-common; \
	  test -e /etc/postgresql-common/createcluster.conf || \
	    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    -o Dpkg::Options::=--force-confold --no-install-recommends postgresql) >/dev/null; \
	else echo "The gradebook tests need PostgreSQL: sudo apt-get install postgresql" >&2; exit 1; fi
endif

demo: $(STAMP) sandbox
	$(VENV)/bin/racelab demo

test: $(STAMP) sandbox chromium postgresql
	$(PY) -m pytest

build: $(STAMP)
	$(VENV)/bin/racelab build

lab: $(STAMP) sandbox
	$(PY) -m autograder.lab student $(if $(EXCHANGE),--exchange $(EXCHANGE)) $(if $(STUDENT),--student $(STUDENT)) $(if $(PORT),--port $(PORT))

instructor-lab: $(STAMP) sandbox
	$(PY) -m autograder.lab instructor $(if $(EXCHANGE),--exchange $(EXCHANGE)) $(if $(GRADEBOOK_URL),--gradebook-url '$(GRADEBOOK_URL)') $(if $(PORT),--port $(PORT))

TRACES ?= notebooks/logs
tensorboard: $(STAMP)
	$(VENV)/bin/tensorboard --logdir $(TRACES) --host 127.0.0.1

bench: $(STAMP)
	$(PY) benchmarks/harness_bench.py

bench-lessons: $(STAMP)
	$(PY) benchmarks/lesson_bench.py

bench-grading: $(STAMP) sandbox
	$(PY) benchmarks/grading_bench.py

bench-cluster: $(STAMP) sandbox
	$(PY) benchmarks/cluster_bench.py $(ARGS)

# A grading worker for `racelab grade --cluster ADDRESS`, on any machine with this repository,
# bubblewrap and user namespaces: one thread (each job is its own process; a worker lost mid-job
# costs only that job). The scheduler: DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0 dask scheduler
worker: $(STAMP) sandbox
	@if [ -z "$(SCHEDULER)" ]; then echo "usage: make worker SCHEDULER=tcp://HOST:8786" >&2; exit 1; fi
	$(VENV)/bin/dask worker $(SCHEDULER) --nthreads 1

# JupyterHub for a class on this server: each student's lab is `make lab` in class mode, with the
# hub user as student id. AUTH=shared-password reads the class password from RACELAB_HUB_PASSWORD.
hub: $(STAMP) sandbox
	$(PY) -m autograder.hub $(if $(EXCHANGE),--exchange $(EXCHANGE)) $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP)) $(if $(AUTH),--authenticator $(AUTH))

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf build .pytest_cache
