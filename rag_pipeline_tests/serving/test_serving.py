"""The served LanceDB index: incremental syncs, access filtering, under-fill, cleanup, crash safety."""

from datetime import timedelta

import lancedb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rag_pipeline.lib.core import vector_column, write_table
from rag_pipeline.lib.embedding import LaneVectors
from rag_pipeline.lib.serving import (
    AnnConfig,
    LazyRows,
    search,
    serving_eval,
    serving_problems,
    serving_rows,
    sync_table,
    tables,
)
from rag_pipeline_tests.support.served import open_table

DIM = 16
NOW = timedelta(0)  # tests are the only reader: keep no old versions
TINY_ANN = AnnConfig(min_rows=256)  # PQ training wants at least 256 rows


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def chunks(notes: dict[str, list], per_note: int = 5, seed: int = 0, tag: str = "v1") -> pd.DataFrame:
    """`per_note` chunks for each note, with that note's access list; `tag` stands for the blob sha."""
    rows = [
        {
            "chunk_id": f"{note}:{tag}:{i}",
            "note": note,
            "text": f"text {i} of {note}",
            "heading_path": f"# {note}",
            "commit": "c1",
            "embedding_version": "e1",
            "access": list(access),
        }
        for note, access in notes.items()
        for i in range(per_note)
    ]
    return pd.DataFrame(rows)


def rows_of(frame: pd.DataFrame, seed: int = 0, dim: int = DIM) -> pa.Table:
    rng = np.random.default_rng(seed)
    return serving_rows(frame, unit(rng.normal(size=(len(frame), dim))))


def ids_in(db_dir, name: str = "fixed_1000") -> set[str]:
    return set(open_table(db_dir, name).read(["chunk_id"])["chunk_id"].to_pylist())


def test_counts_follow_the_input_through_build_edit_and_delete(tmp_path):
    notes = {f"n{i}": [] for i in range(20)}
    frame = chunks(notes)
    built = sync_table(tmp_path, "fixed_1000", rows_of(frame), retain=NOW)
    assert (built["rows"], built["rows_added"], built["index_type"]) == (100, 100, "exact")
    assert ids_in(tmp_path) == set(frame["chunk_id"])

    # n3's text changed: new blob sha, so new chunk_ids (three of them now)
    edited = pd.concat([frame[frame["note"] != "n3"], chunks({"n3": []}, per_note=3, tag="v2")])
    result = sync_table(tmp_path, "fixed_1000", rows_of(edited, seed=1), retain=NOW)
    assert (result["rows"], result["rows_added"], result["rows_removed"], result["rows_updated"]) == (
        98,
        3,
        5,
        0,
    )
    assert ids_in(tmp_path) == set(edited["chunk_id"])

    deleted = edited[edited["note"] != "n4"]
    result = sync_table(tmp_path, "fixed_1000", rows_of(deleted, seed=2), retain=NOW)
    assert (result["rows"], result["rows_removed"]) == (93, 5)
    assert ids_in(tmp_path) == set(deleted["chunk_id"])


def test_an_access_only_change_updates_rows_in_place_and_no_change_commits_nothing(tmp_path):
    frame = chunks({f"n{i}": [] for i in range(10)})
    first = sync_table(tmp_path, "section_split", rows_of(frame), retain=NOW)
    same = sync_table(tmp_path, "section_split", rows_of(frame), retain=NOW)
    assert same["version"] == first["version"] and same["rows_updated"] == 0

    changed = frame.copy()
    changed["access"] = [["hr"] if n == "n1" else [] for n in changed["note"]]
    changed.loc[changed["note"] == "n2", "commit"] = "c2"
    result = sync_table(tmp_path, "section_split", rows_of(changed), retain=NOW)
    assert (result["rows_added"], result["rows_removed"], result["rows_updated"]) == (0, 0, 10)
    stored = open_table(tmp_path, "section_split").read(["chunk_id", "access", "commit"])
    stored = stored.to_pandas().set_index("chunk_id")
    of = lambda note: changed.loc[changed["note"] == note, "chunk_id"]  # noqa: E731
    assert [list(a) for a in stored.loc[of("n1"), "access"]] == [["hr"]] * 5
    assert stored.loc[of("n2"), "commit"].tolist() == ["c2"] * 5


def access_notes(n_notes: int) -> dict[str, list]:
    """Public, single-group, two-group and one rare group's notes."""
    kinds = [[], ["hr"], ["eng"], ["hr", "eng"], ["legal"]]
    return {f"n{i}": kinds[i % len(kinds)] for i in range(n_notes)}


@pytest.mark.parametrize(
    "ann",
    [AnnConfig(min_rows=10_000), TINY_ANN, AnnConfig(kind="ivf_hnsw_sq", min_rows=256)],
    ids=["exact", "ivf_pq", "ivf_hnsw_sq"],
)
def test_a_filtered_search_never_returns_a_forbidden_row(tmp_path, ann):
    notes = access_notes(120)
    frame = chunks(notes)
    result = sync_table(tmp_path, "fixed_1000", rows_of(frame), ann=ann, retain=NOW)
    assert result["index_type"] == ("exact" if ann.min_rows > 600 else ann.kind)
    assert open_table(tmp_path, "fixed_1000").index_kind() == result["index_type"]
    access = dict(zip(frame["chunk_id"], frame["access"]))
    table = open_table(tmp_path, "fixed_1000")
    queries = unit(np.random.default_rng(9).normal(size=(10, DIM)))
    for groups in ([], ["hr"], ["eng", "nobody"], ["legal"], None):
        for prefilter in (True, False):
            for hits in search(table, queries, 20, groups, prefilter=prefilter, ann=ann):
                readable = [
                    not access[c] or groups is None or set(access[c]) & set(groups) for c in hits.chunk_ids
                ]
                assert all(readable), (groups, prefilter)
                assert hits.distances == sorted(hits.distances)


def test_post_filter_underfills_an_ann_search_and_pre_filter_fixes_it(tmp_path):
    notes = {f"n{i}": ["rare"] if i % 50 == 0 else ["staff"] for i in range(150)}  # 2% readable
    sync_table(tmp_path, "fixed_1000", rows_of(chunks(notes, per_note=4)), ann=TINY_ANN, retain=NOW)
    table = open_table(tmp_path, "fixed_1000")
    queries = unit(np.random.default_rng(3).normal(size=(20, DIM)))
    askers = [["rare"]] * 20

    post = serving_eval(table, "fixed-1000", queries, askers, ann=TINY_ANN, prefilter=False)
    assert set(post["index_type"]) == {"exact", "ivf_pq"}
    assert (post.loc[post["k"] == 10, "underfilled"] > 0).all()
    assert any("fewer than k" in p for p in serving_problems(post))

    pre = serving_eval(table, "fixed-1000", queries, askers, ann=TINY_ANN)
    assert (pre["underfilled"] == 0).all()
    assert (pre.loc[pre["index_type"] == "exact", "recall_vs_exact"] == 1).all()
    assert list(pre.columns) == [
        "strategy",
        "index_type",
        "k",
        "recall_vs_exact",
        "underfilled",
        "latency_p50_ms",
        "latency_p95_ms",
        "n_questions",
    ]


def test_serving_problems_name_low_recall_and_underfill():
    frame = pd.DataFrame(
        {
            "strategy": ["fixed-1000"] * 3,
            "index_type": ["ivf_pq"] * 3,
            "k": [1, 5, 10],
            "recall_vs_exact": [1.0, 0.9, 0.97],
            "underfilled": [0.0, 0.0, 0.05],
        }
    )
    problems = serving_problems(frame)
    assert len(problems) == 2
    assert "k=5" in problems[0] and "0.900" in problems[0] and "k=10" in problems[1]
    assert serving_problems(frame.assign(recall_vs_exact=1.0, underfilled=0.0)) == []


def test_old_versions_are_cleaned_up_and_the_directory_stays_bounded(tmp_path):
    notes = access_notes(80)
    sizes, kept = [], []
    for round_ in range(6):
        frame = chunks(notes, tag=f"v{round_ % 2}")  # every round replaces every chunk
        result = sync_table(tmp_path, "fixed_1000", rows_of(frame, seed=round_), ann=TINY_ANN, retain=NOW)
        sizes.append(result["disk_bytes"])
        kept.append(result["versions_kept"])
    assert max(kept) <= 2
    assert max(sizes[2:]) < 1.5 * sizes[1]


def test_the_index_is_dropped_when_the_table_shrinks_below_min_rows(tmp_path):
    notes = access_notes(80)
    assert (
        sync_table(tmp_path, "t", rows_of(chunks(notes)), ann=TINY_ANN, retain=NOW)["index_type"] == "ivf_pq"
    )
    small = chunks(dict(list(notes.items())[:10]))
    assert sync_table(tmp_path, "t", rows_of(small), ann=TINY_ANN, retain=NOW)["index_type"] == "exact"
    assert open_table(tmp_path, "t").lance.list_indices() == []


def test_a_sync_failing_half_way_leaves_the_previous_version_readable(tmp_path):
    frame = chunks({f"n{i}": [] for i in range(20)})
    before = sync_table(tmp_path, "fixed_1000", rows_of(frame), retain=NOW)

    new = chunks({f"m{i}": [] for i in range(30)})
    good = rows_of(new.iloc[:100])
    bad = serving_rows(new.iloc[100:], np.ones((50, DIM), np.float32))  # a batch of unnormalised vectors
    # raised inside LanceDB's merge, after the good batch went in: LanceDB re-raises it as RuntimeError
    with pytest.raises(RuntimeError, match=r"table fixed_1000: field 'vector' of chunk m20:v1:0"):
        sync_table(tmp_path, "fixed_1000", pa.concat_tables([good, bad]), retain=NOW)

    table = lancedb.connect(str(tmp_path)).open_table("fixed_1000")
    assert (table.version, table.count_rows()) == (before["version"], 100)
    assert ids_in(tmp_path) == set(frame["chunk_id"])


def test_a_new_embedding_dimension_replaces_the_table(tmp_path):
    frame = chunks({f"n{i}": [] for i in range(4)})
    sync_table(tmp_path, "t", rows_of(frame), retain=NOW)
    result = sync_table(tmp_path, "t", rows_of(frame.assign(embedding_version="e2"), dim=24), retain=NOW)
    assert (result["rows"], result["rows_added"], result["rows_removed"]) == (20, 20, 20)
    assert open_table(tmp_path, "t").lance.schema.field("vector").type.list_size == 24


def test_a_sync_repairs_a_table_holding_a_chunk_id_twice(tmp_path):
    frame = chunks({"n1": [], "n2": []})
    rows = rows_of(frame)
    sync_table(tmp_path, "fixed_1000", rows, retain=NOW)
    open_table(tmp_path, "fixed_1000").lance.add(rows.slice(0, 3))  # what two interleaved writers left
    assert open_table(tmp_path, "fixed_1000").count_rows() == len(frame) + 3
    result = sync_table(tmp_path, "fixed_1000", rows, retain=NOW)
    served = open_table(tmp_path, "fixed_1000").read(["chunk_id"])["chunk_id"].to_pylist()
    assert sorted(served) == sorted(frame["chunk_id"]) and result["ids_repaired"] == 3


def test_a_sync_from_lazy_rows_reads_only_the_vectors_it_writes(tmp_path):
    """An edit of one note among many writes that note's rows: the others' vectors are not read."""
    frame = chunks({f"n{i}": [] for i in range(40)}, per_note=5)
    path = tmp_path / "lane.parquet"
    matrix = unit(np.random.default_rng(0).normal(size=(len(frame), DIM)))
    write_table(pa.table({"vector": vector_column(matrix)}), path, row_group_size=20)
    sync_table(tmp_path / "db", "t", LazyRows(frame, LaneVectors([path], "vector", DIM)), retain=NOW)
    edited = frame.copy()
    edited.loc[edited["note"] == "n7", "commit"] = "c2"  # rows 35-39: one group of 20 rows
    edited = edited[edited["note"] != "n30"]  # deleted: its rows are not read either
    kept = matrix[edited.index.to_numpy()]
    write_table(pa.table({"vector": vector_column(kept)}), path, row_group_size=20)
    lazy = LaneVectors([path], "vector", DIM)
    result = sync_table(tmp_path / "db", "t", LazyRows(edited, lazy), retain=NOW)
    assert (result["rows_added"], result["rows_updated"], result["rows_removed"]) == (0, 5, 5)
    assert lazy.groups_read == 1
    table = open_table(tmp_path / "db", "t").lance.to_arrow()
    assert sorted(table["chunk_id"].to_pylist()) == sorted(edited["chunk_id"])
    assert set(table.filter(pa.compute.equal(table["note"], "n7"))["commit"].to_pylist()) == {"c2"}
    assert rows_equal(table, serving_rows(edited, kept))


def rows_equal(a: pa.Table, b: pa.Table) -> bool:
    order = lambda t: t.select(b.schema.names).sort_by("chunk_id")  # noqa: E731
    return order(a).equals(order(b).cast(order(a).schema))


def test_small_syncs_wait_for_compaction_and_results_stay_exact(tmp_path, monkeypatch):
    """A one-note edit adds a fragment rather than rewriting the table; compaction comes once small
    syncs have left COMPACT_FRAGMENTS of them, and searches see every row meanwhile."""
    monkeypatch.setattr(tables, "COMPACT_FRAGMENTS", 4)
    frame = chunks({f"n{i}": [] for i in range(40)}, per_note=5)
    sync_table(tmp_path, "t", rows_of(frame), retain=NOW)
    fragments, versions = [], []
    for round_ in range(1, 6):
        frame.loc[frame["note"] == f"n{round_}", "commit"] = f"c{round_ + 1}"
        rows = rows_of(frame)  # the same vectors: a commit alone changed
        result = sync_table(tmp_path, "t", rows, retain=NOW)
        assert result["rows_updated"] == 5
        table = open_table(tmp_path, "t")
        fragments.append(table.lance.stats()["fragment_stats"]["num_fragments"])
        versions.append(result["versions_kept"])
        assert rows_equal(table.lance.to_arrow(), rows)
        query = pa.compute.list_flatten(rows["vector"]).to_numpy()[:DIM]  # the first row's vector
        (hits,) = search(table, query, 1, None, exact=True)
        assert list(hits.chunk_ids) == [rows["chunk_id"][0].as_py()]
    assert fragments == [2, 3, 1, 2, 3]  # compacted when a sync left the fourth fragment
    assert versions[:2] == [2, 3] and versions[2] < versions[1]  # old versions went with it
