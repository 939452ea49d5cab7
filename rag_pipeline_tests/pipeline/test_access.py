"""Access control end to end: every retriever filters before ranking, leaks and under-fill are
measured, unauthorized questions are counted apart, and an access-only commit re-embeds nothing."""

import json
import logging
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.chunking import chunk_note, fixed_strategy
from rag_pipeline.lib.core import may_read, readable_mask, readable_units
from rag_pipeline.lib.embedding import HashingEmbedder
from rag_pipeline.lib.evaluation import access_at
from rag_pipeline.lib.questions import QuestionsError, load_questions, with_access
from rag_pipeline.lib.retrieval import (
    RANKERS,
    ChunkIndex,
    HttpReranker,
    Queries,
    RetrievalSettings,
    make_analyzer,
    retrieve,
    retrieve_incremental,
)
from rag_pipeline.lib.sources import clean_note
from rag_pipeline_tests.fakes.reranker import FakeReranker
from rag_pipeline_tests.support.repos import QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import materialization_metadata, run_all

SECRET = "給与テーブルの暗号鍵は金庫の三段目にある"


def index_with_a_secret() -> ChunkIndex:
    """A secret chunk identical to the query in text and vector; the readable ones share nothing with it."""
    texts = [SECRET, f"{SECRET}の続き", "列指向の圧縮", "TCP の再送", "DNS の TTL", "git bisect"]
    n = len(texts)
    chunks = pd.DataFrame(
        {
            "chunk_id": [f"c{i}" for i in range(n)],
            "note": ["hr", "hr", "db", "net", "net", "git"],
            "start": [0, 40, 0, 0, 30, 0],
            "end": [40, 80, 20, 30, 60, 20],
            "n_chars": [40, 40, 20, 30, 30, 20],
            "heading_path": ["HR > 鍵", "HR > 鍵", "DB", "Net", "Net", "Git"],
            "parent_id": ["p-hr", "p-hr", "p-db", "p-net", "p-net", "p-git"],
            "parent_start": [0, 0, 0, 0, 0, 0],
            "parent_end": [80, 80, 20, 60, 60, 20],
            "text": texts,
            "access": [["hr"], ["hr"], [], [], ["ops"], []],
        }
    )
    vectors = np.eye(n, dtype=np.float32)
    vectors[1] = vectors[0]  # both secret chunks are the nearest neighbours of the query
    vectors[2:, 0] = 0.01  # the readable chunks score far lower
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return ChunkIndex(chunks, vectors, make_analyzer("char"), ctx_vectors=vectors)


ALL = [f"{r}{ctx}{parent}" for r in RANKERS for ctx in ("", "+ctx") for parent in ("", "+parent")]


@pytest.mark.parametrize("incremental", [False, True])
def test_no_retriever_passes_a_note_the_asker_may_not_read(tmp_path, incremental):
    with FakeReranker() as server:
        index = index_with_a_secret()
        settings = RetrievalSettings(candidate_k=5, depth=5, rerank_k=5, context_k=5)
        query = np.zeros((2, 6), np.float32)
        query[:, 0] = 1
        texts = [f"{SECRET} 列指向", SECRET]  # the outsider's query also shares a word with a readable chunk
        queries = Queries(["asker", "hr-member"], query, texts, [("ops",), ("hr",)])
        args = (index, [*ALL, "rrf+rerank"], queries, settings)
        options = {"reranker": HttpReranker(server.url)}
        if incremental:
            frame = retrieve_incremental(*args, cache_dir=tmp_path, version="v1", **options)
        else:
            frame = retrieve(*args, **options)
    outsider = frame[frame["question_id"] == "asker"]
    assert set(outsider["retriever"]) >= set(ALL) | {"rrf+rerank"}
    assert not outsider["note"].eq("hr").any(), outsider[outsider["note"] == "hr"]
    assert all(may_read(("ops",), a) for a in outsider["access"])
    # the filter comes before ranking: dense still fills k with readable units
    dense = outsider[outsider["retriever"] == "dense"]
    assert len(dense) == 4 and dense["chunk_id"].tolist()[0] != "c0"
    # +parent never passes the forbidden section
    assert not outsider.loc[outsider["retriever"].str.contains("parent"), "chunk_id"].eq("p-hr").any()
    # the member of hr gets the secret first
    member = frame[(frame["question_id"] == "hr-member") & (frame["retriever"] == "dense")]
    assert member["note"].iloc[0] == "hr"


def test_underfill_is_measured_against_the_readable_units():
    # question a: 3 readable units, all 3 returned (not under-filled at k=5);
    # question b: 10 readable, 2 returned (a post-filter would do this): under-filled
    outcomes = pd.DataFrame(
        {"leak_ranks": [[], [4]], "n_returned": [3, 2], "n_readable": [3, 10], "category": ["x", "x"]}
    )
    assert access_at(outcomes, 5) == {"leaked_units": 1, "underfilled": 0.5}
    assert access_at(outcomes, 3) == {"leaked_units": 0, "underfilled": 0.5}
    assert access_at(outcomes, 1) == {"leaked_units": 0, "underfilled": 0.0}


def test_the_access_rule():
    assert may_read(None, ["hr"]) and may_read(["ops"], []) and may_read(["ops", "hr"], ["hr"])
    assert not may_read(["ops"], ["hr"]) and not may_read([], ["hr"])
    assert readable_mask([["hr"], [], ["ops"]], ("ops",)).tolist() == [False, True, True]


def test_an_unknown_group_names_the_question(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([QUESTIONS[0] | {"groups": ["hr"]}], ensure_ascii=False))
    with pytest.raises(QuestionsError, match=r"question 1: unknown group\(s\) 'hr'"):
        with_access(load_questions(path), {"deadlock": ["sre"]}, str(path))
    marked = with_access(load_questions(path), {"deadlock": ["sre"], "x": ["hr"]}, str(path))
    assert marked[0].category == "unauthorized" and not marked[0].answerable


def test_unauthorized_questions_are_counted_and_nothing_leaks(notes_repo, small_env, tmp_path):
    commit_files(
        notes_repo,
        {
            "content/notes/db/deadlock/index.md": Path(
                notes_repo.working_tree_dir, "content/notes/db/deadlock/index.md"
            )
            .read_text()
            .replace('title: "Deadlock"', 'title: "Deadlock"\naccess: [dba]')
        },
        "deadlock: dba only",
    )
    questions = [
        *QUESTIONS,
        QUESTIONS[0] | {"id": 9, "groups": ["web"]},
        QUESTIONS[2] | {"id": 10, "groups": ["dba"]},
        # a leak test that quotes the note it must not reach: kept, and named in a warning
        {"id": 11, "q": "互いのロックを待ち続けて進めなくなるのは?", "slug": None, "groups": ["web"]},
    ]
    # "web" owns no note yet: give it one so the group is known
    commit_files(
        notes_repo,
        {
            "content/notes/web/cdn/index.md": "---\ntitle: CDN\naccess: web\n---\nCDN はエッジでキャッシュする。\n"
        },
        "a web note",
    )
    (tmp_path / "q.json").write_text(json.dumps(questions, ensure_ascii=False))
    env = small_env | {"RAG_QUESTIONS": str(tmp_path / "q.json"), "RAG_RETRIEVERS": "dense,bm25,rrf+parent"}
    instance = dg.DagsterInstance.ephemeral()
    result = run_all(env, instance=instance)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    # 9 shares "PostgreSQL は" with the note, 11 a whole clause
    source = tmp_path / "q.json"
    warnings = [
        f"{source}: question {q} shares {n} characters with note 'deadlock', which its asker (groups web) "
        "may not read; word it from what its asker may read"
        for q, n in ((9, 11), (11, 18))
    ]
    listed = materialization_metadata(result, "questions")["quoting_restricted"]
    assert listed == "\n".join(f"- {w}" for w in warnings)
    logged = instance.all_logs(result.run_id)
    assert [
        e.user_message for e in logged if e.level == logging.WARNING and "characters" in e.user_message
    ] == (warnings)
    summary = pq.read_table(tmp_path / "out" / "reports" / "evaluation_summary.parquet").to_pandas()
    assert (summary["n_unauthorized"] == 1).all() and (summary["leaked_units"] == 0).all()
    chunks = pq.read_table(tmp_path / "out" / "chunks" / "section.parquet").to_pandas()
    assert all(list(a) == ["dba"] for a in chunks.loc[chunks["note"] == "deadlock", "access"])
    ranks = pq.read_table(tmp_path / "out" / "retrieval" / "section.parquet").to_pandas()
    assert not ranks.loc[ranks["question_id"] == "9", "note"].isin(["deadlock"]).any()
    # the oracle passes only gold sections the asker may read: none to the unauthorized asker
    answers = pq.read_table(tmp_path / "out" / "answers" / "answers.parquet").to_pandas()
    oracle = answers[(answers["retriever"] == "oracle") & (answers["question_id"] == "9")].iloc[0]
    assert oracle["abstained"] and len(oracle["cited"]) == 0


def test_an_access_only_commit_re_embeds_nothing(notes_repo, small_env):
    env = small_env | {"RAG_RETRIEVERS": "dense"}
    assert run_all(env).success
    path = Path(notes_repo.working_tree_dir, "content/notes/net/tcp-handshake/index.md")
    text = path.read_text().replace('title: "TCP handshake"', 'title: "TCP handshake"\naccess: [net]')
    commit_files(notes_repo, {"content/notes/net/tcp-handshake/index.md": text}, "tcp: net only")
    result = run_all(env)
    embedded = [
        materialization_metadata(result, f"embeddings_{s}")["texts_embedded"]
        for s in ("fixed_200", "fixed_500", "fixed_1000", "fixed_2000", "section", "section_split")
    ]
    assert embedded == [0] * 6
    assert materialization_metadata(result, "cleaned_notes")["notes_changed"] == 1


def test_parent_units_count_no_parent_lying_inside_another():
    chunks = pd.DataFrame(
        {
            "note": ["a", "a", "a", "a", "a", "a", "b", "c"],
            "parent_id": ["a0-100", "a0-50", "a50-100", "a0-100", "a100-200", "a150-250", "b0-50", "c0-9"],
            "parent_start": [0, 0, 50, 0, 100, 150, 0, 0],
            "parent_end": [100, 50, 100, 100, 200, 250, 50, 9],
            "access": [[], [], [], [], [], [], [], ["hr"]],
        }
    )
    retrieval = pd.DataFrame(
        {"question_id": ["q", "q", "hr"], "retriever": ["rrf+parent", "rrf", "dense+parent"]}
    )
    # a: [0,100] holds [0,50] and [50,100] (and is there twice); [100,200] and [150,250] only overlap
    assert readable_units(retrieval, chunks, {"q": ("ops",), "hr": ("hr",)}) == [3 + 1, 7, 3 + 1 + 1]


def test_parent_retrieval_that_returned_every_readable_unit_is_not_underfilled():
    """Fixed-size chunks cross headings, so their parents nest; +parent passes each section once."""
    body = "".join(f"### Section {i}\n" + f"本文 {i} の内容です。" * 18 + "\n\n" for i in range(6))
    note = clean_note(body, "Nested")
    rows = chunk_note(
        fixed_strategy("fixed-90", 90),
        note="nested",
        source_version="v1",
        commit="c1",
        cleaner_version="clean-v1",
        text=note.text,
        sections=note.sections,
    )
    chunks = pd.DataFrame(rows).assign(access=[[] for _ in rows])
    embedder = HashingEmbedder()
    vectors = embedder.embed(chunks["text"].tolist(), "passage")
    index = ChunkIndex(chunks, vectors, make_analyzer("char"), ctx_vectors=vectors)
    settings = RetrievalSettings(candidate_k=50, depth=50, rerank_k=5, context_k=5)
    query = embedder.embed(["本文 3 の内容"], "query")
    frame = retrieve(index, ["dense+parent"], Queries(["q"], query, ["本文 3 の内容"], [("ops",)]), settings)
    frame = frame[frame["retriever"] == "dense+parent"]
    assert len(chunks) < settings.depth  # every readable chunk was ranked: nothing more to pass
    assert chunks["parent_id"].nunique() > len(frame)  # nested parents: more ids than units passable
    frame["n_readable"] = readable_units(frame, chunks, {"q": ("ops",)})
    outcomes = pd.DataFrame(
        {"leak_ranks": [[]], "n_returned": [len(frame)], "n_readable": [frame["n_readable"].iloc[0]]}
    )
    assert all(access_at(outcomes, k)["underfilled"] == 0 for k in range(1, 11))
