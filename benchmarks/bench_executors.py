"""A cold build of N generated notes under each executor (a script, not a test): in one process, and
on dagster-celery with 1 and 2 workers (Redis and Postgres on 127.0.0.1, started as `make services`
starts them, on free ports). Prints the wall time of the run (the workers are started before it) and
the share of the lane steps' time during which another lane step ran too.

Each build gets a fresh data directory and runs in a fresh process (Dagster keeps a reconstructed
job per process); the Celery builds share one Postgres instance, as a cluster does.

    .venv/bin/python benchmarks/bench_executors.py [--notes 2000] [--executors in_process,celery:1,celery:2]

With `--shards 1,4`, each executor builds one strategy (`section`, dense retrieval) under each
RAG_SHARDS, embedding through an OpenAI-compatible stand-in on 127.0.0.1 that takes `--delay`
seconds a request (one request at a time per step, batches of 8), and the table adds the most
passage requests the server had in flight at once:

    .venv/bin/python benchmarks/bench_executors.py --notes 500 --executors celery:1,celery:2 --shards 1,4
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import dagster as dg
import pandas as pd
from bench_incremental import make_repo

from rag_pipeline.definitions import reconstructable_job
from rag_pipeline.settings import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT))  # the tests' support: the services and the step timeline
from rag_pipeline_tests.fakes.openai_embed import FakeOpenAIEmbeddings, most_at_once, openai_env
from rag_pipeline_tests.support.services import missing, services, workers
from rag_pipeline_tests.support.steps import side_by_side, step_spans


def cold_build() -> dict:
    """The job once, in this process, as the environment describes it."""
    with dg.DagsterInstance.get() as instance:
        started = time.perf_counter()
        result = dg.execute_job(dg.reconstructable(reconstructable_job), instance=instance)
        seconds = time.perf_counter() - started
        assert result.success, "the run failed"
        spans = step_spans(instance, result.run_id)
    return {
        "seconds": seconds,
        "side_by_side": side_by_side(spans),
        "steps": len(spans),
        "workers": len({s.worker for s in spans if s.worker}),
    }


def build(env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--one"],
        env=os.environ | env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=1500, help="approximate characters per note")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--executors", default="in_process,celery:1,celery:2")
    parser.add_argument("--shards", default="", help="comma-separated RAG_SHARDS to build one strategy under")
    parser.add_argument(
        "--delay", type=float, default=1.0, help="with --shards: seconds per embedding request"
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(cold_build()))
        return
    executors = args.executors.split(",")
    if any(e.startswith("celery") for e in executors) and missing():
        sys.exit(f"bench_executors: {missing()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, args.notes, args.chars)
        env = {
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_EMBEDDER": args.embedder,
            # word salad: its vectors nearly tie, so the served tables are searched exactly
            "RAG_ANN_MIN_ROWS": str(10**8),
        }
        shards = [int(n) for n in args.shards.split(",") if n]
        server = FakeOpenAIEmbeddings(delay=args.delay) if shards else nullcontext()
        if shards:
            env |= {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense", "RAG_EMBED_BATCH_SIZE": "8"}
            print(
                f"one strategy (section) of {args.notes} generated notes, a server taking {args.delay} s a request"
            )
        else:
            print(
                f"cold build of {args.notes} generated notes (~{args.chars} chars), embedder {args.embedder}"
            )
        print(
            f"{'executor':16s} {'shards':>6s} {'wall s':>8s} {'steps':>6s} {'workers':>8s}"
            f" {'lane time side by side':>24s} {'most in flight':>15s}"
        )
        celery = any(e.startswith("celery") for e in executors)
        with services() if celery else nullcontext({}) as cluster, server:
            for executor in executors:
                for n in shards or [1]:
                    name, _, count = executor.partition(":")
                    label = f"{executor.replace(':', '-')}-{n}"
                    run_env = env | {
                        "RAG_EXECUTOR": name,
                        "RAG_DATA_DIR": str(root / label),
                        "RAG_SHARDS": str(n),
                    }
                    if shards:
                        run_env |= openai_env(server)
                        server.spans.clear()
                    if name == "celery":
                        run_env |= cluster
                    else:  # an instance of its own, on this machine's disk
                        run_env["DAGSTER_HOME"] = str(root / f"home-{label}")
                        Path(run_env["DAGSTER_HOME"]).mkdir()
                    names = [f"bench{i}" for i in range(int(count or 0))]
                    with workers(names, run_env, root / "logs") if names else nullcontext():
                        figures = build(run_env)
                    if shards:  # the passages' requests, not the questions'
                        passages = set(pd.read_parquet(root / label / "chunks" / "section.parquet")["text"])
                        most = f"{most_at_once(server.spans, passages):15d}"
                    else:
                        most = f"{'-':>15s}"
                    print(
                        f"{executor:16s} {n:6d} {figures['seconds']:8.1f} {figures['steps']:6d}"
                        f" {figures['workers']:8d} {figures['side_by_side']:24.2f} {most}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
