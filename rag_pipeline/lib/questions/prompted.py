"""Draft gold questions asked of a chat model (`gold generate --llm`): paraphrases that avoid the
evidence's wording, questions needing two sections, and questions on the notes' topics that no
note answers.

The prompts are sent by an `Asker` (the CLI's is `rag_pipeline.lib.answers.reply_texts`: the
answers' cache keyed by llm_version and prompt text), so a rerun with the same notes and seed asks
nothing. A reply that is not a JSON object with
the asked string fields is rejected and counted, never repaired. Access: a prompt holds the text
of notes one asker may read together (a section, two sections of notes with the same groups), and
a prompt about topics holds public notes only; leak-test questions are never prompted for. Every
quoted text is fenced as data (`rag_pipeline.lib.core.Fence`), apart from the task.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_pipeline.lib.core import Fence
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.questions.generate import Candidate, Note, body
from rag_pipeline.lib.sources import Section

PARAPHRASE, MULTI, UNANSWERABLE = "paraphrase", "multi-section", "unanswerable"
LLM_CATEGORIES = (PARAPHRASE, MULTI, UNANSWERABLE)
INTRO = "You write test questions for a search system over technical notes.\n"
SECTION_CHARS = 1200  # of a section's text in a prompt; enough for a few facts
MIN_SECTION = 80
NOT_JSON, WRONG_FORM = "reply is not valid JSON", "reply is not in the asked form"
# prompt texts -> (their replies' texts, how many were sent to the model rather than read from a cache)
Asker = Callable[[list[str]], tuple[list[str], int]]

_FORMS = {
    PARAPHRASE: ("question", "evidence"),
    MULTI: ("question", "evidence", "evidence2"),
    UNANSWERABLE: ("question", "answer_pattern"),
}


@dataclass(frozen=True)
class Ask:
    """One prompt and what its reply becomes."""

    category: str
    text: str
    places: tuple[tuple[Note, str], ...]  # (note, section heading) of each evidence asked for


def _language(notes: Sequence[Note]) -> str:
    return "Japanese" if any(n.japanese for n in notes) else "English"


def _excerpt(note: Note, heading: str, text: str) -> str:
    return f"[{note.title} > {heading}]\n{text[:SECTION_CHARS]}"


def _prompt(fence: Fence, task: str, passages: Sequence[str]) -> str:
    """The task, the fence's rule, then each passage fenced, numbered from 1."""
    quoted = "\n\n".join(fence.wrap(p, f'n="{i}"') for i, p in enumerate(passages, 1))
    return f"{INTRO}{fence.rule()}\n{task}\n\n{quoted}"


def paraphrase_ask(note: Note, section: Section) -> Ask:
    excerpt = _excerpt(note, section.heading, body(note, section))
    task = (
        f"Read the section quoted below and write ONE question in {_language([note])} that it answers.\n"
        "Quote the answer's evidence: a phrase of 10 to 60 characters copied exactly from the section.\n"
        "The question must not reuse the evidence's wording: say it in other words.\n"
        'Reply with a JSON object only: {"question": "...", "evidence": "..."}'
    )
    return Ask(PARAPHRASE, _prompt(Fence.around(excerpt), task, [excerpt]), ((note, section.heading),))


def multi_ask(a: tuple[Note, Section], b: tuple[Note, Section]) -> Ask:
    (na, sa), (nb, sb) = a, b
    excerpts = [_excerpt(na, sa.heading, body(na, sa)), _excerpt(nb, sb.heading, body(nb, sb))]
    task = (
        f"Write ONE question in {_language([na, nb])} whose answer needs BOTH sections quoted below.\n"
        "Quote one evidence phrase (10 to 60 characters, copied exactly) from each section, in order.\n"
        "The question must not reuse the evidences' wording.\n"
        'Reply with a JSON object only: {"question": "...", "evidence": "...", "evidence2": "..."}'
    )
    return Ask(MULTI, _prompt(Fence.around(*excerpts), task, excerpts), ((na, sa.heading), (nb, sb.heading)))


def unanswerable_ask(note: Note) -> Ask:
    outline = "\n".join([note.title, *(f"- {s.heading}" for s in note.sections if s.level > 0)])
    task = (
        "Quoted below are a note's title and its section headings. "
        f"Write ONE question in {_language([note])} on the same topic that this note does NOT answer "
        "(a specific fact it does not state), and a regular expression matching what a correct "
        "answer would contain.\n"
        'Reply with a JSON object only: {"question": "...", "answer_pattern": "..."}'
    )
    return Ask(UNANSWERABLE, _prompt(Fence.around(outline), task, [outline]), ())


def plan(notes: Sequence[Note], counts: dict[str, int], rng: random.Random) -> list[Ask]:
    """The prompts to send: `counts[category]` of each (fewer when the notes run out)."""
    sections = [(n, s) for n in notes for s in n.sections if len(body(n, s)) >= MIN_SECTION]
    asks: list[Ask] = []
    picked = rng.sample(sections, min(counts.get(PARAPHRASE, 0), len(sections)))
    asks += [paraphrase_ask(n, s) for n, s in picked]
    pairs = set()
    for _ in range(counts.get(MULTI, 0) * 4 if sections else 0):
        if sum(a.category == MULTI for a in asks) >= counts.get(MULTI, 0):
            break
        a = rng.choice(sections)
        # the second section's note has the same groups: one asker may read both
        partners = [x for x in sections if x[0].access == a[0].access and x != a]
        if not partners:
            continue
        b = rng.choice(partners)
        key = tuple(sorted([(a[0].slug, a[1].start), (b[0].slug, b[1].start)]))
        if key not in pairs:
            pairs.add(key)
            asks.append(multi_ask(a, b))
    public = [n for n in notes if not n.access]
    asks += [unanswerable_ask(n) for n in rng.sample(public, min(counts.get(UNANSWERABLE, 0), len(public)))]
    return asks


def read_reply(ask: Ask, reply: str, generator: str) -> Candidate | str:
    """The candidate a reply makes, or why it is rejected."""
    try:
        data = json.loads(reply.strip())
    except json.JSONDecodeError:
        return NOT_JSON
    form = _FORMS[ask.category]
    if (
        not isinstance(data, dict)
        or set(data) != set(form)
        or not all(isinstance(data[k], str) and data[k].strip() for k in form)
    ):
        return WRONG_FORM
    if ask.category == UNANSWERABLE:
        return Candidate(
            UNANSWERABLE, data["question"].strip(), None, None, None, generator, data["answer_pattern"]
        )
    (note, heading), *second = ask.places
    extra = {}
    if second:
        note2, heading2 = second[0]
        extra = {"evidence2": data["evidence2"], "slug2": note2.slug, "section2": heading2}
    return Candidate(
        ask.category,
        data["question"].strip(),
        note.slug,
        heading,
        data["evidence"],
        generator,
        groups=note.access or None,
        paraphrase=True,
        **extra,
    )


def llm_candidates(
    ask: Asker, model: str, notes: Sequence[Note], counts: dict[str, int], rng: random.Random
) -> tuple[list[Candidate], Counter[str], int]:
    """The candidates the replies of `model` (its llm_version) make, the replies rejected by reason,
    and how many prompts were sent (0 on a rerun: every reply comes from the cache)."""
    asks = plan(notes, counts, rng)
    replies, sent = ask([a.text for a in asks])
    generator = f"{GENERATOR} {model}"
    candidates, rejected = [], Counter()
    for a, reply in zip(asks, replies):
        made = read_reply(a, reply, generator)
        if isinstance(made, str):
            rejected[made] += 1
        else:
            candidates.append(made)
    return candidates, rejected, sent


# which code made a chat model's candidate (its `generator`, with the model's llm_version)
GENERATOR = f"llm@{fingerprint([llm_candidates])[:12]}"
