"""Shared fixtures: a small real git repository of notes and a questions file over it."""

import json
from pathlib import Path

import git
import pytest

NOTES = {
    "content/notes/db/deadlock/index.md": """---
title: "Deadlock"
date: 2026-01-01
---
デッドロックは、二つ以上のトランザクションが互いのロックを待ち続けて進めなくなる状態です。

### DBMS はデッドロックをどう終わらせるか
PostgreSQL は `deadlock_timeout` の 1 秒が過ぎると待ちグラフを調べ、循環を見つけると一方を中止します。
中止された側には SQLSTATE 40P01 が返ります。

```sql
SELECT pg_sleep(2);
```

### 再試行の設計
中止されたトランザクションは、指数バックオフで最大 3 回まで再試行します。
再試行でも失敗した要求はキューに移して後で処理します。
""",
    "content/notes/storage/columnar-storage/index.md": """---
title: "Columnar Storage"
---
列指向のファイル形式は、同じ列の値をまとめて並べます。[Parquet](https://parquet.apache.org/) が代表例です。

### CSV と Parquet の比較
| 形式 | 大きさ |
|---|---|
| CSV | 1.2 GB |
| Parquet | 77 MB |

同じ表を保存すると Parquet は 15.6 分の 1 の大きさでした。

### 圧縮が効く理由
似た値が隣り合うので、辞書符号化とランレングス符号化がよく効きます。
""",
    "content/notes/net/tcp-handshake/index.md": """---
title: "TCP handshake"
---
A TCP connection starts with a three-way handshake: SYN, SYN-ACK and ACK.

### Why three messages
Each side must learn that the other received its initial sequence number.
Two messages would leave the server unsure whether the client saw its SYN-ACK.
""",
    "content/notes/_index.md": """---
title: "Notes"
---
All notes.
""",
}

QUESTIONS = [
    {
        "id": 1,
        "q": "デッドロックを検出した PostgreSQL はどんなエラーコードを返す?",
        "slug": "deadlock",
        "section": "DBMS はデッドロックをどう終わらせるか",
        "evidence": "SQLSTATE 40P01 が返ります",
        "category": "identifier",
    },
    {
        "id": 2,
        "q": "Parquet にすると CSV の何分の 1 になった?",
        "slug": "columnar-storage",
        "section": "CSV と Parquet の比較",
        "evidence": "Parquet は 15.6 分の 1 の大きさでした",
        "category": "number",
    },
    {
        "id": 3,
        "q": "Why does TCP need a third message?",
        "slug": "tcp-handshake",
        "section": "Why three messages",
        "evidence": "learn that the other received its initial sequence number",
        "category": "english",
    },
    {
        "id": 4,
        "q": "中止されたトランザクションは何回まで再試行し、失敗したらどうする?",
        "slug": "deadlock",
        "section": "再試行の設計",
        "evidence": "最大 3 回まで再試行します",
        "evidence2": "キューに移して後で処理します",
        "section2": "再試行の設計",
        "category": "multi-section",
    },
    {
        "id": 5,
        "q": "Kafka のパーティション数の上限は?",
        "slug": None,
        "section": None,
        "evidence": None,
        "category": "unanswerable",
    },
]


def make_notes_repo(path: Path, files: dict[str, str]) -> git.Repo:
    repo = git.Repo.init(path, initial_branch="main")
    commit_files(repo, files, "notes")
    return repo


def commit_files(repo: git.Repo, files: dict[str, str], message: str) -> str:
    root = Path(repo.working_tree_dir)
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    repo.index.add(list(files))
    actor = git.Actor("test", "test@example.invalid")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


@pytest.fixture
def notes_repo(tmp_path: Path) -> git.Repo:
    return make_notes_repo(tmp_path / "notes", NOTES)


@pytest.fixture
def questions_path(tmp_path: Path) -> Path:
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(QUESTIONS, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def small_env(notes_repo, questions_path: Path, tmp_path: Path) -> dict[str, str]:
    """The RAG_* settings of a run on the small repository with the fast hashing embedder."""
    return {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(questions_path),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
    }


def project_definitions(env: dict[str, str]):
    """The project's Definitions as the code location builds them from `env`."""
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.settings import Settings

    return build_definitions(Settings.from_env(env))


def run_all(
    env: dict[str, str],
    assets=None,
    *,
    instance=None,
    selection=None,
    resources: dict | None = None,
    raise_on_error: bool = True,
):
    """Materialize the asset graph (default: the project's) in-process with the resources `env` describes."""
    import dagster as dg

    project = project_definitions(env)
    return dg.materialize(
        project.assets if assets is None else assets,
        selection=selection,
        resources=project.resources | (resources or {}),
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=raise_on_error,
    )


def make_run(defs, instance):
    """What `make run` does, in this process: observe, plan, execute the planned run (none when
    everything is fresh). Returns (plan, result or None)."""
    from rag_pipeline.defs.planner import execute, next_run

    r = defs.resources
    graph = defs.resolve_asset_graph()
    found, request = next_run(graph, instance, r["notes_repo"], r["questions_file"])
    result = None if request is None else execute(defs, instance, request, "index_and_evaluate")
    return found, result


def done_and_reused(result) -> tuple[set[str], set[str]]:
    """The assets a run computed, and those it reused because their inputs were unchanged."""
    done, reused = set(), set()
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        (reused if "reused" in mat.metadata else done).add(mat.asset_key.to_user_string())
    return done, reused


def materialization_metadata(result, asset: str) -> dict:
    """The metadata values of `asset`'s materialization in a run's result."""
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in mat.metadata.items()}
    raise KeyError(asset)
