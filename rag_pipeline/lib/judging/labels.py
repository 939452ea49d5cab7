"""People's labels (`RAG_JUDGE_LABELS`): reading the file strictly, matching each label to the answer it
names, and the order in which `python -m rag_pipeline.judge label` shows answers to label.

The file is a JSON list of `{"question_id", "strategy", "retriever", "criterion", "label",
"answer_sha256"}`; `label` is true, false, or null (skipped: shown, not labelled). A label whose
answer changed since (another sha256) is stale and unused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import AnyPath, write_bytes
from rag_pipeline.lib.judging.rubric import CRITERIA

FIELDS = ("question_id", "strategy", "retriever", "criterion", "label", "answer_sha256")
MATCH = ["question_id", "strategy", "retriever", "criterion", "answer_sha256"]
SHA256 = re.compile(r"[0-9a-f]{64}")


class LabelsError(ValueError):
    """The labels file cannot be used; the message names the file and the entry."""


def _entry(entry: object, where: str) -> dict:
    if not isinstance(entry, dict):
        raise LabelsError(f"{where}: not a JSON object")
    if missing := [f for f in FIELDS if f not in entry]:
        raise LabelsError(f"{where}: missing {', '.join(missing)}")
    if entry["criterion"] not in CRITERIA:
        raise LabelsError(f"{where}: criterion {entry['criterion']!r} is none of {', '.join(CRITERIA)}")
    if entry["label"] not in (True, False, None):
        raise LabelsError(f"{where}: label {entry['label']!r} is not true, false or null (skipped)")
    if not isinstance(entry["answer_sha256"], str) or not SHA256.fullmatch(entry["answer_sha256"]):
        raise LabelsError(f"{where}: answer_sha256 is not 64 lowercase hex digits")
    if not all(isinstance(entry[f], (str, int)) and not isinstance(entry[f], bool) for f in FIELDS[:3]):
        raise LabelsError(f"{where}: question_id, strategy and retriever must be strings")
    return {f: str(entry[f]) if f in FIELDS[:3] else entry[f] for f in FIELDS}


def read_labels(path: AnyPath | None) -> pd.DataFrame:
    """The labels of the file at `path` (none without a path or file); a `LabelsError` names the
    file and the first bad entry, or two entries that disagree on one answer."""
    if path is None or not path.exists():
        return pd.DataFrame(columns=list(FIELDS))
    try:
        found = json.loads(path.read_bytes())
    except IsADirectoryError:
        raise LabelsError(f"{path}: is a directory, not a labels file") from None
    except ValueError as exc:
        raise LabelsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(found, list):
        raise LabelsError(f"{path}: not a JSON list of labels")
    rows = [_entry(entry, f"{path}: label {n}") for n, entry in enumerate(found, 1)]
    frame = pd.DataFrame(rows, columns=list(FIELDS))
    decided = frame[frame["label"].notna()]
    clash = decided.groupby(MATCH)["label"].nunique()
    if (clash > 1).any():
        question, strategy, retriever, criterion, _ = clash[clash > 1].index[0]
        raise LabelsError(
            f"{path}: question {question} ({strategy}/{retriever}, {criterion}) is labelled both true "
            "and false for one answer"
        )
    return frame


def write_labels(path: AnyPath, labels: pd.DataFrame) -> None:
    """The labels as the file holds them, written whole and atomically."""
    entries = [{f: row[f] for f in FIELDS} for row in labels.astype(object).to_dict("records")]
    for entry in entries:  # pandas' missing value back to JSON null
        entry["label"] = entry["label"] if isinstance(entry["label"], bool) else None
    write_bytes((json.dumps(entries, indent=1, ensure_ascii=False) + "\n").encode(), path)


@dataclass
class LabelCounts:
    """What became of the labels file's entries: `used` labels (a label naming a current answer),
    `stale` ones (their answer changed since), `unmatched` entries naming no judged answer (each said:
    `question 999`, `strategy nosuch`, ...), and per (strategy, retriever, criterion) the `skipped`
    entries (null: shown, not labelled) naming a current answer."""

    used: int = 0
    stale: int = 0
    unmatched: list[str] = field(default_factory=list)
    skipped: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def warning(self) -> str | None:
        """`2 labels name no judged answer: question 999, strategy nosuch` (None: every one does)."""
        if not self.unmatched:
            return None
        n = len(self.unmatched)
        named = ", ".join(dict.fromkeys(self.unmatched))
        return f"{n} label{'s name' if n != 1 else ' names'} no judged answer: {named}"


def _unmatched(entries: pd.DataFrame, items: pd.DataFrame) -> list[str]:
    """What each entry naming no judged question and run names that nothing judged has."""
    known = {k: set(items[k]) for k in ("question_id", "strategy", "retriever")}
    runs = set(zip(items["question_id"], items["strategy"], items["retriever"]))
    said = []
    for q, s, r in zip(entries["question_id"], entries["strategy"], entries["retriever"]):
        if (q, s, r) in runs:
            continue
        wrong = [f"{k.replace('_id', '')} {v}" for k, v in zip(known, (q, s, r)) if v not in known[k]]
        said.append(", ".join(wrong) or f"question {q} of {s}/{r}")
    return said


def attach_labels(items: pd.DataFrame, labels: pd.DataFrame) -> tuple[pd.DataFrame, LabelCounts]:
    """`items` (judged_items) with a nullable `<criterion>_label` column per criterion: the label
    naming the item's run, question and answer text; and what became of the entries (`LabelCounts`)."""
    run = ["question_id", "strategy", "retriever"]
    entries = labels.astype({k: str for k in MATCH})
    decided = entries[entries["label"].notna()].drop_duplicates(MATCH)
    out = items.astype({k: str for k in [*run, "answer_sha256"]})
    for criterion in CRITERIA:
        mine = decided[decided["criterion"] == criterion]
        merged = out[[*run, "answer_sha256"]].merge(mine, on=[*run, "answer_sha256"], how="left")
        out[f"{criterion}_label"] = pd.array(merged["label"].tolist(), dtype="boolean")
    used = sum(int(out[f"{c}_label"].notna().sum()) for c in CRITERIA)
    known = decided.merge(out[run].drop_duplicates(), on=run, how="inner")
    skips = entries[entries["label"].isna()].drop_duplicates(MATCH)
    current = skips.merge(out[[*run, "answer_sha256"]], on=[*run, "answer_sha256"], how="inner")
    skipped = current.groupby(["strategy", "retriever", "criterion"]).size()
    return out, LabelCounts(
        used=used,
        stale=len(known) - used,
        unmatched=_unmatched(entries, out),
        skipped={k: int(v) for k, v in skipped.items()},
    )


def label_order(items: pd.DataFrame, seed: int = 0, first: str | None = None) -> list[int]:
    """The index of `items` in the order people label them: the run `first` (`strategy/retriever`,
    the served one, whose figures people read) in random order, then the others, random within each
    run and interleaved in proportion to their sizes (systematic), so that the first n of them are a
    stratified random sample: each run a simple random sample of its own items, about n x its share."""
    rng = np.random.default_rng(seed)
    placed: list[tuple[int, float, int]] = []
    for (strategy, retriever), group in items.groupby(["strategy", "retriever"], sort=True):
        order, offset = rng.permutation(group.index.to_numpy()), rng.random()
        served = int(f"{strategy}/{retriever}" != first)
        placed += [(served, (j + offset) / len(order), int(i)) for j, i in enumerate(order)]
    return [i for *_, i in sorted(placed)]


def with_label(labels: pd.DataFrame, entry: dict) -> pd.DataFrame:
    """`labels` with `entry` in place of any earlier label of the same answer and criterion."""
    same = (
        np.logical_and.reduce([labels[k].astype(str) == str(entry[k]) for k in MATCH]) if len(labels) else []
    )
    kept = labels[~np.asarray(same, dtype=bool)] if len(labels) else labels
    return pd.concat([kept, pd.DataFrame([entry], columns=list(FIELDS))], ignore_index=True)


def labelled(labels: pd.DataFrame, items: pd.DataFrame, criterion: str) -> Sequence[bool]:
    """Per item, whether `labels` already say something (a label or a skip) of its answer on `criterion`."""
    mine = labels[labels["criterion"] == criterion]
    seen = set(zip(mine["question_id"], mine["strategy"], mine["retriever"], mine["answer_sha256"]))
    return [
        (q, s, r, h) in seen
        for q, s, r, h in zip(
            items["question_id"], items["strategy"], items["retriever"], items["answer_sha256"]
        )
    ]
