"""The judges behind one interface, and `judge_all`: every item on every criterion, repeated, and the
position-bias check.

`rules` runs offline (rules.py). `ollama` and `openai` are the answerer's chat backends
(lib/answers/llm.py: the same client, deadlines and retries), asked through its cache keyed by
(judge_version, prompt hash, repeat): a rerun asks nothing, and a changed passage re-asks only the
prompts that hold it.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rag_pipeline.lib.answers import ChatLLM, Prompt, answer_all, make_llm, reuse_line
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.core.fingerprint import code_of, fingerprint
from rag_pipeline.lib.judging import rules
from rag_pipeline.lib.judging.items import Item
from rag_pipeline.lib.judging.rubric import CRITERIA, INVALID, judge_prompt, parse_verdict

log = logging.getLogger("rag_pipeline.judging")
Verdict = tuple[str, str]  # (yes | no | invalid, reason)
RUN = ["strategy", "retriever", "llm_version"]
# answers/judgments.parquet (a contract)
JUDGMENT_COLUMNS = [
    "question_id",
    "split",
    "strategy",
    "retriever",
    "llm_version",
    "judge_version",
    "criterion",
    "repeat",
    "verdict",
    "reason",
]


class Judge(ABC):
    backend: str
    default_repeats: int
    position_bias: bool  # whether the passages' order can sway it (then it is checked)

    @property
    @abstractmethod
    def judge_version(self) -> str: ...

    @abstractmethod
    def verdicts(
        self, items: Sequence[Item], criterion: str, repeat: int, reverse: bool = False
    ) -> tuple[list[Verdict], int]:
        """Each item's verdict on `criterion` at its `repeat`-th asking (`reverse`: the passages
        listed last first), and how many requests were sent."""


class RulesJudge(Judge):
    backend, default_repeats, position_bias = "rules", 1, False

    @property
    def judge_version(self) -> str:
        return f"rules@{code_of(self)}"  # the rules' code

    def verdicts(self, items, criterion, repeat, reverse=False):
        return [rules.RULES[criterion](item) for item in items], 0


class ModelJudge(Judge):
    """A chat model asked for one JSON verdict per prompt (rubric.py)."""

    default_repeats, position_bias = 3, True

    def __init__(self, llm: ChatLLM, cache_dir: Path):
        self.llm, self.cache_dir, self.backend = llm, cache_dir, llm.backend
        self.reused: Counter[str] = Counter()  # verdicts read that another server gave, by server

    @property
    def judge_version(self) -> str:
        """The model as its server names it, how it samples, and the code: the verdict cache's key."""
        code = fingerprint([ModelJudge, type(self.llm)])[:12]  # the prompt, how a reply is read, the client
        return f"{self.llm.model_version}|{self.llm.sampling.version()}|judge@{code}"

    def verdicts(self, items, criterion, repeat, reverse=False):
        prompts = [Prompt(i.question_id, i.question, (), judge_prompt(i, criterion, reverse)) for i in items]
        replies, asked = answer_all(
            self.llm, prompts, self.cache_dir, repeat=repeat, version=self.judge_version, reused=self.reused
        )
        return [parse_verdict(r.text) for r in replies], asked


def _model(backend: str) -> Callable[..., Judge]:
    def make(cache_dir: Path, **options: Any) -> Judge:
        return ModelJudge(make_llm(backend, timeout_var="RAG_JUDGE_TIMEOUT", **options), cache_dir)

    return make


JUDGES: dict[str, Callable[..., Judge]] = {
    "rules": lambda cache_dir, **options: RulesJudge(),
    "ollama": _model("ollama"),
    "openai": _model("openai"),
}


def make_judge(backend: str, cache_dir: Path, **options: Any) -> Judge:
    """`rules`, or `ollama` / `openai` with the chat backend's options (url, model, timeout, ...)."""
    if backend not in JUDGES:
        raise ValueError(f"unknown judge {backend!r}; choose one of {sorted(JUDGES)}")
    return JUDGES[backend](cache_dir, **options)


@dataclass
class Judged:
    rows: pd.DataFrame  # answers/judgments.parquet
    flips: dict[tuple[str, str, str], float]  # per run: the share of `faithful` verdicts reversed
    asked: int  # requests sent to the judge


def judge_all(judge: Judge, items: Sequence[Item], repeats: int, bias_sample: int) -> Judged:
    """Every item on every criterion, `max(repeats, answer repeats)` times: repeat r judges the
    answer of generation repeat r mod the answer repeats, at its own request repeat r. Then, for a
    judge the passages' order can sway, `position_flips`."""
    answer_repeats = 1 + max((i.repeat for i in items), default=0)
    rows, asked = [], 0
    for criterion in CRITERIA:
        for repeat in range(max(repeats, answer_repeats)):
            chosen = [i for i in items if i.repeat == repeat % answer_repeats]
            found, n = judge.verdicts(chosen, criterion, repeat)
            asked += n
            rows += [
                (i.question_id, i.split, *i.key[1:], judge.judge_version, criterion, repeat, verdict, reason)
                for i, (verdict, reason) in zip(chosen, found, strict=True)
            ]
    frame = pd.DataFrame(rows, columns=JUDGMENT_COLUMNS).astype({"repeat": "int64"})
    flips, n = position_flips(judge, items, frame, bias_sample) if judge.position_bias else ({}, 0)
    if getattr(judge, "reused", None):  # one line for the run: a model judge's verdicts of another server
        log.warning(reuse_line(judge.reused, judge.llm.url, judge.judge_version))
    return Judged(frame, flips, asked + n)


def position_flips(
    judge: Judge, items: Sequence[Item], rows: pd.DataFrame, sample: int
) -> tuple[dict[tuple[str, str, str], float], int]:
    """Per run, `faithful` asked again with the passages in reverse order on `sample` items of two
    passages or more (the same ones each time: the first by a hash of their question id): the share
    whose verdict differs from the first repeat's, of those valid both times; and the requests sent."""
    first = rows[(rows["criterion"] == "faithful") & (rows["repeat"] == 0)]
    before = dict(zip(map(tuple, first[["question_id", *RUN]].to_numpy()), first["verdict"]))
    runs: dict[tuple[str, str, str], list[Item]] = {}
    for item in items:
        if item.repeat == 0 and len(item.passages) > 1:
            runs.setdefault((item.strategy, item.retriever, item.llm_version), []).append(item)
    flips, asked = {}, 0
    for run, members in runs.items():
        chosen = sorted(members, key=lambda i: text_hash(i.question_id))[:sample]
        found, n = judge.verdicts(chosen, "faithful", 0, reverse=True)
        asked += n
        pairs = [(before[i.key], v) for i, (v, _) in zip(chosen, found, strict=True)]
        valid = [(a, b) for a, b in pairs if INVALID not in (a, b)]
        flips[run] = sum(a != b for a, b in valid) / len(valid) if valid else float("nan")
    return flips, asked
