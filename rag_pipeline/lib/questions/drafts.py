"""A draft questions file: candidates from the offline generator (and the chat model with
`--llm`), verified, spread evenly over the categories asked for, plus leak-test questions."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_pipeline.lib.questions.generate import (
    OFFLINE_CATEGORIES,
    Candidate,
    Note,
    offline_candidates,
    unauthorized,
)
from rag_pipeline.lib.questions.prompted import LLM_CATEGORIES, Asker, llm_candidates
from rag_pipeline.lib.questions.verify import N_CHARS, N_WORDS, verify

CATEGORIES = OFFLINE_CATEGORIES + LLM_CATEGORIES
OVERASK = 1.5  # prompts per question wanted: some replies are rejected


@dataclass
class Draft:
    items: list[dict]
    written: Counter[str] = field(default_factory=Counter)  # category -> questions written
    rejected: Counter[str] = field(default_factory=Counter)  # reason -> candidates rejected
    verified: int = 0  # candidates that passed, before spreading over the categories
    prompts_sent: int = 0

    def lines(self, commit: str) -> list[str]:
        """What was written, by category, and what was rejected, by reason."""
        out = [
            f"{len(self.items)} questions generated at {commit[:12]} ({self.verified} verified candidates):"
        ]
        out += [f"  {category}: {count}" for category, count in self.written.most_common()]
        out.append(f"rejected {sum(self.rejected.values())}:" if self.rejected else "rejected none")
        return out + [f"  {reason}: {count}" for reason, count in self.rejected.most_common()]


def spread(
    kept: Sequence[Candidate], categories: Sequence[str], n: int, rng: random.Random
) -> list[Candidate]:
    """Up to `n` of `kept`, taken in turn from each category (shuffled by `rng`), so a category
    with many candidates does not crowd out the others."""
    pools = {c: [k for k in kept if k.category == c] for c in categories}
    for pool in pools.values():
        rng.shuffle(pool)
    out: list[Candidate] = []
    while len(out) < n and any(pools.values()):
        for c in categories:
            if pools[c] and len(out) < n:
                out.append(pools[c].pop())
    return out


def draft(
    notes: Sequence[Note],
    commit: str,
    *,
    n: int = 100,
    categories: Sequence[str] = OFFLINE_CATEGORIES,
    seed: int = 0,
    n_unauthorized: int = 0,
    existing: Sequence[str] = (),
    ask: Asker | None = None,
    model: str = "",
    n_chars: int = N_CHARS,
    n_words: int = N_WORDS,
) -> Draft:
    """The draft for `notes` at `commit`: `n` verified questions over `categories` and
    `n_unauthorized` leak-test ones; `existing` questions (the hand-written set) are not repeated.
    The LLM categories send prompts through `ask` to the chat model whose llm_version is `model`."""
    rng = random.Random(seed)
    texts = {note.slug: note.text for note in notes}
    result = Draft([])
    candidates = offline_candidates(notes, [c for c in categories if c in OFFLINE_CATEGORIES])
    asked = [c for c in categories if c in LLM_CATEGORIES]
    if asked:
        if ask is None:
            raise ValueError(f"categories {', '.join(asked)} need a chat model: pass --llm")
        quota = math.ceil(n / len(categories) * OVERASK)
        made, replies_rejected, result.prompts_sent = llm_candidates(
            ask, model, notes, dict.fromkeys(asked, quota), rng
        )
        candidates += made
        result.rejected += replies_rejected
    checked = verify(candidates, texts, existing, n_chars=n_chars, n_words=n_words)
    result.rejected += checked.rejected
    result.verified = len(checked.kept)
    chosen = spread(checked.kept, categories, n, rng)
    if n_unauthorized:
        # leak tests are made offline whatever the categories: no restricted text reaches a prompt
        pool = verify(
            offline_candidates(notes, OFFLINE_CATEGORIES),
            texts,
            [*existing, *(c.q for c in chosen)],
            n_chars=n_chars,
            n_words=n_words,
        ).kept
        leaks, lacking = unauthorized(pool, notes, n_unauthorized, rng)
        chosen += leaks
        if lacking or len(leaks) < n_unauthorized:
            result.rejected["no group outside a restricted note's, or no restricted note"] += (
                n_unauthorized - len(leaks)
            )
    for i, c in enumerate(chosen, 1):
        result.items.append(c.item(f"gen-{i:03d}", commit))
        result.written[c.category] += 1
    return result
