"""RAG_SHARDS: each strategy's notes chunked and embedded in N steps that the executor runs side by
side, and the notes cleaned in N steps. On the bundled corpus through an embedding server that
takes 1 s a request of several texts (a protocol stand-in on 127.0.0.1, fakes/openai_embed.py), one
request at a time per step, under the multiprocess executor: 4 shards have several passage requests
in flight at once, 1 shard never more than one; both builds give the same reports, cleaned notes
and chunks files and data versions, and after a one-note commit the sharded build embeds only that
note's new texts."""

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.definitions import reconstructable_job
from rag_pipeline.defs.platform.internals.reads import latest_data_version
from rag_pipeline.lib.core import note_buckets
from rag_pipeline.lib.sources import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS
from rag_pipeline_tests.fakes.openai_embed import FakeOpenAIEmbeddings, most_at_once, openai_env
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import (
    assert_same_reports,
    done_and_reused,
    forget_reconstructed_jobs,
    materialization_metadata,
    run_all,
)

NOTE = "content/notes/caching/cache-stampede/index.md"
JOINED = ["cleaned_notes", "chunks_section"]  # one step, or a step per shard and one that joins them
ADDED = "\n\n## 追記\n\nロックの期限が切れると、待っていた全員が一度にオリジンへ向かいます。\n"


def build(monkeypatch, env: dict[str, str], instance: dg.DagsterInstance):
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # each step's process builds the job from the environment
    forget_reconstructed_jobs()  # and so does this one, under these settings
    result = dg.execute_job(dg.reconstructable(reconstructable_job), instance=instance)
    assert result.success
    return result


@pytest.mark.slow
def test_shards_embed_side_by_side_and_give_the_reports_of_one_step(tmp_path, monkeypatch):
    repo = build_repository(BUNDLED_CORPUS, tmp_path / "notes")
    env = {
        "RAG_NOTES_REPO": str(tmp_path / "notes"),
        "RAG_STRATEGIES": "section",
        "RAG_RETRIEVERS": "dense",
        "RAG_EXECUTOR": "multiprocess",
        "RAG_EMBED_CONCURRENCY": "1",
        "RAG_EMBED_BATCH_SIZE": "8",
    }
    (tmp_path / "home").mkdir()
    with (
        dg.DagsterInstance.local_temp(str(tmp_path / "home")) as instance,
        # one URL: the server is part of the vectors' lineage; passages are sent in batches, and a
        # question embedded alone (`costs` times each) is not slowed
        FakeOpenAIEmbeddings(delay=1.0, least=2) as server,
    ):
        most, versions = {}, {}
        for shards in (1, 4):
            data = tmp_path / f"shards-{shards}"
            server.spans.clear()
            build(
                monkeypatch,
                env | openai_env(server) | {"RAG_SHARDS": str(shards), "RAG_DATA_DIR": str(data)},
                instance,
            )
            passages = set(pd.read_parquet(data / "chunks" / "section.parquet")["text"])
            most[shards] = most_at_once(server.spans, passages)
            versions[shards] = {k: latest_data_version(instance, dg.AssetKey(k)) for k in JOINED}
        assert most[1] == 1 and most[4] >= 2, most
        # the files the shards' steps are joined into: the rows and data versions one step gives
        assert versions[4] == versions[1], versions
        for joined in ("notes/cleaned_notes.parquet", "chunks/section.parquet"):
            pd.testing.assert_frame_equal(
                pd.read_parquet(tmp_path / "shards-4" / joined),
                pd.read_parquet(tmp_path / "shards-1" / joined),
            )
        assert_same_reports(tmp_path / "shards-4" / "reports", tmp_path / "shards-1" / "reports")
        for name in ("evaluation_summary", "question_ranks"):
            pd.testing.assert_frame_equal(
                pd.read_parquet(tmp_path / "shards-4" / "reports" / f"{name}.parquet"),
                pd.read_parquet(tmp_path / "shards-1" / "reports" / f"{name}.parquet"),
            )

        text = (tmp_path / "notes" / NOTE).read_text(encoding="utf-8")
        commit_files(repo, {NOTE: text + ADDED}, "a one-note edit")
        server.delay, server.texts = 0.0, []
        env4 = env | openai_env(server) | {"RAG_SHARDS": "4", "RAG_DATA_DIR": str(tmp_path / "shards-4")}
        done, reused = done_and_reused(build(monkeypatch, env4, instance))
        chunks = pd.read_parquet(tmp_path / "shards-4" / "chunks" / "section.parquet")
    # the passages sent are new texts of the edited note (the questions' vectors are all kept)
    edited = chunks[chunks["note"] == "cache-stampede"]
    sent = [text for text in server.texts if text != "probe"]  # each step's process asks its identity
    assert sent and set(sent) <= set(edited["text"]), server.texts
    (shard,) = set(note_buckets(edited["note"].tolist(), 4).tolist())
    others = {f"embeddings_section_shard_{k}" for k in range(4) if k != shard}
    assert f"embeddings_section_shard_{shard}" in done and others <= reused, (done, reused)


def test_a_shard_made_in_another_data_directory_is_embedded_again_by_its_own_step(small_env, tmp_path):
    """One instance, two data directories (a cluster's shared Postgres, RAG_DATA_DIR changed): the
    shards' vectors are in the first directory's store, so in the second each shard's step embeds
    its own texts, side by side, rather than leaving every text to the lane's one step."""
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense", "RAG_SHARDS": "2"}
    instance = dg.DagsterInstance.ephemeral()
    for data in ("first", "second"):
        result = run_all(env | {"RAG_DATA_DIR": str(tmp_path / data)}, instance=instance)
        shards = [materialization_metadata(result, f"embeddings_section_shard_{k}") for k in range(2)]
        assert all("reused" not in m for m in shards), shards
        assert sum(m["texts_embedded"] for m in shards) > 0
        assert materialization_metadata(result, "embeddings_section")["texts_embedded"] == 0
