"""A gold question and its evidence, as the pipeline holds them once read (`labels` reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_pipeline.lib.core import UNAUTHORIZED


class QuestionsError(ValueError):
    """The questions file is malformed; the message names the file, question and field."""


@dataclass(frozen=True)
class Evidence:
    note: str
    section: str | None
    text: str


@dataclass(frozen=True)
class Question:
    id: int | str
    q: str
    category: str
    evidence: tuple[Evidence, ...]
    answer_pattern: str | None = None
    groups: tuple[str, ...] | None = None  # the asker's groups; None: may read every note
    commit: str | None = None  # the notes commit the evidence was labelled against
    critical: bool = False  # a release that newly misses it is rejected
    generated: bool = False  # written by `gold generate`, not by hand: reported apart
    split: str | None = None  # `dev` or `test` as the file says (None: by its id) or as a frame resolved it

    @property
    def source(self) -> str:
        """`generated` or `hand`: the question set a report row is computed on."""
        return "generated" if self.generated else "hand"

    @property
    def answerable(self) -> bool:
        """Scored for recall: it has evidence its asker may read."""
        return bool(self.evidence) and self.category != UNAUTHORIZED
