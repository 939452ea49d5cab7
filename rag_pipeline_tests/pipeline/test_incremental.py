"""Only what changed is recomputed, shown on the bundled two-commit repository."""

import json
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.definitions import build_assets, build_definitions, resources_from_env
from rag_pipeline.defs.resources import EmbedderResource
from rag_pipeline.lib.chunking import STRATEGIES, Strategy
from rag_pipeline.lib.embedding import Embedder, HashingEmbedder
from rag_pipeline.lib.sources import build_repository, note_id
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS, Settings
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import done_and_reused, make_run, project_definitions

SENT: list[str] = []


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed."""

    def _embed(self, texts, kind):
        SENT.extend(texts)
        return super()._embed(texts, kind)


_RECORDER = RecordingEmbedder()


class RecordingEmbedderResource(EmbedderResource):
    backend: str = "hashing"

    def get(self) -> Embedder:
        return _RECORDER


def build(assets, repo: Path, data: Path, ref: str) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    env = {
        "RAG_NOTES_REPO": str(repo),
        "RAG_NOTES_REF": ref,
        "RAG_DATA_DIR": str(data),
        "RAG_QUESTIONS": str(repo.parent / "questions.json"),
        "RAG_RETRIEVERS": "dense",  # incrementality is the point here, not the retrievers
    }
    SENT.clear()
    res = resources_from_env(env)
    res["embedder"] = RecordingEmbedderResource(store=res["store"])
    result = dg.materialize(assets, resources=res, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    return result, list(SENT)


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in mat.metadata.items()}
    raise KeyError(asset)


def all_chunks(data: Path) -> pd.DataFrame:
    return pd.concat(pd.read_parquet(p) for p in sorted((data / "chunks").glob("*.parquet")))


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory) -> Path:
    """The bundled repository, with the bundled questions less those about the notes commit 2 adds
    or edits (their evidence is not in the first commit: scoring them there would be scoring bad gold)."""
    path = tmp_path_factory.mktemp("corpus") / "notes"
    repo = build_repository(BUNDLED_CORPUS, path)
    touched = {note_id(d.b_path) for d in repo.commit("HEAD~1").diff(repo.head.commit)}
    at_first = {note_id(p) for p in repo.git.ls_tree("-r", "--name-only", "HEAD~1").split()} - touched
    items = json.loads(BUNDLED_QUESTIONS.read_text())
    kept = [q for q in items if q["slug"] is None or q["slug"] in at_first]
    (path.parent / "questions.json").write_text(json.dumps(kept, ensure_ascii=False))
    return path


def test_moving_the_pin_re_embeds_only_the_edited_and_added_notes(corpus_repo, tmp_path):
    import git

    repo = git.Repo(corpus_repo)
    touched = {note_id(d.b_path) for d in repo.commit("HEAD~1").diff(repo.head.commit)}
    assert len(touched) == 2

    data = tmp_path / "incremental"
    assets = build_assets(STRATEGIES.values())
    build(assets, corpus_repo, data, "HEAD~1")
    before = all_chunks(data)

    result, sent = build(assets, corpus_repo, data, "HEAD")
    after = all_chunks(data)
    changed = after[after["note"].isin(touched)]
    expected = set(changed["text"]) - set(before["text"])
    assert sent and set(sent) == expected and len(sent) == len(expected)

    # nothing else was removed or re-chunked
    others_before = before[~before["note"].isin(touched)].sort_values(["strategy", "chunk_id"])
    others_after = after[~after["note"].isin(touched)].sort_values(["strategy", "chunk_id"])
    assert others_before["chunk_id"].tolist() == others_after["chunk_id"].tolist()
    cleaned = metadata(result, "cleaned_notes")
    assert (cleaned["notes_changed"], cleaned["notes_added"], cleaned["notes_removed"]) == (1, 1, 0)
    assert cleaned["notes_unchanged"] == cleaned["notes"] - 2
    emb = metadata(result, "embeddings_section")
    assert emb["texts_embedded"] + emb["vectors_reused"] == emb["vectors"]
    assert 0 < emb["texts_embedded"] < emb["vectors_reused"]

    # the metrics equal a from-scratch build at the second commit
    scratch = tmp_path / "scratch"
    build(assets, corpus_repo, scratch, "HEAD")
    for report in ("evaluation_summary.parquet", "question_ranks.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(data / "reports" / report), pd.read_parquet(scratch / "reports" / report)
        )

    # a re-run with no change sends nothing to the embedder
    result, sent = build(assets, corpus_repo, data, "HEAD")
    assert sent == []
    assert all(metadata(result, f"embeddings_{s.key}")["texts_embedded"] == 0 for s in STRATEGIES.values())


def test_a_deleted_note_loses_its_chunks_and_vectors(notes_repo, tmp_path):
    data = tmp_path / "out"
    assets = build_assets(STRATEGIES.values())
    env = {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_DATA_DIR": str(data),
        "RAG_RETRIEVERS": "dense",
    }
    questions = tmp_path / "q.json"
    questions.write_text(
        '[{"id": 1, "q": "TCP?", "slug": "tcp-handshake", "section": "Why three messages", '
        '"evidence": "Each side must learn"}]'
    )
    env["RAG_QUESTIONS"] = str(questions)
    res = resources_from_env(env)
    res["embedder"] = RecordingEmbedderResource(store=res["store"])
    assert dg.materialize(assets, resources=res, instance=dg.DagsterInstance.ephemeral()).success
    notes_repo.index.remove(["content/notes/db/deadlock/index.md"], working_tree=True)
    notes_repo.index.commit("remove deadlock")
    result = dg.materialize(assets, resources=res, instance=dg.DagsterInstance.ephemeral())
    assert metadata(result, "cleaned_notes")["notes_removed"] == 1
    assert "deadlock" not in set(all_chunks(data)["note"])
    chunks = pd.read_parquet(data / "chunks" / "fixed-200.parquet")
    vectors = next((data / "embeddings").glob("*/fixed-200.parquet"))
    assert set(pd.read_parquet(vectors)["chunk_id"]) == set(chunks["chunk_id"])
    assert metadata(result, "chunks_fixed_200")["chunks_removed"] > 0


def test_a_chunker_version_bump_runs_only_its_lane_and_what_reads_every_lane(small_env):
    instance = dg.DagsterInstance.ephemeral()
    settings = Settings.from_env(small_env | {"RAG_RETRY_AFTER": "0"})

    def project(strategies):
        return build_definitions(settings, list(strategies))

    assert make_run(project(STRATEGIES.values()), instance)[1].success
    bumped = [
        replace(s, version=s.version + "-bis") if s.name == "fixed-500" else s for s in STRATEGIES.values()
    ]
    found, result = make_run(project(bumped), instance)
    lane = {f"{stage}_fixed_500" for stage in ("chunks", "embeddings", "retrieval", "evaluation", "index")}
    every_lane = {
        "evaluation_summary",
        "serving_evaluation",
        "costs",
        "budgets",
        "answers",
        "judgments",
        "release",
    }
    # Dagster's reason: a new code version of the lane's assets (each names its strategy) and of
    # those that read every lane; no other lane's
    stale = {k.to_user_string() for k in found.stale}
    assert "chunks_fixed_500" in stale and stale <= lane | every_lane
    assert set(found.stale.values()) == {"has a new code version"}
    done, reused = done_and_reused(result)
    # the summaries (and the answers and judgments, which read every retrieval) follow only if what
    # they read changed
    assert lane <= done <= lane | every_lane
    assert not (reused & lane) and "chunks_fixed_200" not in done | reused


def test_the_make_run_path_executes_only_what_is_stale(notes_repo, small_env):
    defs = project_definitions(small_env)
    instance = dg.DagsterInstance.ephemeral()
    found, cold = make_run(defs, instance)
    assert cold.success and set(found.stale.values()) == {"never materialized"}
    # a no-op run executes nothing
    assert make_run(defs, instance) == (found.__class__({}, {}), None)
    # a commit that touches no note re-runs what says which commit it is from; the lanes are reused
    commit = commit_files(notes_repo, {"README.md": "not a note\n"}, "touch no note")
    found, result = make_run(defs, instance)
    assert {k.to_user_string() for k in found.stale} == {"source_notes"}
    done, reused = done_and_reused(result)
    # and the questions, whose gold status is taken at the indexed commit; the release decides anew
    assert done == {
        "source_notes",
        "cleaned_notes",
        "questions",
        "evaluation_summary",
        "serving_evaluation",
        "answers",
        "judgments",
        "release",
    }
    assert {"chunks_section", "embeddings_section", "retrieval_section", "index_section"} <= reused
    summary = pd.read_parquet(Path(small_env["RAG_DATA_DIR"]) / "reports" / "evaluation_summary.parquet")
    assert set(summary["commit"]) == {commit}
    assert {r.job_name for r in instance.get_runs()} == {"index_and_evaluate"}


def gap_spans(text: str, sections) -> list[tuple[int, int]]:
    """One chunk per note, leaving out the first characters of a note that says GAP."""
    return [(3 if "GAP" in text else 0, len(text))]


def test_the_chunks_check_rechecks_only_rebuilt_notes_while_it_passes(notes_repo, small_env):
    """After a passing check only rebuilt notes are checked; a failure stays until it is fixed."""
    strategy = Strategy("gappy", "gappy-v1", gap_spans)
    resources = resources_from_env(small_env)
    assets = build_assets([strategy], resources)
    instance = dg.DagsterInstance.ephemeral()
    selection = ["source_notes", "cleaned_notes", "chunks_gappy"]

    def check() -> tuple[bool, str]:
        result = dg.materialize(
            assets, selection=selection, resources=resources, instance=instance, raise_on_error=False
        )
        (evaluation,) = result.get_asset_check_evaluations()
        return evaluation.passed, evaluation.metadata["problems"].value

    assert check() == (True, "none")
    path = "content/notes/db/deadlock/index.md"
    original = (Path(notes_repo.working_tree_dir) / path).read_text(encoding="utf-8")
    commit_files(notes_repo, {path: original + "\nGAP\n"}, "a note the chunker mangles")
    passed, problems = check()
    assert not passed and problems == "note 'deadlock': text [0, 3) is in no chunk"
    other = "content/notes/net/tcp-handshake/index.md"
    text = (Path(notes_repo.working_tree_dir) / other).read_text(encoding="utf-8")
    commit_files(notes_repo, {other: text + "\n追記。\n"}, "edit another note")
    assert check() == (passed, problems)  # the unchanged, mangled note is checked again
    commit_files(notes_repo, {path: original}, "fixed")
    assert check() == (True, "none")
