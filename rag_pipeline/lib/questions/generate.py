"""Draft gold questions made offline from the notes themselves, honest about being easy.

Each generator reads one section of a note's cleaned text and proposes a `Candidate` whose
evidence is a span of that section; `verify.verify` then decides which are written. The
categories say how each question was made, so a report never passes a lookup off as a paraphrase:

- `keyword-lookup`: a terse query of the section's most distinctive terms (TF-IDF of terms over
  every section of every note);
- `identifier-lookup`: a question naming an identifier of the section (`max_wal_size`, `EMFILE`);
- `number-lookup`: a clause with its number blanked out;
- `table-lookup`: a table row's first cell and a column heading, asking for the cell;
- `cross-lingual`: an English question about a Japanese section whose heading has an English term.

Every such question reuses the note's words, so it flatters lexical retrieval; the LLM generator
(`rag_pipeline.lib.questions.prompted`) is the one asking for paraphrases.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import git

from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources import Section, clean_note, read_notes

KEYWORD, IDENTIFIER, NUMBER, TABLE, CROSS_LINGUAL = (
    "keyword-lookup",
    "identifier-lookup",
    "number-lookup",
    "table-lookup",
    "cross-lingual",
)
OFFLINE_CATEGORIES = (KEYWORD, IDENTIFIER, NUMBER, TABLE, CROSS_LINGUAL)

# terms: ASCII words (identifiers kept whole), katakana runs, kanji runs
TERM = re.compile(r"[A-Za-z][A-Za-z0-9_.+/-]*[A-Za-z0-9]|[ァ-ヴー]{2,}|[一-龥々]{2,}")
# an identifier: snake_case, dotted, kebab with a letter run, CamelCase inside, an ALLCAPS code or a key=value
_IDENTIFIER = re.compile(
    r"(?<![\w.-])(?:[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+|[a-z]+(?:-[a-z]+){2,}|[A-Z]{4,}[0-9]*"
    r"|[A-Za-z]+[0-9]+[A-Za-z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z]+[A-Za-z0-9]*)(?![\w-])"
)
_NUMBER = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)( ?)(ms|ミリ秒|秒|分|時間|日|GB|MB|KB|TB|%|倍|行|件|台|回|個|本|"
    r"バイト|ワーカー|プロセス|スレッド|接続|万行|万件)"
)
_CLAUSE_END = re.compile(r"[、。！？,;]|\n|(?<=[.!?])\s")
CJK = re.compile(r"[ぁ-んァ-ヴ一-龥]")
_ENGLISH_TERM = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}(?: [A-Z][A-Za-z0-9-]+)*")
MIN_EVIDENCE, MAX_EVIDENCE = 12, 90  # characters; shorter is ambiguous, longer is a paragraph
STOP_TERMS = frozenset({"the", "and", "for", "with", "this", "that", "from", "are", "was", "not"})


@dataclass(frozen=True)
class Note:
    """A note at one commit: its slug, title, access groups, cleaned text and sections."""

    slug: str
    title: str
    access: tuple[str, ...]
    text: str
    sections: tuple[Section, ...]

    @property
    def japanese(self) -> bool:
        return len(CJK.findall(self.text)) > 0.2 * len(self.text)


@dataclass(frozen=True)
class Candidate:
    """A generated question before verification, in the questions file's terms."""

    category: str
    q: str
    slug: str | None
    section: str | None
    evidence: str | None
    generator: str
    answer_pattern: str | None = None
    groups: tuple[str, ...] | None = None
    evidence2: str | None = None
    slug2: str | None = None
    section2: str | None = None
    paraphrase: bool = False  # must share no wording with its evidence
    about: str | None = None  # a leak test's restricted note, which it may not name (not written)

    def item(self, qid: str, commit: str) -> dict:
        """The questions-file object (the shape of data/questions.json plus the generated fields)."""
        out: dict = {"id": qid, "q": self.q, "slug": self.slug, "section": self.section}
        out["evidence"] = self.evidence
        if self.evidence2:
            out |= {"evidence2": self.evidence2, "slug2": self.slug2, "section2": self.section2}
        out["category"] = self.category
        if self.answer_pattern:
            out["answer_pattern"] = self.answer_pattern
        if self.groups:
            out["groups"] = list(self.groups)
        if self.slug is not None:
            out["commit"] = commit
        return out | {"generated": True, "generator": self.generator}


def notes_at(commit: git.Commit, glob: str, exclude: Sequence[str]) -> list[Note]:
    """Every note at `commit`, cleaned as the pipeline cleans it."""
    out = []
    for source in read_notes(commit, glob, list(exclude)):
        cleaned = clean_note(source.raw, source.title)
        out.append(Note(source.note, source.title, source.access, cleaned.text, tuple(cleaned.sections)))
    return out


def body(note: Note, section: Section) -> str:
    """The section's text without its heading line."""
    text = note.text[section.start : section.end]
    return text.split("\n", 1)[1] if section.level > 0 and "\n" in text else text


def clause_around(text: str, start: int, end: int) -> str:
    """The clause holding text[start:end], widened to the sentence when shorter than MIN_EVIDENCE."""
    bounds = [m.end() for m in _CLAUSE_END.finditer(text)]
    left = max([b for b in bounds if b <= start], default=0)
    right = min([m.start() for m in _CLAUSE_END.finditer(text, end)], default=len(text))
    clause = text[left:right].strip()
    if len(clause) < MIN_EVIDENCE:
        left = max([m.end() for m in re.finditer(r"[。！？\n]", text[:start])], default=0)
        stop = re.search(r"[。！？\n]", text[end:])
        clause = text[left : end + (stop.start() if stop else len(text) - end)].strip()
    return clause


def _fits(evidence: str) -> bool:
    return MIN_EVIDENCE <= len(evidence) <= MAX_EVIDENCE and "|" not in evidence


def section_terms(notes: Sequence[Note]) -> dict[tuple[str, int], list[str]]:
    """Per (slug, section index), its terms by TF-IDF over every section, most distinctive first."""
    counts: dict[tuple[str, int], Counter[str]] = {}
    for note in notes:
        for i, section in enumerate(note.sections):
            counts[(note.slug, i)] = Counter(t.lower() for t in TERM.findall(body(note, section)))
    df = Counter(t for c in counts.values() for t in c)
    n = len(counts)
    out = {}
    for key, c in counts.items():
        scored = [(tf * math.log(n / df[t]), t) for t, tf in c.items() if df[t] < n and t not in STOP_TERMS]
        out[key] = [t for _, t in sorted(scored, key=lambda s: (-s[0], s[1]))]
    return out


def _find_term(text: str, term: str) -> re.Match | None:
    return re.search(re.escape(term), text, re.I)


def keyword_lookups(notes: Sequence[Note], terms: dict[tuple[str, int], list[str]]) -> Iterable[Candidate]:
    for note in notes:
        for i, section in enumerate(note.sections):
            top = terms[(note.slug, i)][:3]
            text = body(note, section)
            at = _find_term(text, top[0]) if top else None
            if len(top) < 2 or at is None:
                continue
            evidence = clause_around(text, at.start(), at.end())
            if _fits(evidence):
                # the terms as written in the note, not lowered
                shown = [m.group(0) for t in top if (m := _find_term(text, t))]
                yield Candidate(KEYWORD, " ".join(shown), note.slug, section.heading, evidence, OFFLINE)


def identifier_lookups(notes: Sequence[Note]) -> Iterable[Candidate]:
    for note in notes:
        for section in note.sections:
            text = body(note, section)
            seen = set()
            for m in _IDENTIFIER.finditer(text):
                name = m.group(0)
                if name in seen:
                    continue
                seen.add(name)
                evidence = clause_around(text, m.start(), m.end())
                if not _fits(evidence):
                    continue
                q = (
                    f"「{section.heading}」で {name} はどう使われていますか？"
                    if note.japanese
                    else f'How is {name} used in "{section.heading}"?'
                )
                pattern = re.escape(name)
                yield Candidate(IDENTIFIER, q, note.slug, section.heading, evidence, OFFLINE, pattern)


def number_lookups(notes: Sequence[Note]) -> Iterable[Candidate]:
    for note in notes:
        for section in note.sections:
            text = body(note, section)
            for m in _NUMBER.finditer(text):
                evidence = clause_around(text, m.start(), m.end())
                if not _fits(evidence) or evidence.count(m.group(0)) != 1:
                    continue
                blank = evidence.replace(m.group(0), f"□{m.group(2)}{m.group(3)}")
                q = (
                    f"「{blank}」の □ に入る数は？"
                    if note.japanese
                    else f'In "{blank}", what number goes in the box?'
                )
                pattern = re.escape(m.group(1)) + " ?" + re.escape(m.group(3))
                yield Candidate(NUMBER, q, note.slug, section.heading, evidence, OFFLINE, pattern)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_lookups(notes: Sequence[Note]) -> Iterable[Candidate]:
    for note in notes:
        for section in note.sections:
            rows = [line for line in body(note, section).split("\n") if line.startswith("|")]
            if len(rows) < 3 or not re.fullmatch(r"[|:\- ]+", rows[1]):
                continue
            header = _cells(rows[0])
            for row in rows[2:]:
                cells = _cells(row)
                if len(cells) != len(header) or len(cells) < 2 or not cells[0] or not cells[-1]:
                    continue
                # the row as written between its outer bars: found once where the cells are
                evidence = row.strip().strip("|").strip()
                q = (
                    f"{section.heading}の表で、{cells[0]} の「{header[-1]}」は？"
                    if note.japanese
                    else f"In the table of {section.heading}, what is the {header[-1]} of {cells[0]}?"
                )
                pattern = re.escape(cells[-1])
                yield Candidate(TABLE, q, note.slug, section.heading, evidence, OFFLINE, pattern)


def cross_lingual(notes: Sequence[Note]) -> Iterable[Candidate]:
    for note in notes:
        if not note.japanese:
            continue
        topic = note.slug.replace("-", " ")
        for section in note.sections:
            term = _ENGLISH_TERM.search(section.heading) if section.level > 0 else None
            text = body(note, section)
            first = re.match(r"[^。！？\n]*[。！？]?", text)
            if term is None or first is None:
                continue
            evidence = first.group(0).strip()
            if len(evidence) > MAX_EVIDENCE:
                evidence = clause_around(text, 0, 1)
            if _fits(evidence):
                q = f"In the notes on {topic}, what is the first thing said about {term.group(0)}?"
                yield Candidate(CROSS_LINGUAL, q, note.slug, section.heading, evidence, OFFLINE)


def offline_candidates(notes: Sequence[Note], categories: Iterable[str]) -> list[Candidate]:
    """Every offline candidate of `categories` (see the module's doc), asked by the note's groups."""
    makers = {
        KEYWORD: lambda: keyword_lookups(notes, section_terms(notes)),
        IDENTIFIER: lambda: identifier_lookups(notes),
        NUMBER: lambda: number_lookups(notes),
        TABLE: lambda: table_lookups(notes),
        CROSS_LINGUAL: lambda: cross_lingual(notes),
    }
    access = {n.slug: n.access for n in notes}
    out = []
    for category in categories:
        if category in makers:
            out += [with_groups(c, access) for c in makers[category]()]
    return out


def with_groups(candidate: Candidate, access: dict[str, tuple[str, ...]]) -> Candidate:
    """The candidate asked by a member of its notes' groups (no groups: a public note)."""
    groups = sorted({g for slug in (candidate.slug, candidate.slug2) if slug for g in access.get(slug, ())})
    return candidate if not groups else replace(candidate, groups=tuple(groups))


# which code wrote an offline candidate (its `generator`): the offline generators' fingerprint
OFFLINE = f"offline@{fingerprint([offline_candidates])[:12]}"
