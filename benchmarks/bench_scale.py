"""Benchmark the steps at scale, each on its own (a script, not a test).

Builds a git repository of N generated notes (default 30,000; bench_incremental's generator) and
materializes the whole graph cold, one asset per process of its own in the graph's order, with
`RAG_SHARDS` shards (default 4) and the hashing embedder, so that each step's wall time and peak
resident memory are its own. Prints one row per step: its time, the process's peak RSS (and that of
a process that builds the definitions and runs nothing, the floor under every step), and whether its
work is split over the shards or is one step over every note (`source_notes`, `cleaned_notes`) or a
whole lane (a lane's joined chunks, its vectors, retrieval, its served index); then the largest of
each.

    .venv/bin/python benchmarks/bench_scale.py [--notes 30000] [--shards 4] [--strategies fixed-500,section]
"""

import argparse
import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path

import dagster as dg
from bench_incremental import QUIET, make_repo

from rag_pipeline.definitions import JOB, build_definitions
from rag_pipeline.settings import Settings


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux


def step(env: dict, key: str | None, out) -> None:
    """Materialize the asset `key` (None: nothing, the floor) in this fresh process."""
    os.environ.update(env)
    defs = build_definitions(Settings.from_env(env))
    seconds = 0.0
    if key is not None:
        with dg.DagsterInstance.get() as instance:
            started = time.perf_counter()
            result = defs.resolve_job_def(JOB).execute_in_process(
                instance=instance, asset_selection=[dg.AssetKey(key)], run_config=QUIET, raise_on_error=False
            )
            seconds = time.perf_counter() - started
            assert result.success, key
    out.put((seconds, peak_rss_gb()))


def measured(env: dict, key: str | None) -> tuple[float, float]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=step, args=(env, key, out))
    child.start()
    figures = out.get()
    child.join()
    assert child.exitcode == 0, key
    return figures


def kind(key: str, strategy: str | None) -> str:
    """`shard` for a step of the split work, `corpus` for one over every note, `lane` for a whole
    lane's (an asset of one `strategy`), `summary` for one over every lane's results."""
    if "_shard_" in key:
        return "shard"
    if key in ("source_notes", "cleaned_notes", "questions"):
        return "corpus"
    return "lane" if strategy else "summary"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=30000)
    parser.add_argument("--chars", type=int, default=1500, help="approximate characters per note")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--strategies", default="fixed-500,section")
    parser.add_argument("--retrievers", default="dense,bm25,rrf")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        make_repo(root, args.notes, args.chars)
        print(f"{args.notes} notes generated in {time.perf_counter() - started:.0f} s", flush=True)
        (root / "dagster_home").mkdir()
        (root / "dagster_home" / "dagster.yaml").write_text("")  # the default instance, said so
        env = {
            "DAGSTER_HOME": str(root / "dagster_home"),
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_DATA_DIR": str(root / "out"),
            "RAG_EMBEDDER": "hashing",
            "RAG_SHARDS": str(args.shards),
            "RAG_STRATEGIES": args.strategies,
            "RAG_RETRIEVERS": args.retrievers,
            "RAG_ANN_MIN_ROWS": str(10**8),  # word salad: searched exactly (see bench_incremental)
            "RAG_RETRY_AFTER": "0",
        }
        graph = build_definitions(Settings.from_env(env)).resolve_asset_graph()
        keys = [k for k in graph.toposorted_asset_keys if graph.get(k).is_materializable]
        _, floor = measured(env, None)
        print(f"floor (definitions built, nothing run): {floor:.2f} GB peak RSS", flush=True)
        print(f"{'step':<34} {'kind':<8} {'s':>8} {'peak GB':>8}", flush=True)
        rows = []
        for asset in keys:
            key = asset.to_user_string()
            seconds, gb = measured(env, key)
            rows.append((key, kind(key, graph.get(asset).metadata.get("strategy")), seconds, gb))
            print(f"{key:<34} {rows[-1][1]:<8} {seconds:>8.1f} {gb:>8.2f}", flush=True)
    print(f"\n{args.notes} notes, {args.shards} shards, strategies {args.strategies}: largest per kind")
    for name in ("corpus", "lane", "shard", "summary"):
        of = [r for r in rows if r[1] == name]
        if of:
            slowest, biggest = max(of, key=lambda r: r[2]), max(of, key=lambda r: r[3])
            print(
                f"  {name:<8} slowest {slowest[0]} {slowest[2]:.1f} s; "
                f"most memory {biggest[0]} {biggest[3]:.2f} GB; {sum(r[2] for r in of):.0f} s in all"
            )


if __name__ == "__main__":
    main()
