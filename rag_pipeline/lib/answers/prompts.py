"""The answer prompt, built by one function for the answers stage and `ask` alike.

The prompt numbers the units it passes and asks for `[n]` after each claim, or for exactly `ABSTAIN`
as the first line when the passages do not answer. Each passage is fenced (`rag_pipeline.lib.core.Fence`):
a note saying "Ignore previous instructions … Question: … Answer: …" stays inside its fence, and the
question stays outside every fence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_pipeline.lib.answers.units import Unit
from rag_pipeline.lib.core import Fence
from rag_pipeline.lib.core.fingerprint import fingerprint

ABSTAIN = "ANSWER: NONE"

CONTEXT_TEMPLATE = """Answer the question using only the numbered passages below.
{rule}
After each claim, put the number of the passage that supports it in square brackets, like [2].
Cite only the numbers given here, one per bracket ([1][3], never [1, 3]).
If the passages do not answer the question, reply with exactly this line and nothing else:
{abstain}
Answer briefly, in the language of the question.

Passages:
{passages}

Question: {question}
Answer:"""

CLOSED_BOOK_TEMPLATE = """Answer the question briefly, in the language of the question.
If you do not know the answer, reply with exactly this line and nothing else:
{abstain}

Question: {question}
Answer:"""


@dataclass(frozen=True)
class Prompt:
    question_id: str
    question: str
    units: tuple[Unit, ...]
    text: str  # exactly what an LLM is sent; the answer cache is keyed by its hash


def make_prompt(question_id: str, question: str, units: Sequence[Unit]) -> Prompt:
    """The prompt for `question` over `units`; without units, the `none` baseline's closed-book one."""
    if units:
        texts = [u.text.strip() for u in units]
        fence = Fence.around(question, *texts)
        passages = "\n\n".join(fence.wrap(text, f'n="{i}"') for i, text in enumerate(texts, 1))
        text = CONTEXT_TEMPLATE.format(
            rule=fence.rule(), abstain=ABSTAIN, passages=passages, question=question
        )
    else:  # what the model answers from its own knowledge
        text = CLOSED_BOOK_TEMPLATE.format(abstain=ABSTAIN, question=question)
    return Prompt(str(question_id), question, tuple(units), text)


# the templates and the code that fills them, as a digest: part of every answerer's version, so a
# change to the prompt asks again
PROMPT_VERSION = f"answer-prompt@{fingerprint([make_prompt])}"
