# Short targets; `make run` and `make test` are the README's two set-up commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/data/dagster_home

.PHONY: install run holdout test test-fast dev lint bench screenshots services services-stop worker
install: $(VENV)/.installed
# the celery extra too (light: celery, redis, psycopg2), so `make worker` needs no second install
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,celery]'
	touch $@

# runs start as soon as they are launched: `make run` needs no daemon (`make dev` starts one anyway)
$(DAGSTER_HOME)/dagster.yaml:
	mkdir -p "$(DAGSTER_HOME)"
	printf 'run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n' > $@

run: install $(DAGSTER_HOME)/dagster.yaml  ## run the index_and_evaluate job on what is stale, then print the evaluation table
	@# exit 3: the release gate held the new index back; the reports are fresh, so they are shown
	@$(BIN)/python -m rag_pipeline.run; status=$$?; \
	if [ $$status -eq 0 ] || [ $$status -eq 3 ]; then $(BIN)/python -m rag_pipeline.show_report; fi; \
	exit $$status

# its own Dagster instance, so the held-out runs do not mix with the bundled corpus's lineage
holdout: install  ## the same pipeline on the held-out notes and questions (data/eval_sets/holdout)
	$(BIN)/python -m rag_pipeline.lib.sources.bundled_repo data/eval_sets/holdout/corpus data/build/holdout-repo
	mkdir -p data/build/holdout/dagster_home
	DAGSTER_HOME=$(CURDIR)/data/build/holdout/dagster_home RAG_NOTES_REPO=data/build/holdout-repo \
	  RAG_QUESTIONS=data/eval_sets/holdout/questions.json RAG_DATA_DIR=data/build/holdout \
	  $(BIN)/python -m rag_pipeline.run
	RAG_DATA_DIR=data/build/holdout $(BIN)/python -m rag_pipeline.show_report

test: install  ## the whole suite, slow end-to-end tests included
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m 'not slow'

dev: install  ## the Dagster UI on http://127.0.0.1:3000
	mkdir -p "$(DAGSTER_HOME)"
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

# the same DAGSTER_HOME as `make run`, so the pages show its materializations
screenshots: install  ## PNGs of the asset graph and the evaluation_summary page (needs chromium; make run first)
	$(BIN)/python scripts/screenshots.py --data-dir data/build --out data/build/screenshots

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
