"""Refresh the questions file from the drift table: carried questions move to the indexed commit,
stale ones are relabelled with the suggested evidence when it is close enough. Pure."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence

import pandas as pd

# Dice over character 2-3-grams; see `refresh` for why 0.7
RELABEL_THRESHOLD = 0.7


def _ready(item: dict, rows: list[dict], threshold: float) -> str | None:
    """Why a stale question cannot be relabelled automatically (None: it can)."""
    for r in rows:
        if r["evidence_status"] != "stale":
            continue
        score = r["suggestion_score"]
        if not isinstance(r["suggested_evidence"], str) or pd.isna(score):
            return f"no suggestion for {r['field']} (note {r['slug']!r} absent at the indexed commit or nothing in it alike)"
        if score < threshold:
            return f"best suggestion for {r['field']} scores {score:.2f} < {threshold}"
    pattern = item.get("answer_pattern")
    if pattern:
        fields = [k for k in ("evidence", "evidence2") if item.get(k)]
        new = {r["field"]: r["suggested_evidence"] for r in rows if r["evidence_status"] == "stale"}
        before = " ".join(item[k] for k in fields)
        after = " ".join(new.get(k, item[k]) for k in fields)
        try:
            broken = bool(re.search(pattern, before)) and not re.search(pattern, after)
        except re.error:
            broken = False  # not a regex this check can use; the answers stage reports it
        if broken:
            return f"answer_pattern {pattern!r} no longer matches the suggested evidence"
    return None


def refresh(
    items: Sequence[dict],
    drift: pd.DataFrame,
    indexed_commit: str,
    threshold: float = RELABEL_THRESHOLD,
    pin: bool = False,
) -> tuple[list[dict], list[str]]:
    """The questions file's items brought up to `indexed_commit`, and one line per question touched
    or left stale. `items` are not mutated.

    - carried: `commit` becomes the indexed commit (the evidence is still found exactly once);
    - stale: when every stale evidence has a suggestion scoring >= `threshold`, and an
      `answer_pattern` that matched the old evidence still matches the new one, the evidence (and
      its section, when the suggestion lies under another heading) is replaced, `commit` becomes the
      indexed commit and `"relabelled": true` is set; otherwise the question is left as it is;
    - `pin`: an `ok` answerable question without a `commit` gets the indexed one.

    The default threshold 0.7 lies between two measurements on the bundled corpus: the best span
    of any other note for a bundled evidence scores at most 0.61 (1,196 pairs, 99th percentile 0.46;
    templated sentences such as "p99 レイテンシは 120 ms から 38 ms" vs "p95 レイテンシは 1.4 秒から
    180 ms" reach 0.6 without being the same fact), while an evidence edited in place (a number
    changed: 24 cases, 3 characters replaced mid-evidence: 45 cases) is found again exactly every
    time, scoring 0.74-0.90."""
    by_question: dict[str, list[dict]] = {}
    for row in drift.to_dict("records"):
        by_question.setdefault(str(row["question_id"]), []).append(row)
    out, changes = [], []
    short = indexed_commit[:12]
    for item in items:
        new = copy.deepcopy(item)
        out.append(new)
        qid = str(item.get("id"))
        rows = by_question.get(qid)
        if rows is None:
            if pin and item.get("slug") and not item.get("commit"):
                new["commit"] = indexed_commit
                changes.append(f"question {qid}: pinned to {short}")
            continue
        status = rows[0]["gold_status"]
        if status == "carried":
            new["commit"] = indexed_commit
            commits = {c for r in rows for c in r["changed_in"]}
            changes.append(f"question {qid}: carried to {short} (note changed in {len(commits)} commit(s))")
        elif status == "stale":
            why = _ready(item, rows, threshold)
            if why:
                changes.append(f"question {qid}: left stale: {why}")
                continue
            for r in rows:
                if r["evidence_status"] != "stale":
                    continue
                new[r["field"]] = r["suggested_evidence"]
                section = "section" + r["field"].removeprefix("evidence")
                if item.get(section) and r["suggested_section"] and r["suggested_section"] != item[section]:
                    new[section] = r["suggested_section"]
                changes.append(
                    f"question {qid}: {r['field']} {r['evidence']!r} -> {r['suggested_evidence']!r} "
                    f"(score {r['suggestion_score']:.2f})"
                )
            new["commit"] = indexed_commit
            new["relabelled"] = True
    return out, changes


def drift_md(drift: pd.DataFrame) -> str:
    """The stale gold labels (left out of scoring) with the span suggested for each, as Markdown for
    the summary page; nothing when every label holds."""
    stale = drift[drift["evidence_status"] == "stale"]
    if stale.empty:
        return ""
    lines = []
    for r in stale.itertuples(index=False):
        changed = ", ".join(c[:7] for c in r.changed_in) or "none"
        hint = (
            f"suggested «{r.suggested_evidence}» ({r.suggestion_score:.2f})"
            if isinstance(r.suggested_evidence, str)
            else "no suggestion (the note is gone)"
        )
        lines.append(f"- question {r.question_id} (`{r.slug}`, changed in {changed}): «{r.evidence}»; {hint}")
    carried = int((drift["gold_status"] == "carried").sum())
    head = f"\n\n**Stale gold labels** ({len(stale)}, not scored; {carried} carried, scored):\n\n"
    return head + "\n".join(lines) + "\n\n`python -m rag_pipeline.gold refresh` writes a relabelled copy."


def stale_suggestions(drift: pd.DataFrame) -> list[str]:
    """Lines for a person: each question whose gold label went stale (left out of every score), with
    the evidence the drift report suggests instead, and how to take the suggestions."""
    if "gold_status" not in drift:
        return []
    stale = drift[drift["gold_status"] == "stale"]
    if stale.empty:
        return []
    lines = [f"{stale['question_id'].nunique()} question(s) with stale gold labels (not scored):"]
    for row in stale.itertuples():
        found = row.suggested_evidence if isinstance(row.suggested_evidence, str) else None
        hint = f"suggested {found[:50]!r} (score {row.suggestion_score:.2f})" if found else "no suggestion"
        lines.append(f"  question {row.question_id} ({row.slug}): {str(row.evidence)[:40]!r} -> {hint}")
    lines.append(
        "  `python -m rag_pipeline.gold refresh --out <file>` writes the suggestions for you to review"
    )
    return lines
