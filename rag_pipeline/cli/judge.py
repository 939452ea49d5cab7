"""`python -m rag_pipeline.judge label --criterion faithful --n 50 --out labels.json`: people's labels.

Shows the answers of the last build one at a time, as the judge saw them
(`$RAG_DATA_DIR/answers/judged_items.parquet`): the question, the passages (for `correct` the gold
evidence its asker may read), the answer and the rubric: first the served run's answers (the live
release's, else the report's baseline: the figures `make run` prints), in random order, then the other
runs' in a stratified random order (each run a random sample in proportion to its size). Records y (yes), n (no) or s (skip) into --out after each
answer and stops at q or at the end of the input; run again, it resumes where it stopped until --n
labels of the criterion name the current answers. Point RAG_JUDGE_LABELS at the file to use them.
Exits 2 on a bad argument or labels file, or when nothing was judged yet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.lib.core import location, read_frame
from rag_pipeline.lib.judging import (
    CRITERIA,
    RUBRIC,
    LabelsError,
    attach_labels,
    label_order,
    labelled,
    numbered,
    read_labels,
    with_label,
    write_labels,
)
from rag_pipeline.lib.release import RELEASE_DIR, ReleaseError, read_current
from rag_pipeline.settings import Settings, SettingsError

KEYS = {"y": True, "n": False, "s": None}


def shown(item: pd.Series, criterion: str, place: str) -> str:
    """An answer as a person labels it on `criterion`."""
    if criterion == "correct":
        reference = "\n".join(item["evidence"]) or "(none its asker may read: correct only if it declines)"
        context = f"Reference (gold evidence):\n{reference}"
    else:
        context = f"Passages given to the answerer:\n{numbered(tuple(item['passages']))}"
    return "\n".join(
        [
            f"--- {place} · {criterion} · question {item['question_id']} · {item['strategy']}/{item['retriever']}",
            f"Question: {item['question']}",
            context,
            f"Answer: {item['answer']}",
            f"Rubric: {RUBRIC[criterion]}",
        ]
    )


def ask(stdin: TextIO, stdout: TextIO) -> str:
    """y, n, s or q (the end of the input is q); anything else is asked again."""
    while True:
        stdout.write("Label: [y]es / [n]o / [s]kip / [q]uit? ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            return "q"
        choice = line.strip().lower()[:1]
        if choice in (*KEYS, "q"):
            return choice


def served_run(data) -> str | None:
    """`strategy/retriever` of the live release, else the report's baseline (None: neither known)."""
    try:
        live = read_current(data / RELEASE_DIR)
    except ReleaseError:
        live = None
    if live:
        return str(live["run"])
    verdict = data / "reports" / "verdict.json"
    baseline = json.loads(verdict.read_text()).get("baseline") if verdict.exists() else None
    return None if not baseline else baseline if "/" in baseline else f"{baseline}/dense"


def label(args: argparse.Namespace, data, stdin: TextIO, stdout: TextIO) -> int:
    path = data / lanes.JUDGED_ITEMS
    if not path.exists():
        raise LabelsError(f"{path}: nothing judged yet; run `make run` first")
    items = read_frame(path)
    out = Path(args.out)
    labels = read_labels(out)
    count = int(attach_labels(items, labels)[0][f"{args.criterion}_label"].notna().sum())
    seen = labelled(labels, items, args.criterion)
    for index in label_order(items, args.seed, served_run(data)):
        if count >= args.n:
            break
        if seen[index]:
            continue
        item = items.loc[index]
        stdout.write(shown(item, args.criterion, f"{count + 1} of {args.n}") + "\n")
        choice = ask(stdin, stdout)
        if choice == "q":
            break
        entry = {k: item[k] for k in ("question_id", "strategy", "retriever", "answer_sha256")}
        labels = with_label(labels, entry | {"criterion": args.criterion, "label": KEYS[choice]})
        write_labels(out, labels)
        count += choice != "s"
    stdout.write(f"{count} of {args.n} labels of {args.criterion} for the current answers in {out}\n")
    return 0


def main(argv: Sequence[str] | None = None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.judge", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    labelling = commands.add_parser("label", help="label a stratified random sample of answers")
    labelling.add_argument("--criterion", choices=CRITERIA, required=True)
    labelling.add_argument("--n", type=int, default=50, help="labels to reach (default 50)")
    labelling.add_argument("--out", required=True, help="the labels file (JSON), created or resumed")
    labelling.add_argument("--seed", type=int, default=0, help="of the sample's order (default 0)")
    args = parser.parse_args(argv)
    try:
        if args.n < 1:
            raise ValueError(f"--n {args.n}: ask for one label or more")
        data = location(Settings.from_env(os.environ).data_dir)
        return label(args, data, stdin, stdout)
    except (SettingsError, LabelsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
