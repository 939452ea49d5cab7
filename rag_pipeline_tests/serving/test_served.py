"""The served-index check from work already done: retrieval's `dense` ranking as the exact truth, and
exact searches kept across table versions, both giving what brute force and fresh searches give."""

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from rag_pipeline.lib.retrieval import ChunkIndex, Queries, RetrievalSettings, make_analyzer, retrieve
from rag_pipeline.lib.serving import KeptResults, serving_eval, serving_rows, sync_table
from rag_pipeline.lib.serving.measure import exact_top_k
from rag_pipeline.lib.serving.served import Served, TableRows, still_served, truth_from_ranking
from rag_pipeline_tests.support.served import open_table

DIM = 8
NOW = timedelta(0)
GROUPS = [None, [], ["a"], ["a", "b"], ["c"], None, ["b"]]
ACCESS = [[], [], ["a"], ["b"], ["a", "c"], []]  # note i % 6 has these groups
MEASURED = ["latency_p50_ms", "latency_p95_ms"]


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def corpus(n_notes: int, per_note: int, tag: str, rng: np.random.Generator, directions: int) -> pd.DataFrame:
    """Chunks of `n_notes` notes; vectors drawn from `directions` fixed ones (0: all distinct), so
    equal scores are common."""
    rows = []
    for n in range(n_notes):
        for i in range(per_note):
            rows.append(
                {
                    "chunk_id": f"{rng.integers(10**9):09d}-{tag}-{n}-{i}",  # chunk_id order is not row order
                    "note": f"n{n}",
                    "start": i * 10,
                    "end": i * 10 + 10,
                    "n_chars": 10,
                    "heading_path": f"N{n}",
                    "parent_id": f"p{n}",
                    "parent_start": 0,
                    "parent_end": per_note * 10,
                    "text": f"text {i} of n{n}",
                    "commit": "c1",
                    "embedding_version": "e1",
                    "access": ACCESS[n % len(ACCESS)],
                }
            )
    return pd.DataFrame(rows)


def vectors_for(frame: pd.DataFrame, directions: int, jitter: float = 0.0) -> np.ndarray:
    """A chunk's vector follows from its id, so an unchanged chunk keeps it; `jitter` moves each
    off its direction by its own small offset (near-equal scores, no equal ones)."""
    out = []
    for chunk_id in frame["chunk_id"]:
        seed = int(chunk_id.split("-")[0])
        rng = np.random.default_rng(seed % directions if directions else seed)
        out.append(rng.normal(size=DIM) + jitter * np.random.default_rng(seed).normal(size=DIM))
    return unit(np.asarray(out))


def rankings(
    frame: pd.DataFrame, vectors: np.ndarray, queries: np.ndarray, depth: int, askers: list = GROUPS
) -> list:
    """The retrieval lane's `dense` ranking, as the lane computes it."""
    index = ChunkIndex(frame.reset_index(drop=True), vectors, make_analyzer("char"))
    ids = [f"q{i}" for i in range(len(queries))]
    groups = [None if g is None else tuple(g) for g in askers[: len(queries)]]
    settings = RetrievalSettings(candidate_k=depth, depth=depth, rerank_k=1, context_k=1)
    ranked = retrieve(index, ["dense"], Queries(ids, queries, ["q"] * len(ids), groups), settings)
    return [list(zip(g["chunk_id"], g["score"])) for _, g in ranked.groupby("question_id", sort=False)] + [
        [] for _ in range(len(ids) - ranked["question_id"].nunique())
    ]


def table_of(tmp_path, frame: pd.DataFrame, vectors: np.ndarray):
    sync_table(tmp_path, "t", serving_rows(frame, vectors), retain=NOW)
    return open_table(tmp_path, "t")


@pytest.mark.parametrize("directions", [0, 3])
@pytest.mark.parametrize("depth", [50, 12])
def test_the_dense_ranking_gives_the_brute_force_truth_ties_and_access_included(tmp_path, directions, depth):
    rng = np.random.default_rng(directions + depth)
    frame = corpus(12, 4, "v1", rng, directions).sample(frac=1, random_state=1)  # rows not in id order
    vectors = vectors_for(frame, directions)
    queries = vectors_for(frame.iloc[: len(GROUPS)], directions)
    table = table_of(tmp_path, frame, vectors)
    # an edit through a merge, so the table's row order is its own
    edited = pd.concat([frame[frame["note"] != "n2"], corpus(1, 5, "v2", rng, directions).assign(note="n2")])
    edited_vectors = vectors_for(edited, directions)
    table = table_of(tmp_path, edited, edited_vectors)
    rows = TableRows.read(table)
    want, n_readable = exact_top_k(table, queries, 10, GROUPS)
    assert list(rows.n_readable(GROUPS)) == list(n_readable)
    got = truth_from_ranking(rows, rankings(edited, edited_vectors, queries, depth), n_readable, 10)
    if depth == 50 or directions == 0:
        assert got == want  # every readable row ranked, or no equal scores at the cut
    else:
        assert got is None  # three directions: equal scores run past a cut ranking, brute force decides
    if directions:
        assert len({round(s, 6) for r in rankings(edited, edited_vectors, queries, 50) for _, s in r}) <= 6


def test_a_ranking_of_other_rows_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    frame = corpus(6, 3, "v1", rng, 0)
    vectors = vectors_for(frame, 0)
    table = table_of(tmp_path, frame, vectors)
    rows = TableRows.read(table)
    queries = vectors[:2]
    ranked = rankings(frame, vectors, queries, 50)
    n_readable = rows.n_readable(GROUPS[:2])
    assert truth_from_ranking(rows, ranked, n_readable, 10) is not None
    stranger = [[("nope", 1.0), *ranked[0][1:]], ranked[1]]
    assert truth_from_ranking(rows, stranger, n_readable, 10) is None
    assert truth_from_ranking(rows, [ranked[0][:3], ranked[1]], n_readable, 10) is None  # too short


@pytest.mark.parametrize(("directions", "jitter"), [(0, 0.0), (4, 0.0), (40, 3e-5)])
def test_kept_searches_give_what_fresh_searches_give_through_edits(tmp_path, directions, jitter):
    """Every version measured with kept searches equals a fresh measurement, and a small edit
    searches few questions again: near-equal scores only get their rows probed."""
    rng = np.random.default_rng(7)
    frame = corpus(100, 4, "v1", rng, directions)
    queries = vectors_for(frame.sample(len(GROUPS), random_state=2), directions)
    kept = KeptResults("stamp")
    searched = []
    for step in range(5):
        vectors = vectors_for(frame, directions, jitter)
        table = table_of(tmp_path, frame, vectors)
        ranked = rankings(frame, vectors, queries, 50)
        got = serving_eval(table, "s", queries, GROUPS, rankings=ranked, kept=kept)
        want = serving_eval(table, "s", queries, GROUPS)
        pd.testing.assert_frame_equal(
            got.drop(columns=MEASURED), want.drop(columns=MEASURED), obj=f"step {step}"
        )
        searched.append(kept.searched)
        # edit one note (new chunk ids), delete another, add one
        note = f"n{step}"
        frame = pd.concat(
            [
                frame[~frame["note"].isin([note, f"n{step + 10}"])],
                corpus(1, 3, f"e{step}", rng, directions).assign(note=note),
                corpus(1, 2, f"a{step}", rng, directions).assign(note=f"new{step}"),
            ]
        )
    assert searched[0] == len(GROUPS)
    if directions and not jitter:
        assert searched == [len(GROUPS)] * 5  # results of equal scores are always searched again
    else:
        assert sum(searched[1:]) < len(GROUPS) * 4


def test_kept_searches_survive_a_reload_and_a_removed_result_row_is_searched_again(tmp_path):
    rng = np.random.default_rng(3)
    frame = corpus(20, 4, "v1", rng, 0)
    vectors = vectors_for(frame, 0)
    queries = vectors[:3]  # each query is a row of the table: its own best hit
    groups = [None, None, None]
    table = table_of(tmp_path, frame, vectors)
    kept = KeptResults("stamp")
    serving_eval(
        table, "s", queries, groups, rankings=rankings(frame, vectors, queries, 50, groups), kept=kept
    )
    kept.save(tmp_path / "kept.parquet")
    assert KeptResults.load(tmp_path / "kept.parquet", "other").results == {}
    kept = KeptResults.load(tmp_path / "kept.parquet", "stamp")
    assert len(kept.results) == 3
    serving_eval(
        table, "s", queries, groups, rankings=rankings(frame, vectors, queries, 50, groups), kept=kept
    )
    assert kept.searched == 0  # nothing changed
    smaller = frame.iloc[1:]  # the first query's best hit is gone
    table = table_of(tmp_path, smaller, vectors[1:])
    got = serving_eval(
        table, "s", queries, groups, rankings=rankings(smaller, vectors[1:], queries, 50, groups), kept=kept
    )
    assert kept.searched >= 1
    assert (got["recall_vs_exact"] == 1.0).all()


def test_a_kept_search_against_other_vectors_under_the_same_ids_is_searched_again(tmp_path):
    rng = np.random.default_rng(5)
    frame = corpus(30, 4, "v1", rng, 0)
    vectors = vectors_for(frame, 0)
    queries = vectors[:4]
    groups = [None] * 4
    table = table_of(tmp_path, frame, vectors)
    kept = KeptResults("stamp")
    serving_eval(
        table, "s", queries, groups, rankings=rankings(frame, vectors, queries, 50, groups), kept=kept
    )
    # another passage embedder: the same chunk ids, other vectors, the same query vectors
    other = unit(np.random.default_rng(9).normal(size=vectors.shape))
    table = table_of(tmp_path, frame.assign(embedding_version="e2"), other)
    ranked = rankings(frame, other, queries, 50, groups)
    got = serving_eval(table, "s", queries, groups, rankings=ranked, kept=kept)
    assert kept.searched == 4
    want = serving_eval(table, "s", queries, groups)
    pd.testing.assert_frame_equal(got.drop(columns=MEASURED), want.drop(columns=MEASURED))


def test_a_probe_keeps_a_result_only_when_its_near_rows_rank_strictly_below():
    kept = Served(["a", "b"], [0.1, 0.2], 1.0)
    assert still_served(kept, ["c"], {"b": 0.2, "c": 0.2000001})
    assert not still_served(kept, ["c"], {"b": 0.2, "c": 0.2})  # equal: the layout decides
    assert not still_served(kept, ["c"], {"b": 0.2, "c": 0.19})
    assert not still_served(kept, ["c"], {"b": 0.2000001, "c": 0.3})  # the probe disagrees with the table
    assert not still_served(kept, ["c"], {"b": 0.2})  # a near row not probed
