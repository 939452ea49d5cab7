"""A draft questions file: candidates from the offline generator (and the chat model with
`--llm`), verified, spread evenly over the categories asked for, plus leak-test questions."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter

from rag_pipeline.lib.questions.generate import OFFLINE_CATEGORIES, Candidate, Note, offline_candidates
from rag_pipeline.lib.questions.leaks import leak_candidates
from rag_pipeline.lib.questions.prompted import LLM_CATEGORIES, Asker, llm_candidates
from rag_pipeline.lib.questions.quoting import QuoteCheck
from rag_pipeline.lib.questions.verify import N_CHARS, N_WORDS, verify

CATEGORIES = OFFLINE_CATEGORIES + LLM_CATEGORIES
OVERASK = 1.5  # prompts per question wanted: some replies are rejected
SHORT = "leak tests not made: too few restricted notes with an outside group and public terms to word them"


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
    kept: Sequence[Candidate],
    keys: Sequence[str],
    n: int,
    rng: random.Random,
    key: Callable[[Candidate], str | None] = attrgetter("category"),
) -> list[Candidate]:
    """Up to `n` of `kept`, taken in turn from each of `keys` (each key's candidates shuffled by
    `rng`), so a category, or a note, with many candidates does not crowd out the others."""
    pools = {k: [c for c in kept if key(c) == k] for k in keys}
    for pool in pools.values():
        rng.shuffle(pool)
    out: list[Candidate] = []
    while len(out) < n and any(pools.values()):
        for k in keys:
            if pools[k] and len(out) < n:
                out.append(pools[k].pop())
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
    quoting = QuoteCheck((note.slug, note.access, note.text, note.title) for note in notes)
    check = partial(verify, texts=texts, quoting=quoting, n_chars=n_chars, n_words=n_words)
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
    checked = check(candidates, existing=existing)
    result.rejected += checked.rejected
    result.verified = len(checked.kept)
    chosen = spread(checked.kept, categories, n, rng)
    if n_unauthorized:
        taken = [*existing, *(c.q for c in chosen)]
        leaks, rejected = leak_candidates(notes, rng, partial(check, existing=taken))
        result.rejected += rejected
        order = sorted({str(c.about) for c in leaks})
        rng.shuffle(order)  # taken in turn from each restricted note
        tests = spread(leaks, order, n_unauthorized, rng, key=attrgetter("about"))
        if len(tests) < n_unauthorized:
            result.rejected[SHORT] += n_unauthorized - len(tests)
        chosen += tests
    for i, c in enumerate(chosen, 1):
        result.items.append(c.item(f"gen-{i:03d}", commit))
        result.written[c.category] += 1
    return result
