"""How many choices the test questions have confirmed: the ledger counts every look at them.

A test split stays an honest check only while few choices are confirmed on it: each look that
decides something lets its questions shape what is kept, and after enough looks the test questions
are over-fitted too. `experiments/looks.parquet` holds one row per look (a new experiment's verdict,
each of a tuning session's trials and its best trial's confirmation): `time`, `questions_sha256`,
`experiment`, `by`, and the questions themselves, each as `id:digest` of its text and evidence
(`question_digest`): `test_questions`, those looked at, and `dev_questions`, those that chose.

A split's count is the looks that saw any of its test questions, so adding or editing a question keeps
the count of those already looked at (an edited question is a new one); a test question that chose as
a development question in an earlier look (RAG_TEST_SHARE raised, a `split` field changed) is said.
It is a record, never pruned, and nothing the pipeline computes reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame, write_frame
from rag_pipeline.lib.evaluation.experiments import read_index, read_outcomes, record_experiment
from rag_pipeline.lib.questions import DEV, TEST

LOOKS = "looks.parquet"
LOOK_COLUMNS = ["time", "questions_sha256", "experiment", "by", "test_questions", "dev_questions"]


@dataclass(frozen=True)
class Split:
    """An experiment's questions by split, each `id:digest`; `questions_sha256` its questions file's."""

    test: frozenset[str]
    dev: frozenset[str]
    questions_sha256: str

    @classmethod
    def of(cls, rows: pd.DataFrame, questions_sha256: str) -> Split:
        """From ledger rows (`question_id`, `question_sha256`, `split`, `answerable`): the answerable
        questions, those the verdict measures (a ledger older than splits has none: nothing is test)."""
        if "split" not in rows:
            return cls(frozenset(), frozenset(), questions_sha256)
        rows = rows[rows["answerable"].astype(bool)]
        keys = rows["question_id"].astype(str) + ":" + rows["question_sha256"].astype(str)
        return cls(
            frozenset(keys[rows["split"] == TEST]), frozenset(keys[rows["split"] == DEV]), questions_sha256
        )


@dataclass(frozen=True)
class Reuse:
    """What the looks say of a split: `looks` that saw its test questions, how many of them are
    `fresh` (never looked at), and how many `moved` (chose as development questions in a look)."""

    looks: int
    n_test: int
    fresh: int
    moved: int


def read_looks(root: AnyPath) -> pd.DataFrame:
    path = root / LOOKS
    looks = read_frame(path) if path.exists() else pd.DataFrame(columns=LOOK_COLUMNS)
    for column in ("test_questions", "dev_questions"):  # a row recorded before they were
        if column not in looks:
            looks[column] = None
    return looks


def record_look(root: AnyPath, split: Split, experiment: str, by: str, now: datetime | None = None) -> None:
    """Count one look at the test questions of `split`, chosen on its development questions."""
    row = {
        "time": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "questions_sha256": split.questions_sha256,
        "experiment": experiment,
        "by": by,
        "test_questions": sorted(split.test),
        "dev_questions": sorted(split.dev),
    }
    add_looks(root, pd.DataFrame([row]))


def record_confirmed(root: AnyPath, *recorded: object, by: str | None) -> str:
    """`record_experiment(root, *recorded)`, counting one look at its test questions `by` who
    confirmed a choice on them when the experiment is new (None: nothing was confirmed); its id."""
    known = set(read_index(root)["id"])
    experiment = record_experiment(root, *recorded)
    if by is not None and experiment not in known:
        record_look(root, experiment_split(root, experiment), experiment, by)
    return experiment


def import_looks(source: AnyPath, root: AnyPath, experiment: str, tune: str) -> None:
    """The looks experiment `experiment` took in the ledger `source` (a trial's verdict confirmed on the
    test questions too) counted in the ledger `root`, by the tuning session `tune`."""
    looks = read_looks(source)
    taken = looks[looks["experiment"] == experiment]
    if len(taken):
        add_looks(root, taken.assign(by=[f"tune {tune}: {by}" for by in taken["by"]]))


def experiment_split(root: AnyPath, experiment: str, index: pd.DataFrame | None = None) -> Split:
    """The questions of `experiment` by split, from its outcomes."""
    index = read_index(root) if index is None else index
    sha = str(index.loc[index["id"] == experiment, "questions_sha256"].iloc[0])
    return Split.of(read_outcomes(root, experiment).drop_duplicates("question_id"), sha)


def experiment_reuse(root: AnyPath, experiment: str, index: pd.DataFrame | None = None) -> Reuse:
    """How the looks recorded in the ledger `root` have used the test questions of `experiment`."""
    return reuse(read_looks(root), experiment_split(root, experiment, index), experiment)


def add_looks(root: AnyPath, rows: pd.DataFrame) -> None:
    """`rows` appended to the looks."""
    looks = read_looks(root)
    looks = pd.concat([looks, rows[LOOK_COLUMNS]], ignore_index=True) if len(looks) else rows[LOOK_COLUMNS]
    write_frame(looks[LOOK_COLUMNS].reset_index(drop=True), root / LOOKS)


def _questions(value: object) -> set[str]:
    return set() if value is None or (isinstance(value, float) and value != value) else set(value)


def reuse(looks: pd.DataFrame, split: Split, experiment: str | None = None) -> Reuse:
    """The `Reuse` of `split` (of `experiment`, whose own looks are no earlier look) as `looks`
    (`read_looks`) record it; a look recorded before the looks named their questions counts when it
    was of the same questions file."""
    count, seen, chose = 0, set(), set()
    rows = zip(
        looks["questions_sha256"], looks["test_questions"], looks["dev_questions"], looks["experiment"]
    )
    for sha, test, dev, of in rows:
        tested = _questions(test)
        if tested & split.test or (test is None and sha == split.questions_sha256):
            count += 1
        if of != experiment:
            seen |= tested
            chose |= _questions(dev)
    return Reuse(count, len(split.test), len(split.test - seen), len(split.test & chose))


def looks_sentence(found: Reuse, limit: int) -> str:
    """What the verdict and `experiments list` say about a test split's reuse; a warning past `limit`
    (RAG_TEST_LOOKS), and one for test questions that chose as development questions before."""
    if not found.n_test:
        return "no test question: nothing is confirmed on the test split"
    said = (
        f"the test split ({found.n_test} question{'' if found.n_test == 1 else 's'}) has confirmed "
        f"{found.looks} choice{'' if found.looks == 1 else 's'}"
    )
    if found.fresh and found.fresh < found.n_test:
        said += f" ({found.fresh} of its questions looked at for the first time)"
    if found.moved:
        said += (
            f"; warning: {found.moved} of its questions chose as development questions in an earlier "
            "look (RAG_TEST_SHARE raised, or a `split` field changed): their test figures flatter what "
            "they chose"
        )
    if found.looks > limit:
        said += (
            f"; warning: past RAG_TEST_LOOKS={limit} it is over-used, its figures now flatter what was "
            "chosen on it: add new test questions"
        )
    return said
