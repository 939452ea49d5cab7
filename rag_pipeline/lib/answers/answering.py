"""The answer stage as one call: the runs' prompt units from their retrieval lanes, every prompt
answered (through the cache) and scored, the per-run summary."""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.answers.cache import answer_all
from rag_pipeline.lib.answers.llm import LLM
from rag_pipeline.lib.answers.prompts import make_prompt
from rag_pipeline.lib.answers.scoring import BASELINE_STRATEGY, answer_summary, score_answers
from rag_pipeline.lib.answers.units import Unit, prompt_units
from rag_pipeline.lib.evaluation import to_markdown
from rag_pipeline.lib.questions import Question

Run = tuple[str, str]
# what an answer's row is, for its data version: a change elsewhere (a latency) re-runs nothing
ANSWER_COLUMNS = ["question_id", "split", "strategy", "retriever", "llm_version", "repeat", "answer", "cited"]


def answered_runs(
    setting: str,
    summary: pd.DataFrame,
    baseline: Run,
    served: Run,
    chosen: Run | None,
) -> list[Run]:
    """The runs named in `setting`, or the baseline and the verdict's `chosen` run (chosen on the
    development questions: no test question picks what is answered); and the `served` run (the
    release run, whose abstention the release gate compares) in any case. None with no answerable
    question: there is no best run, only the baselines are answered."""
    if not summary["n_questions"].max() > 0:
        return []
    if setting.strip():
        runs = [tuple(r.strip().split("/", 1)) for r in setting.split(",") if r.strip()]
        known = set(zip(summary["strategy"], summary["retriever"]))
        for run in runs:
            if run not in known:
                raise ValueError(
                    f"RAG_ANSWER_RUNS: {'/'.join(run)} is not an evaluated run; "
                    f"known: {', '.join(sorted('/'.join(k) for k in known))}"
                )
        return list(dict.fromkeys([*runs, served]))
    return list(dict.fromkeys([baseline, *([chosen] if chosen else []), served]))


def run_units(
    retrieved: Mapping[str, pd.DataFrame],
    runs: Sequence[Run],
    questions: Sequence[Question],
    spans: dict,
    cleaned_notes: pd.DataFrame,
    context_k: int,
    context_chars: int,
) -> dict[Run, dict[str, list[Unit]]]:
    """Per run (the `none` and `oracle` baselines and `runs`), per question, the units its prompt
    passes, from the runs' retrieval lanes (`retrieved`, by strategy; `prompt_units`)."""
    ranked = {(s, r): retrieved[s][retrieved[s]["retriever"] == r] for s, r in runs}
    return prompt_units(questions, spans, cleaned_notes, ranked, context_k, context_chars, BASELINE_STRATEGY)


@dataclass
class Answered:
    frame: pd.DataFrame  # one scored row per question, run and repeat
    summary: pd.DataFrame  # per run (answer_summary)
    asked: int  # prompts asked of the backend (the rest came from the cache)
    reused: Counter = field(default_factory=Counter)  # replies another server gave, by server


def answer_runs(
    llm: LLM,
    units: dict[Run, dict[str, list[Unit]]],
    questions: Sequence[Question],
    spans: dict,
    repeats: int,
    cache_dir: Path,
) -> Answered:
    """Every run's prompts answered `repeats` times through the answer cache, and scored."""
    frames = []
    asked, reused = 0, Counter()
    for (strategy, retriever), by_question in units.items():
        prompts = [make_prompt(str(q.id), q.q, by_question[str(q.id)]) for q in questions]
        for repeat in range(repeats):
            replies, n = answer_all(llm, prompts, cache_dir, repeat=repeat, reused=reused)
            asked += n
            frames.append(
                score_answers(
                    prompts,
                    replies,
                    questions,
                    spans,
                    strategy=strategy,
                    retriever=retriever,
                    llm_version=llm.llm_version,
                    repeat=repeat,
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    return Answered(frame, answer_summary(frame, questions), asked, reused)


def answers_md(frame: pd.DataFrame) -> str:
    """The first 200 answers as a table, each cut to 60 characters."""
    shown = frame[
        ["question_id", "strategy", "retriever", "answer", "abstained", "correct", "citation_valid"]
    ]
    runs = [
        r if s == BASELINE_STRATEGY else f"{s}/{r}" for s, r in zip(shown["strategy"], shown["retriever"])
    ]
    shown = shown.drop(columns=["strategy", "retriever"]).assign(answer=shown["answer"].str.slice(0, 60))
    return to_markdown(
        shown.assign(run=runs)[
            ["question_id", "run", "answer", "abstained", "correct", "citation_valid"]
        ].head(200)
    )
