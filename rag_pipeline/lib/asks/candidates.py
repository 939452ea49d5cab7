"""Failures found in use back into the gold set: each flagged record of the ask log as a candidate
question, its personal data removed, for a person to give its evidence.

A candidate is a question of the questions file's format with `"source": "asked"`, its asker's
`groups` (`[]`: public notes only) and no `slug` yet: what the served passages were (`x-hints`,
the cited ones first) and why it was flagged (`x-reason`) help a person find the evidence, and
`x-ask` names the record. Until `slug` is given (with `section` and `evidence`, or `null` for a
question the notes cannot answer) it is not scored and `gold status` lists it
(`rag_pipeline.lib.questions.fields.awaiting_evidence`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag_pipeline.lib.asks.redact import Redactor
from rag_pipeline.lib.questions import ASKED

ID_PREFIX = "ask-"


def hints(record: dict) -> list[dict]:
    """The served passages as evidence hints: note (`slug`), the section it lies in, the chunk, and
    whether the answer cited it; cited ones first, each in the order served."""
    cited = {int(n) for n in record.get("citations", [])}
    out = []
    for rank, passage in enumerate(record.get("passages", []), 1):
        path = str(passage.get("heading_path", ""))
        heading = path.split(" > ")[-1] if " > " in path else None
        out.append(
            {
                "slug": passage.get("note"),
                "section": heading,
                "chunk_id": passage.get("chunk_id"),
                "cited": rank in cited,
            }
        )
    return sorted(out, key=lambda h: not h["cited"])


def candidate(record: dict, redact: Redactor) -> dict:
    """The flagged `record` as a candidate question (see the module), its texts redacted."""
    return {
        "id": f"{ID_PREFIX}{record['id']}",
        "q": redact(str(record["question"])),
        "source": ASKED,
        "groups": sorted(record["groups"]),
        "x-ask": record["id"],
        "x-reason": redact(str(record["flag"]["reason"])),
        "x-served": f"{record.get('configuration')} at commit {str(record.get('commit', ''))[:12]}",
        "x-hints": hints(record),
    }


def candidates(
    records: Iterable[dict], redact: Redactor, existing: Sequence[object] = ()
) -> tuple[list[dict], int]:
    """The flagged records as candidates, but those whose record a question of `existing` (the
    questions file's items) already names in `x-ask`; and how many were left out so."""
    known = {item.get("x-ask") for item in existing if isinstance(item, dict)}
    flagged = [r for r in records if r.get("flag")]
    new = [candidate(r, redact) for r in flagged if r["id"] not in known]
    return new, len(flagged) - len(new)
