"""Markdown -> plain text with section spans (the reference experiment's cleaning rule).

The cleaned text keeps headings as their Markdown lines (`### Title`) so that
section chunks carry their heading; every offset in the pipeline points into
this text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources.frontmatter import split_front_matter

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.S | re.M)
_SHORTCODE = re.compile(r"\{\{[<%].*?[%>]\}\}", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>\n]+>")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)  # groups: the marks, the title


@dataclass(frozen=True)
class Section:
    """A heading's span in the cleaned text; level 0 is the text before the first heading."""

    heading: str
    level: int
    heading_path: str
    start: int
    end: int


@dataclass(frozen=True)
class CleanedNote:
    text: str
    sections: list[Section]


def clean_markdown(markdown: str) -> str:
    """Drop front matter, code blocks, shortcodes, images, HTML tags, blank lines and rules."""
    _, text = split_front_matter(markdown)
    text = _FENCE.sub("", text)
    text = _SHORTCODE.sub("", text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    lines = [line.rstrip() for line in text.split("\n")]
    kept = [line for line in lines if line.strip() not in ("", "---")]
    return "\n".join(kept) + "\n" if kept else ""


def sections_of(text: str, title: str) -> list[Section]:
    """Every heading's span (to the next heading of any level), with its path from the title."""
    heads = [(len(m.group(1)), m.group(2).strip(), m.start()) for m in HEADING.finditer(text)]
    starts = [(0, title, 0), *heads] if not heads or heads[0][2] > 0 else heads
    sections: list[Section] = []
    trail: list[tuple[int, str]] = []
    for i, (level, heading, start) in enumerate(starts):
        end = starts[i + 1][2] if i + 1 < len(starts) else len(text)
        trail = [(lv, h) for lv, h in trail if lv < level]
        trail.append((level, heading))
        path = " > ".join([title] + [h for lv, h in trail if lv > 0])
        sections.append(Section(heading, level, path, start, end))
    return sections


def clean_note(markdown: str, title: str) -> CleanedNote:
    text = clean_markdown(markdown)
    return CleanedNote(text, sections_of(text, title))


def cleaned_rows(note: dict) -> list[dict]:
    """The `cleaned_notes` row of a `source_notes` row (the plan chunks changed notes through it too)."""
    cleaned = clean_note(note["raw"], note["title"])
    fields = ("note", "path", "commit", "source_version", "note_commit", "title", "cleaner_version", "access")
    return [
        {k: note[k] for k in fields}
        | {
            "text": cleaned.text,
            "n_chars": len(cleaned.text),
            "sections": [s.__dict__ for s in cleaned.sections],
        }
    ]


# what makes a cleaned row, as a digest: the cleaned notes of another version are cleaned again
CLEANER_VERSION = f"clean@{fingerprint([cleaned_rows])}"
