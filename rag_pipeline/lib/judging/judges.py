"""The judges behind one interface, and `judge_all`: every item on every criterion, repeated, and the
position-bias check.

`rules` runs offline (rules.py). `ollama` and `openai` are the answerer's chat backends
(lib/answers/llm.py: the same client, deadlines and retries), asked through its cache keyed by
(judge_version, prompt hash, repeat): a rerun asks nothing, and a changed passage re-asks only the
prompts that hold it.

Position bias is measured net of the judge's own noise: a sampled judge disagrees with itself on one
prompt asked twice, so the reversed prompt is asked at every repeat, and the share of forward and
reversed verdicts that differ is read against the share of two verdicts in the same order that differ.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rag_pipeline.lib.answers import ChatLLM, LLMError, Prompt, Reply, answer_all, make_llm, reuse_line
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.core.fingerprint import code_of, fingerprint
from rag_pipeline.lib.core.http import TooLong
from rag_pipeline.lib.judging import rules
from rag_pipeline.lib.judging.items import Item
from rag_pipeline.lib.judging.rubric import CRITERIA, INVALID, TOO_LONG, judge_prompt, parse_verdict

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

    def by_construction(self, llm_version: str, criterion: str) -> bool:
        """Whether `criterion` holds for every answer of the answerer `llm_version` whatever it says:
        then its figure measures nothing of the answers."""
        return False

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

    def by_construction(self, llm_version: str, criterion: str) -> bool:
        return criterion in rules.BY_CONSTRUCTION.get(llm_version.split(":", 1)[0].split("|", 1)[0], ())

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
        """The model as its server names it, how it samples, the bytes of a reply read, and the code:
        the verdict cache's key."""
        code = fingerprint([ModelJudge, type(self.llm)])[:12]  # the prompt, how a reply is read, the client
        llm = self.llm
        return f"{llm.model_version}|{llm.sampling.version()}|reply={llm.http.max_bytes}|judge@{code}"

    @property
    def concurrency(self) -> int:  # prompts asked at once (`answer_all` asks the judge as a model)
        return self.llm.concurrency

    @property
    def url(self) -> str:  # the server the cached verdicts name
        return self.llm.url

    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:
        """The judge model's reply; one longer than RAG_MAX_REPLY (not read past it) is a reply that
        says so, an invalid verdict (`parse_verdict`), kept in the cache as any other."""
        try:
            return self.llm.answer(prompt, repeat)
        except LLMError as exc:
            if not isinstance(exc.__cause__, TooLong):
                raise
            return Reply(f"{TOO_LONG}{exc}")

    def verdicts(self, items, criterion, repeat, reverse=False):
        prompts = [Prompt(i.question_id, i.question, (), judge_prompt(i, criterion, reverse)) for i in items]
        replies, asked = answer_all(
            self, prompts, self.cache_dir, repeat=repeat, version=self.judge_version, reused=self.reused
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


@dataclass(frozen=True)
class Flips:
    """A run's position-bias check on `faithful`: `across` the share of (forward, reversed) verdict
    pairs that differ, `same` the share of pairs asked in one order that differ (the judge's own
    noise; NaN with one repeat), and `rate` = across - same, the flips the order itself causes."""

    across: float
    same: float

    @property
    def rate(self) -> float:
        return self.across - self.same


@dataclass
class Judged:
    rows: pd.DataFrame  # answers/judgments.parquet
    flips: dict[tuple[str, str, str], Flips]  # per run (strategy, retriever, llm_version)
    asked: int  # requests sent to the judge
    by_construction: set[tuple[str, str]] = field(default_factory=set)  # (llm_version, criterion)


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
    constructed = {
        (i.llm_version, c) for i in items for c in CRITERIA if judge.by_construction(i.llm_version, c)
    }
    if getattr(judge, "reused", None):  # one line for the run: a model judge's verdicts of another server
        log.warning(reuse_line(judge.reused, judge.llm.url, judge.judge_version))
    return Judged(frame, flips, asked + n, constructed)


def _disagreement(pairs: list[tuple[str, str]]) -> float:
    valid = [(a, b) for a, b in pairs if INVALID not in (a, b)]
    return sum(a != b for a, b in valid) / len(valid) if valid else float("nan")


def position_flips(
    judge: Judge, items: Sequence[Item], rows: pd.DataFrame, sample: int
) -> tuple[dict[tuple[str, str, str], Flips], int]:
    """Per run, `faithful` asked again at every repeat with the passages in reverse order, on `sample`
    questions whose prompt lists two passages or more (the same ones each time: the first by a hash of
    their id); `Flips` over the pairs of verdicts on one answer (one generation repeat), and the
    requests sent."""
    faithful = rows[rows["criterion"] == "faithful"]
    forward = dict(zip(map(tuple, faithful[["question_id", *RUN, "repeat"]].to_numpy()), faithful["verdict"]))
    repeats = sorted(set(faithful["repeat"]))
    answer_repeats = 1 + max((i.repeat for i in items), default=0)
    runs: dict[tuple[str, str, str], dict[int, list[Item]]] = {}
    for item in items:
        if len(item.passages) > 1:
            run = runs.setdefault((item.strategy, item.retriever, item.llm_version), {})
            run.setdefault(item.repeat, []).append(item)
    flips, asked = {}, 0
    for run, generations in runs.items():
        ids = sorted({i.question_id for i in generations.get(0, [])}, key=text_hash)[:sample]
        chosen = set(ids)
        reversed_: dict[tuple[str, int], str] = {}
        for repeat in repeats:
            asking = [i for i in generations.get(repeat % answer_repeats, []) if i.question_id in chosen]
            found, n = judge.verdicts(asking, "faithful", repeat, reverse=True)
            asked += n
            reversed_ |= {(i.question_id, repeat): v for i, (v, _) in zip(asking, found, strict=True)}
        one_answer = [(a, b) for a in repeats for b in repeats if a % answer_repeats == b % answer_repeats]
        across, same = [], []
        for qid in ids:
            f = {r: forward.get((qid, *run, r)) for r in repeats}
            r_ = {r: reversed_.get((qid, r)) for r in repeats}
            across += [(f[a], r_[b]) for a, b in one_answer if f[a] and r_[b]]
            same += [(f[a], f[b]) for a, b in one_answer if a < b and f[a] and f[b]]
            same += [(r_[a], r_[b]) for a, b in one_answer if a < b and r_[a] and r_[b]]
        flips[run] = Flips(_disagreement(across), _disagreement(same))
    return flips, asked
