"""A small real git repository of notes and gold questions over it."""

from pathlib import Path

import git

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
