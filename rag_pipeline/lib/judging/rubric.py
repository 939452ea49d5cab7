"""The three criteria, their written rubric, the prompt a model judge is sent, and the strict reading
of its reply.

The prompt holds only what the question's asker may read: the passages the answerer was given and,
for `correct`, the gold evidence from notes the asker may read (`Item` is built so). Every piece of
text that is not ours (question, passages, reference, answer) is fenced as data, as the answer
prompts fence their passages (`rag_pipeline.lib.core.Fence`). The prompt's version is a digest of
these texts, so a changed word of the rubric is a new `judge_version`.
"""

from __future__ import annotations

import json

from rag_pipeline.lib.answers import ABSTAIN
from rag_pipeline.lib.core import Fence, clipped
from rag_pipeline.lib.judging.items import ANSWERABLE, Item

YES, NO, INVALID = "yes", "no", "invalid"
MAX_REASON = 1000  # characters of a verdict's reason kept (judgments.parquet): "one short sentence"
TOO_LONG = "reply not read: "  # how a judge's reply longer than RAG_MAX_REPLY is kept (`judges.py`)

RUBRIC = {
    "faithful": "yes when every claim of the answer is supported by the passages given to the answerer "
    "(stated there, or following from them at once); an answer that declines makes no claim: yes. "
    "no when any claim is missing from the passages, goes beyond them or contradicts them, or when "
    "the answer makes claims and no passage was given.",
    "correct": "With a reference: yes when the answer states what the reference says, agreeing with it "
    "and covering all of it; no when it contradicts it, leaves part of it out or declines. Without a "
    "reference (the notes hold no answer its asker may read): yes only when the answer declines.",
    "cites_support": "yes when the answer cites at least one passage as [n] and each cited passage "
    "supports the sentence that cites it; an answer that declines: yes. no when a cited passage does "
    "not support its sentence, a citation names a passage not given, or the answer cites nothing.",
}
CRITERIA = tuple(RUBRIC)

TEMPLATE = """You judge one answer of a question-answering system on one criterion.

Criterion: {criterion}
Rubric: {rubric}

{rule} An answer that declines is exactly the line {abstain}.

{blocks}

Reply with exactly one JSON object and nothing else, in this form:
{{"verdict": "yes" or "no", "reason": "one short sentence"}}"""
NO_PASSAGE = "(none: the answerer was given no passage)"
NO_REFERENCE = (
    "(none: the notes hold no answer to this question that its asker may read; "
    "the answer is correct only if it declines)"
)


def numbered(passages: tuple[str, ...], reverse: bool = False) -> str:
    """The passages as the answerer saw them numbered; `reverse` lists them last first, each keeping
    its number (the position-bias check)."""
    shown = [f"[{n}] {text}" for n, text in enumerate(passages, 1)]
    return "\n\n".join(reversed(shown) if reverse else shown) or NO_PASSAGE


def judge_prompt(item: Item, criterion: str, reverse: bool = False) -> str:
    """The prompt asking for `item`'s verdict on `criterion`: `correct` shows the reference instead of
    the passages."""
    if criterion == "correct":
        known = item.kind == ANSWERABLE and item.evidence
        middle = ("reference", "\n".join(item.evidence)) if known else None
    else:
        middle = ("passages", numbered(item.passages, reverse))
    shown = [("question", item.question), *([middle] if middle else []), ("answer", item.answer)]
    # a digest of what this prompt shows, and only that: a passage the `correct` prompt does not
    # show changes nothing of it, so nothing is asked again
    fence = Fence.around(*(text for _, text in shown))
    blocks = [fence.wrap(text, f'name="{name}"') for name, text in shown]
    if middle is None:
        blocks.insert(1, NO_REFERENCE)
    return TEMPLATE.format(
        criterion=criterion,
        rubric=RUBRIC[criterion],
        rule=fence.rule("data to judge"),
        abstain=ABSTAIN,
        blocks="\n\n".join(blocks),
    )


def parse_verdict(reply: str) -> tuple[str, str]:
    """(verdict, reason) of a judge's reply: exactly one JSON object with a `verdict` of "yes" or "no"
    and a string `reason`, and nothing else. Anything else is INVALID, never repaired or guessed;
    its reason quotes the reply's start. A reply too long to be read is INVALID, saying so; a reason
    is kept to `MAX_REASON` characters."""
    text = reply.strip()
    if text.startswith(TOO_LONG):
        return INVALID, clipped(text, MAX_REASON)
    try:
        found = json.loads(text)
    except ValueError:
        return INVALID, f"not one JSON object: {text[:120]!r}"
    if (
        not isinstance(found, dict)
        or set(found) != {"verdict", "reason"}
        or found["verdict"] not in (YES, NO)
        or not isinstance(found["reason"], str)
    ):
        return INVALID, f'not {{"verdict": "yes"|"no", "reason": "..."}}: {text[:120]!r}'
    return found["verdict"], clipped(found["reason"], MAX_REASON)
