"""`python -m rag_pipeline.gold status|refresh`: the gold labels against the indexed notes commit.

`status` prints each question that is not `ok`; `refresh` also writes a copy of the questions file
(`<questions>.refreshed.json`, or `--out`) with carried questions moved to the indexed commit and
stale ones relabelled where the suggestion is close enough; the original file is left alone.
The settings are the pipeline's (`RAG_QUESTIONS`, `RAG_NOTES_REPO`, `RAG_NOTES_GLOB`,
`RAG_DATA_DIR`); the indexed commit is the last one `source_notes` read, or `--commit`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_pipeline.defs import lanes
from rag_pipeline.defs.resources import DataStore, NotesRepository
from rag_pipeline.lib.core import location, read_frame
from rag_pipeline.lib.questions import (
    RELABEL_THRESHOLD,
    QuestionsError,
    assess,
    gold_counts,
    gold_problems,
    parse_questions,
    refresh,
)
from rag_pipeline.lib.sources import NotesSourceError, resolve_commit
from rag_pipeline.settings import Settings, SettingsError


def indexed_commit(data_dir: str) -> str:
    """The commit the last `source_notes` build read."""
    path = location(data_dir) / lanes.SOURCE_NOTES
    if not path.exists():
        raise FileNotFoundError(f"{path}: no index yet; run `make run` first or pass --commit")
    return str(read_frame(path, columns=["commit"])["commit"].iloc[0])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.gold", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["status", "refresh"])
    parser.add_argument("--commit", help="the indexed commit (default: the last one indexed)")
    parser.add_argument("--out", help="where refresh writes (default: <questions>.refreshed.json)")
    parser.add_argument(
        "--threshold",
        type=float,
        default=RELABEL_THRESHOLD,
        help=f"relabel a stale question whose suggestion scores at least this (default {RELABEL_THRESHOLD})",
    )
    parser.add_argument(
        "--pin", action="store_true", help="give ok questions without a commit the indexed one"
    )
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env(os.environ)
        source = settings.questions
        items = json.loads(Path(source).read_text(encoding="utf-8"))
        questions = parse_questions(items, source)
        notes = NotesRepository.from_settings(settings, store=DataStore.from_settings(settings))
        repo = notes.open()
        indexed = resolve_commit(repo, args.commit or indexed_commit(settings.data_dir)).hexsha
        statuses, drift = assess(repo, questions, indexed, notes.glob, notes.exclude, source)
    except (OSError, ValueError, QuestionsError, NotesSourceError, SettingsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = gold_counts(statuses)
    print(f"{len(statuses)} questions at {indexed[:12]}: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    for row in drift[drift["gold_status"] != "invalid"].itertuples(index=False):
        found = f"found {row.evidence_found}x"
        hint = (
            f"; suggested {row.suggested_evidence!r} ({row.suggestion_score:.2f})"
            if row.suggested_evidence
            else ""
        )
        print(
            f"  question {row.question_id} {row.field} [{row.evidence_status}] {row.slug}: {found}, "
            f"{len(row.changed_in)} commit(s) since {row.label_commit[:12]}{hint}"
        )
    for qid, why in gold_problems(statuses).items():
        print(f"  question {qid} invalid: {why}")
    if args.action == "status":
        return 0
    new, changes = refresh(items, drift, indexed, threshold=args.threshold, pin=args.pin)
    out = Path(args.out) if args.out else Path(source).with_suffix(".refreshed.json")
    out.write_text(json.dumps(new, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print("\n".join(changes) if changes else "nothing to change")
    print(f"wrote {out} ({source} is unchanged)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
