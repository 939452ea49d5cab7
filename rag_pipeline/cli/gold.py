"""`python -m rag_pipeline.gold status|refresh|generate|from-asks`: the gold labels against the indexed notes commit.

`status` prints each question that is not `ok`; `refresh` also writes a copy of the questions file
(`<questions>.refreshed.json`, or `--out`) with carried questions moved to the indexed commit and
stale ones relabelled where the suggestion is close enough; the original file is left alone.
`generate` writes draft questions with verified evidence (`<questions>.generated.json`, or `--out`;
`--merge` puts the questions file's own questions first), see `rag_pipeline.lib.questions.drafts`.
`from-asks` writes the flagged records of the ask log as candidate questions with personal data
removed (`<questions>.asked.json`, or `--out`; `--merge` as for generate), see `rag_pipeline.lib.asks`;
`status` lists the asked questions still waiting for their evidence.
The settings are the pipeline's (`RAG_QUESTIONS`, `RAG_NOTES_REPO`, `RAG_NOTES_GLOB`,
`RAG_DATA_DIR`); the indexed commit is the last one `source_notes` read, or `--commit`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import git

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.resources import AnswerResource, DataStore, NotesRepository
from rag_pipeline.lib.answers import LLMError, reply_texts
from rag_pipeline.lib.asks import (
    Redactor,
    candidates,
    log_location,
    read_log,
    read_terms,
)
from rag_pipeline.lib.core import location, read_frame, shown_path
from rag_pipeline.lib.questions import (
    CATEGORIES,
    LLM_CATEGORIES,
    N_CHARS,
    N_WORDS,
    OFFLINE_CATEGORIES,
    RELABEL_THRESHOLD,
    QuestionsError,
    assess,
    awaiting_evidence,
    draft,
    gold_counts,
    gold_problems,
    notes_at,
    parse_questions,
    refresh,
)
from rag_pipeline.lib.sources import NotesSourceError, resolve_commit
from rag_pipeline.settings import Settings, SettingsError


def indexed_commit(repo: git.Repo, data_dir: str, given: str | None) -> git.Commit:
    """The commit `--commit` names (`given`), or else the one the last `source_notes` build read."""
    if given:
        return resolve_commit(repo, given, "--commit")
    path = location(data_dir) / lanes.SOURCE_NOTES
    if not path.exists():
        raise FileNotFoundError(f"{path}: no index yet; run `make run` first or pass --commit")
    sha = str(read_frame(path, columns=["commit"])["commit"].iloc[0])
    try:
        return repo.commit(sha)
    except (git.BadName, git.BadObject, ValueError):
        raise NotesSourceError(
            f"{path}: the indexed commit {sha[:12]} is not in {repo.working_tree_dir or repo.git_dir} "
            "(rebuilt since?); run `make run` to index its head, or pass --commit"
        ) from None


def existing_items(source: Path) -> list:
    """The questions file's items; none when it is missing or empty (generate starts from nothing)."""
    text = source.read_text(encoding="utf-8") if source.exists() else ""
    if not text.strip():
        return []
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuestionsError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(items, list):
        raise QuestionsError(f"{source}: expected a JSON list of questions, got {type(items).__name__}")
    return items


def generate(args: argparse.Namespace, settings: Settings) -> int:
    """`gold generate`: write the draft, print what was written and rejected."""
    for option, n in (("--n", args.n), ("--unauthorized", args.unauthorized)):
        if n < 0:
            raise ValueError(f"{option} {n}: give a number of questions, 0 or more")
    source = Path(shown_path(settings.questions))  # as messages name it: from where the user stands
    out = out_path(args, source, ".generated.json")
    categories = [c.strip() for c in args.categories.split(",")] if args.categories else None
    unknown = sorted(set(categories or ()) - set(CATEGORIES))
    if unknown:
        raise ValueError(f"--categories: unknown {', '.join(unknown)}; choose from {', '.join(CATEGORIES)}")
    items = existing_items(source)
    store = DataStore.from_settings(settings)
    notes_repo = NotesRepository.from_settings(settings, store=store)
    commit = indexed_commit(notes_repo.open(), settings.data_dir, args.commit)
    llm = ask = None
    if args.llm:
        answerer = AnswerResource.from_settings(settings)
        if answerer.backend == "extractive":
            raise ValueError(
                "--llm needs a chat server: set RAG_LLM=ollama or openai (and RAG_LLM_URL, RAG_LLM_MODEL)"
            )
        llm = answerer.get()
        cache = Path(store.local("generation_cache"))
        ask = partial(reply_texts, llm, cache_dir=cache)
    made = draft(
        notes_at(commit, notes_repo.glob, notes_repo.exclude),
        commit.hexsha,
        n=args.n,
        categories=categories or (LLM_CATEGORIES if llm else OFFLINE_CATEGORIES),
        seed=args.seed,
        n_unauthorized=args.unauthorized,
        existing=[str(i.get("q", "")) for i in items if isinstance(i, dict)],
        ask=ask,
        model=llm.llm_version if llm else "",
        n_chars=args.paraphrase_chars,
        n_words=args.paraphrase_words,
    )
    written = (items if args.merge else []) + made.items
    out.write_text(json.dumps(written, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print("\n".join(made.lines(commit.hexsha)))
    if llm is not None:
        print(
            f"{made.prompts_sent} prompt(s) sent to {llm.backend} model {llm.model!r} (the rest from the cache)"
        )
    merged = f" after the {len(items)} questions of {source}" if args.merge else ""
    print(f"wrote {out}{merged} ({source} is unchanged)")
    return 0


def out_path(args: argparse.Namespace, source: Path, suffix: str) -> Path:
    """Where a command that drafts questions writes: `--out`, or beside the questions file; never over it."""
    out = Path(args.out) if args.out else source.with_suffix(suffix)
    if out.resolve() == source.resolve():
        raise ValueError(
            f"--out {out} is the questions file (RAG_QUESTIONS); write the draft to another file"
        )
    return out


def from_asks(args: argparse.Namespace, settings: Settings) -> int:
    """`gold from-asks`: the flagged asks as candidates, redacted; what was written and removed."""
    source = Path(shown_path(settings.questions))  # as messages name it: from where the user stands
    out = out_path(args, source, ".asked.json")
    log = log_location(settings.ask_log, settings.data_dir)
    if log is None:
        raise ValueError("RAG_ASK_LOG=off: no ask log is kept, so no asked question can be drafted")
    items = existing_items(source)
    redact = Redactor(read_terms(settings.redact_terms) if settings.redact_terms else ())
    made, known = candidates(read_log(log), redact, items)
    written = (items if args.merge else []) + made
    out.write_text(json.dumps(written, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    already = f"; {known} flagged record(s) already in {source}" if known else ""
    print(f"{len(made)} candidate question(s) from the flagged records of {shown_path(log)}{already}")
    print(redact.summary())
    merged = f" after the {len(items)} questions of {source}" if args.merge else ""
    print(
        f"wrote {out}{merged} ({source} is unchanged); give each candidate its evidence (`slug`, `section`, "
        '`evidence`, or `"slug": null` when the notes cannot answer it) and add it to the questions file'
    )
    return 0


DRAFTS = {"generate": generate, "from-asks": from_asks}  # the actions that write draft questions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.gold", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["status", "refresh", "generate", "from-asks"])
    parser.add_argument("--commit", help="the indexed commit (default: the last one indexed)")
    parser.add_argument(
        "--out",
        help="where refresh, generate or from-asks write (default: <questions>.refreshed.json, "
        ".generated.json, .asked.json)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=RELABEL_THRESHOLD,
        help=f"relabel a stale question whose suggestion scores at least this (default {RELABEL_THRESHOLD})",
    )
    parser.add_argument(
        "--pin", action="store_true", help="give ok questions without a commit the indexed one"
    )
    parser.add_argument("--n", type=int, default=100, help="generate: questions to write (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="generate: the sampling seed (default 0)")
    parser.add_argument(
        "--categories",
        help=f"generate: comma-separated, of {', '.join(CATEGORIES)} (default: the offline ones; with --llm "
        "the LLM ones)",
    )
    parser.add_argument("--llm", action="store_true", help="generate: ask the chat model of RAG_LLM")
    parser.add_argument(
        "--unauthorized", type=int, default=0, help="generate: add N leak-test questions (default 0)"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="generate, from-asks: write the questions file's questions first",
    )
    parser.add_argument(
        "--paraphrase-chars",
        type=int,
        default=N_CHARS,
        help=f"generate: a Japanese paraphrase shares no run of this many characters with its evidence (default {N_CHARS})",
    )
    parser.add_argument(
        "--paraphrase-words",
        type=int,
        default=N_WORDS,
        help=f"generate: an English paraphrase shares no run of this many words with its evidence (default {N_WORDS})",
    )
    args = parser.parse_args(argv)
    if args.action in DRAFTS:
        try:
            return DRAFTS[args.action](args, Settings.from_env(os.environ))
        except (OSError, ValueError, QuestionsError, NotesSourceError, SettingsError, LLMError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        settings = Settings.from_env(os.environ)
        source = shown_path(settings.questions)
        items = json.loads(Path(source).read_text(encoding="utf-8"))
        questions = parse_questions(items, source)
        notes = NotesRepository.from_settings(settings, store=DataStore.from_settings(settings))
        repo = notes.open()
        indexed = indexed_commit(repo, settings.data_dir, args.commit).hexsha
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
    for item in filter(awaiting_evidence, items):
        hints = item.get("x-hints", [])[:3]
        found = ", ".join(" > ".join(str(h[k]) for k in ("slug", "section") if h.get(k)) for h in hints)
        print(f"  question {item.get('id')} asked, needs its evidence (served: {found or 'nothing'})")
    if args.action == "status":
        return 0
    new, changes = refresh(items, drift, indexed, threshold=args.threshold, pin=args.pin)
    out = Path(args.out) if args.out else Path(source).with_suffix(".refreshed.json")
    out.write_text(json.dumps(new, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print("\n".join(changes) if changes else "nothing to change")
    print(f"wrote {out} ({source} is unchanged)")
    return 0
