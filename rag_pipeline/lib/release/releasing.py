"""The release stage as plain calls: what the gate finds wrong beyond its rules on results, the
state `current.json` records on a release, and a decision recorded (the live tags moved to it, the
live release narrowed to the notes' access, the history appended)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from rag_pipeline.lib.core import AnyPath, may_read
from rag_pipeline.lib.questions import asker_groups
from rag_pipeline.lib.release.directory import (
    CURRENT,
    QUESTIONS,
    append_history,
    read_released_questions,
    write_release,
)
from rag_pipeline.lib.release.gate import RELEASED, Decision, decide, question_results
from rag_pipeline.lib.release.live import follow_release
from rag_pipeline.lib.release.narrow import narrow_live
from rag_pipeline.lib.serving import RELEASE_DIR, Revocation, ServedTable, search_rows


def unevaluated(run: tuple[str, str], evaluated: Iterable[str]) -> list[str]:
    """The rule that the release run was evaluated: its retriever among its strategy's `evaluated`."""
    evaluated = sorted(evaluated)
    if run[1] in evaluated:
        return []
    return [
        f"the release run {'/'.join(run)} was not evaluated (retrievers of {run[0]}: "
        f"{', '.join(evaluated) or 'none'})"
    ]


def served_leaks(table: ServedTable, vectors, questions: pd.DataFrame, k: int) -> list[str]:
    """Every row the served table returns at k to an asker who may not read it, searched as an
    application searches it (the asker's groups as a pre-filter)."""
    found = []
    for vector, row in zip(vectors, questions.itertuples()):
        groups = asker_groups(row)
        if groups is None:
            continue
        hits = search_rows(table, vector, k, list(groups), ["chunk_id", "access"]).to_pylist()
        found += [
            f"question {row.question_id}: {h['chunk_id']} {h['access']}"
            for h in hits
            if not may_read(groups, h["access"])
        ]
    return found


def release_state(
    decision: Decision,
    run: str,
    k: int,
    report: pd.DataFrame,
    questions: pd.DataFrame,
    versions: Mapping[str, int],
    current: dict | None,
    time: str,
) -> dict:
    """What `current.json` records of a release of `run`, evaluated as the serving `report` says, on
    the served tables at `versions`; `current` is the live release it replaces."""
    commit = str(report["commit"].iloc[0])
    return {
        "decision": RELEASED,
        "commit": commit,
        "run": run,
        "k": k,
        "recall": decision.recall,
        "recall_on": decision.recall_on,
        "embedding_version": str(report["embedding_version"].iloc[0]),
        "table_versions": dict(versions),
        "questions_sha256": str(questions["questions_sha256"].iloc[0]) if len(questions) else "",
        # the same release again (after a run that died before moving every tag) keeps the commit
        # live before it
        "previous_commit": current["previous_commit"]
        if current and (current["commit"], current["table_versions"]) == (commit, versions)
        else (current or {}).get("commit"),
        "time": time,
    }


def decision_row(decision: Decision) -> dict:
    """A decision as `history.parquet` records it."""
    return {
        "decision": decision.decision,
        "recall": decision.recall,
        "recall_on": decision.recall_on,
        "reasons": decision.reasons,
        "newly_missed": decision.newly_missed,
    }


def reasons_md(decision: Decision) -> str:
    return "\n".join(f"- {r}" for r in decision.reasons) or "none: every rule holds"


@dataclass(frozen=True)
class Gate:
    """The gate's settings: evidence recall at `k`, and the drops against the last release it allows."""

    k: int
    max_drop: float
    max_faithful_drop: float


@dataclass
class Recorded:
    decision: Decision
    results: pd.DataFrame  # per scored question, the release run's (question_results)
    answers: pd.DataFrame  # the release run's answers
    row: dict  # the history row
    live: dict | None  # the release live after the decision (None: none is)
    moved: list[str]  # the tables whose `live` tag moved to the version `live` names
    revoked: Revocation  # what live withholds of its notes
    files: list[AnyPath]  # the release directory's files

    def figures(self, k: int, answer_cost_per_1k: float) -> dict[str, object]:
        """The decision as a person reads it (`narrowed` and `reasons` in Markdown)."""
        decision = self.decision
        return {
            "decision": decision.decision,
            "run": self.row["run"],
            f"recall@{k}": decision.recall,
            "faithful": float(self.results["faithful"].mean()),  # the judge's, uncorrected
            "compared": decision.compared,
            "live_commit": (self.live or {}).get("commit", ""),
            "live_withheld": len(self.revoked.notes),
            # what answering costs the run, at the prices (retrieval's cost is the report's)
            "answer_cost_per_1k": answer_cost_per_1k,
            "narrowed": self.revoked.summary() or "none: live serves what its release decided",
            "reasons": reasons_md(decision),
        }


def release_decision(
    data_dir: AnyPath,
    run: tuple[str, str],
    gate: Gate,
    candidate: Mapping[str, pd.DataFrame],
    problems: list[str],
    versions: Mapping[str, int],
    current: dict | None,
) -> Recorded:
    """Decide whether `run` may be served, from the `candidate`'s frames (`questions` as `usable`
    leaves them, its strategy's evaluation `outcomes`, every `answers` row, the `judged` faithful
    scores, the serving `report`, the source `notes` with their access) and the `problems` the absolute checks found, against the last
    release's results; and record the decision under `data_dir`: on a release, `current.json` (the
    commit point: the tags follow it, to the served tables at `versions`) and its per-question
    results; the live tags follow the live release (`current` when none is made); the live release
    withholds what the notes' access narrows since (a release carries every narrowing of its
    notes); the decision is appended to the history."""
    questions, outcomes, answers = candidate["questions"], candidate["outcomes"], candidate["answers"]
    answers = answers[(answers["strategy"] == run[0]) & (answers["retriever"] == run[1])]
    ran = outcomes[outcomes["retriever"] == run[1]]
    results = question_results(questions, ran, answers if len(answers) else None, candidate["judged"])
    release_dir = data_dir / RELEASE_DIR
    previous = read_released_questions(release_dir)
    decision = decide(results, problems, previous, gate.k, gate.max_drop, gate.max_faithful_drop)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    live = current
    if decision.decision == RELEASED:
        report = candidate["report"]
        live = release_state(decision, "/".join(run), gate.k, report, questions, versions, current, now)
        write_release(release_dir, live, results)
    moved = follow_release(data_dir, live) if live is not None else []
    commit = str(candidate["report"]["commit"].iloc[0])
    notes = candidate["notes"]
    access = {note: tuple(groups) for note, groups in zip(notes["note"], notes["access"])}
    revoked, _ = narrow_live(data_dir, access, commit)
    row = {"commit": commit, "run": "/".join(run), "time": now, **decision_row(decision)}
    history = append_history(release_dir, row)
    files = [history] + [p for p in (release_dir / CURRENT, release_dir / QUESTIONS) if p.exists()]
    return Recorded(decision, results, answers, row, live, moved, revoked, files)
