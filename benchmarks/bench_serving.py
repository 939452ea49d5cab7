"""Benchmark the served LanceDB index on generated clustered vectors (a script, not a test).

Builds one table (write, then index training, then an incremental sync after 1% of rows change)
and compares exact and approximate search, unfiltered and with a selective access filter
(1% of rows readable) applied before the search (pre-filter) or after it (post-filter).

    .venv/bin/python benchmarks/bench_serving.py [--rows 100000 --dim 384 --queries 200]
"""

import argparse
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from rag_pipeline.lib.serving import AnnConfig, LanceStore, serving_eval, serving_rows

READER = "team-a"  # the selective reader's group; it may read FILTERED_SHARE of the rows
FILTERED_SHARE = 0.01


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray, spread: float) -> np.ndarray:
    """Points around random centres, like embeddings of texts on a few hundred topics."""
    picks = rng.integers(len(centres), size=n)
    noise = rng.normal(scale=spread / np.sqrt(centres.shape[1]), size=(n, centres.shape[1]))
    return unit(centres[picks] + noise)


def make_rows(rng: np.random.Generator, vectors: np.ndarray) -> pd.DataFrame:
    n = len(vectors)
    readable = rng.random(n) < FILTERED_SHARE
    return pd.DataFrame(
        {
            "chunk_id": [f"c{i:07d}" for i in range(n)],
            "note": [f"note-{i // 8}" for i in range(n)],
            "text": [f"chunk {i}" for i in range(n)],
            "heading_path": ["# bench"] * n,
            "commit": ["c0"] * n,
            "embedding_version": ["bench-v1"] * n,
            "access": [[READER] if r else ["staff"] for r in readable],
        }
    )


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--centres", type=int, default=300)
    parser.add_argument("--spread", type=float, default=0.9, help="noise norm around a centre")
    parser.add_argument("--index", default="ivf_pq", choices=["ivf_pq", "ivf_hnsw_sq"])
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 10], help="k=5 is the blocking check's")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    centres = unit(rng.normal(size=(args.centres, args.dim)))
    vectors = clustered(rng, args.rows, centres, args.spread)
    queries = clustered(rng, args.queries, centres, args.spread)
    frame = make_rows(rng, vectors)
    ann = AnnConfig(kind=args.index, min_rows=min(5000, args.rows))
    no_index = AnnConfig(kind=args.index, min_rows=args.rows + 1)

    with tempfile.TemporaryDirectory() as db_dir:
        store = LanceStore(Path(db_dir))
        rows = serving_rows(frame, vectors)
        write, t_write = timed(lambda: store.sync("bench", rows, no_index, timedelta(0)))
        built, t_index = timed(lambda: store.sync("bench", rows, ann, timedelta(0)))
        edited = frame.copy()
        changed = rng.random(args.rows) < 0.01
        edited.loc[changed, "commit"] = "c1"
        resync, t_resync = timed(
            lambda: store.sync("bench", serving_rows(edited, vectors), ann, timedelta(0))
        )
        # isotropic noise in many dims makes a cluster's points near-equidistant from a query:
        # the hard case for PQ, shown by how little the exact top-1 and top-k cosines differ
        cosines = -np.sort(-(queries @ vectors.T), axis=1)
        print(f"rows {args.rows:,}  dim {args.dim}  queries {args.queries}  centres {args.centres}")
        print(
            f"exact cosine of a query's top-1 {cosines[:, 0].mean():.3f}, top-{max(args.ks)} "
            f"{cosines[:, max(args.ks) - 1].mean():.3f}, median row {np.median(cosines, axis=1).mean():.3f}"
        )
        print(f"table write      {t_write:7.1f} s  (version {write['version']}, {write['rows']:,} rows)")
        print(f"index training   {t_index:7.1f} s  ({built['index_type']} {built['index_params']})")
        print(
            f"resync 1% edits  {t_resync:7.1f} s  (updated {resync['rows_updated']:,}, "
            f"versions kept {resync['versions_kept']}, {resync['disk_bytes'] / 2**20:.0f} MiB)"
        )

        table = store.open("bench")
        results = []
        for label, groups, prefilter in [
            ("none", None, True),
            ("1% pre", [READER], True),
            ("1% post", [READER], False),
        ]:
            frame_eval = serving_eval(
                table, "bench", queries, [groups] * len(queries), ks=args.ks, ann=ann, prefilter=prefilter
            )
            results.append(frame_eval.assign(filter=label))
        table_out = pd.concat(results)[
            [
                "index_type",
                "filter",
                "k",
                "recall_vs_exact",
                "underfilled",
                "latency_p50_ms",
                "latency_p95_ms",
            ]
        ]
        print("\nrecall_vs_exact: against numpy brute force over the readable rows")
        print(
            table_out.sort_values(["index_type", "filter", "k"]).to_string(index=False, float_format="%.3f")
        )


if __name__ == "__main__":
    main()
