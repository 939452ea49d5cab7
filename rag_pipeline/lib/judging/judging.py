"""The judging stage as one call: every answered run's answers judged, people's labels attached,
the judged summary, and the pages that show it."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.answers import BASELINE_STRATEGY, Unit
from rag_pipeline.lib.core import content_version
from rag_pipeline.lib.evaluation import short, to_markdown
from rag_pipeline.lib.judging.items import items_frame, judge_items
from rag_pipeline.lib.judging.judges import JUDGMENT_COLUMNS, Judge, judge_all
from rag_pipeline.lib.judging.labels import LabelCounts, attach_labels
from rag_pipeline.lib.judging.summary import (
    SHORT_KEY,
    SUMMARY_COLUMNS,
    item_scores,
    judged_summary,
    judged_table,
    question_scores,
    served_lines,
)
from rag_pipeline.lib.questions import Question


def judged_runs(answers: pd.DataFrame) -> list[tuple[str, str]]:
    """The answered runs the judge reads the passages of: every one but the `none` and `oracle` baselines."""
    return sorted(
        {(s, r) for s, r in zip(answers["strategy"], answers["retriever"]) if s != BASELINE_STRATEGY}
    )


@dataclass
class Judging:
    rows: pd.DataFrame  # answers/judgments.parquet
    items: pd.DataFrame  # answers/judged_items.parquet: what each judge prompt held, and its labels
    summary: pd.DataFrame  # reports/judged_summary.parquet
    scores: pd.DataFrame  # per item and judge_version, a score per criterion (question_scores)
    counts: LabelCounts  # what became of the labels file's entries
    asked: int  # requests sent to the judge

    def content_versions(self) -> tuple[str, str, str]:
        """What the outputs say: the verdicts, the summary and the labels attached."""
        return (
            content_version(self.rows, JUDGMENT_COLUMNS),
            content_version(self.summary, SUMMARY_COLUMNS),
            content_version(self.items, [c for c in self.items.columns if c.endswith("_label")]),
        )

    def figures(self, judge_version: str) -> dict[str, object]:
        """What the judging did: the judge, its requests, and what became of people's labels."""
        counts = self.counts
        return {
            "judge_version": short(judge_version, 60),
            "prompts_asked": self.asked,
            "figures": "corrected by people's labels" if counts.used else "the judge's, uncorrected",
            "labels_used": counts.used,
            "labels_stale": counts.stale,
            "labels_unmatched": len(counts.unmatched),
            "labels_skipped": sum(counts.skipped.values()),
        }

    def pages(self, served: str) -> dict[str, str]:
        """The judged summary as Markdown, and the lines of the `served` run."""
        return {
            f"judged {served}": "\n".join(f"- {line}" for line in served_lines(self.summary, served))
            or "not answered",
            "judged_summary": f"{to_markdown(judged_table(self.summary))}\n\n{SHORT_KEY}",
        }


def judge_answers(
    judge: Judge,
    repeats: int,
    bias_sample: int,
    answers: pd.DataFrame,
    units: Mapping[tuple[str, str], Mapping[str, Sequence[Unit]]],
    questions: Sequence[Question],
    cleaned_notes: pd.DataFrame,
    labels: pd.DataFrame,
) -> Judging:
    """Every answer judged `repeats` times on each criterion (with the bias checks on `bias_sample`
    items), the judge's mean corrected by people's `labels`, per run."""
    access = dict(zip(cleaned_notes["note"], cleaned_notes["access"]))
    items = judge_items(answers, units, questions, access)
    judged = judge_all(judge, items, repeats, bias_sample)
    scores = item_scores(judged.rows)
    table, counts = attach_labels(items_frame(items), labels)
    summary = judged_summary(scores, table, judged.flips, judged.by_construction, counts.skipped)
    return Judging(judged.rows, table, summary, question_scores(scores), counts, judged.asked)
