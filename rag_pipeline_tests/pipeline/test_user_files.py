"""Nothing of the user's is deleted: a file a user keeps in any directory the pipeline writes (and a
folder of theirs in `reports/`) survives runs that rewrite everything around it, while a report the
project published before and no longer produces is removed. Real git repository, real data
directory, the `make run` path with the hashing embedder; `publish_directory` on a real file system
and on an S3-compatible server (moto) on 127.0.0.1."""

import json
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.lib.core import location, publish_directory, write_bytes
from rag_pipeline.lib.core.publish import OWNED
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import make_run, project_definitions

MINE = "my-analysis.txt"


def user_dirs(data: Path) -> list[Path]:
    """Every directory the pipeline wrote under `data`, nested ones included, but not the inside of a
    LanceDB table (LanceDB's own layout) or a hidden directory."""
    found = [data / "reports"]
    for path in sorted(data.rglob("*")):
        parts = path.relative_to(data).parts
        if (
            path.is_dir()
            and not path.is_symlink()
            and not any(p.startswith(".") or p.endswith(".lance") for p in parts)
        ):
            found.append(path)
    return found


@pytest.mark.slow
def test_a_users_files_survive_runs_that_rewrite_every_directory(small_env, notes_repo):
    env = small_env | {"RAG_STRATEGIES": "fixed-1000,section", "RAG_RETRIEVERS": "dense"}
    data = Path(env["RAG_DATA_DIR"])
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success

    dirs = user_dirs(data)
    names = {d.relative_to(data).as_posix() for d in dirs}
    for expected in ("notes", "chunks", "embeddings", "retrieval", "evaluation", "answers", "release"):
        assert expected in names
    assert {"lancedb", "reports", "served", "candidates/section"} <= names
    mine = {d / MINE: f"kept by a user in {d.relative_to(data)}" for d in dirs}
    mine[data / "reports" / "mine" / "figure.txt"] = "a folder of the user's among the reports"
    for path, text in mine.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    # a report an earlier version of the project published, which this one does not produce
    (data / "reports" / "old_plot.png").write_bytes(b"\x89PNG old")
    listed = json.loads((data / "reports" / OWNED).read_text())
    (data / "reports" / OWNED).write_text(json.dumps([*listed, "old_plot.png"]))

    commit_files(
        notes_repo,
        {"content/notes/retry/index.md": '---\ntitle: "Retry"\n---\n再試行は 3 回までです。\n'},
        "a new note: every asset runs again",
    )
    found, result = make_run(project_definitions(env), instance)
    assert result.success and {"evaluation_summary", "release"} <= set(found.names())

    assert {p: p.read_text() if p.exists() else None for p in mine} == mine
    assert not (data / "reports" / "old_plot.png").exists()
    assert (data / "reports" / "report.md").read_text().startswith("# Retrieval evaluation")
    assert (data / "reports" / "serving.parquet").exists()  # another asset's report, carried over


def test_publishing_replaces_only_the_files_it_wrote(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / MINE).write_text("made before the first publish")
    publish_directory(reports, {"a.parquet": b"a1", "b.png": b"b1"})
    assert reports.is_symlink() and (reports / MINE).read_text() == "made before the first publish"

    (reports / "mine").mkdir()
    (reports / "mine" / "deep.txt").write_text("deep")
    write_bytes(b"s1", reports / "serving.parquet")  # another publisher's file
    publish_directory(reports, {"a.parquet": b"a2"})
    assert sorted(p.name for p in reports.iterdir()) == [OWNED, "a.parquet", "mine", MINE, "serving.parquet"]
    assert (reports / "a.parquet").read_bytes() == b"a2" and (
        reports / "serving.parquet"
    ).read_bytes() == b"s1"
    assert (reports / "mine" / "deep.txt").read_text() == "deep"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".reports")] == [reports.resolve().name]


def test_publishing_on_an_object_store_replaces_only_the_files_it_wrote(s3):
    reports = location(s3) / "reports"
    write_bytes(b"user", reports / MINE)
    publish_directory(reports, {"a.parquet": b"a1", "b.png": b"b1"})
    publish_directory(reports, {"a.parquet": b"a2"})
    assert [p.name for p in reports.files()] == [OWNED, "a.parquet", MINE]
    assert (reports / MINE).read_bytes() == b"user" and (reports / "a.parquet").read_bytes() == b"a2"
