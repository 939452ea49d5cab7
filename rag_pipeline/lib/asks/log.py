"""The ask log: one JSON record per question `ask` answered, each its own file, written whole.

A record is an object under the log (`<id>.json`, local or on an object store): it appears whole or
not at all (`write_bytes`), and no two asks write the same name, so asks running at once, on one
machine or several sharing the log, lose none and need no lock. A record is never rewritten: a flag
(`flags/<id>.json`) is a file of its own.

Who may read a record: an asker holding every group it was asked with (a record of a public asker,
no groups, is anyone's), and only while every note it cites is still readable by that asker in
the notes the last source step read: a record quotes its passages' notes in its answer, so a note
restricted or deleted since withholds the records citing it at once, as it withholds the note from
`ask` (`RAG_ASK_LOG` keeps the log; `rag_pipeline.asks` lists and flags it).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from rag_pipeline.lib.core import AnyPath, location, may_read, read_frame, write_bytes
from rag_pipeline.lib.sources import SOURCE_NOTES

ASKS_DIR = "asks"  # the log's default place under the data directory
FLAGS = "flags"
OFF = "off"
RECORD_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}")


class AskLogError(ValueError):
    """A record or flag cannot be read, or an id names no record; the message names it."""


def log_location(setting: str, data_dir: str) -> AnyPath | None:
    """Where the log is (`RAG_ASK_LOG`; unset: `asks/` under the data directory), None when `off`."""
    if setting == OFF:
        return None
    return location(setting) if setting else location(data_dir) / ASKS_DIR


def new_id(now: datetime) -> str:
    """A record's id: its UTC second, sortable, and 32 random bits, so that no two asks share one."""
    return f"{now.astimezone(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


def append(log: AnyPath, record: Mapping[str, object], now: datetime | None = None) -> str:
    """Write `record` (see `cli/ask.py` for its fields) as a new file of the log; its id."""
    now = now or datetime.now(timezone.utc)
    rid = new_id(now)
    body = {"id": rid, "time": now.isoformat(timespec="milliseconds"), **record}
    write_bytes(json.dumps(body, ensure_ascii=False, indent=1).encode(), log / f"{rid}.json")
    return rid


def new_record(
    question: str,
    groups: Sequence[str],
    served: Mapping[str, object],
    hits: Sequence[Mapping[str, object]],
    answer: Mapping[str, object],
    latency_ms: Mapping[str, float],
) -> dict:
    """What the log keeps of one `ask`: the question and the asker's groups; what served it
    (`configuration`, `commit`, `table_version`, `embedding_version`); each passage's chunk id, note,
    section path and the commit its text is of; the answer (`answer`, `abstained`, `citations`: the
    passages' numbers, `llm_version`); `latency_ms` per stage. No passage text: the notes hold it."""
    passages = [{c: h[c] for c in ("chunk_id", "note", "heading_path", "commit")} for h in hits]
    return {
        "question": question,
        "groups": sorted(groups),
        **served,
        "passages": passages,
        **answer,
        "latency_ms": {stage: round(ms, 1) for stage, ms in latency_ms.items()},
    }


def _read(path: AnyPath) -> dict:
    try:
        found = json.loads(path.read_bytes())
    except ValueError as exc:
        raise AskLogError(f"{path}: not a JSON record of the ask log ({exc})") from None
    if not isinstance(found, dict) or not isinstance(found.get("groups"), list):
        raise AskLogError(f"{path}: not a record of the ask log (no list of `groups`)")
    return found


def read_log(log: AnyPath) -> list[dict]:
    """Every record, oldest first, each with its `flag` (`reason` and `time`; None when unflagged)."""
    if not log.exists():
        return []
    flags = {p.name.removesuffix(".json"): _read_flag(p) for p in (log / FLAGS).glob("*.json")}
    records = [
        _read(path) | {"flag": flags.get(path.name.removesuffix(".json"))} for path in log.glob("*.json")
    ]
    return sorted(records, key=lambda r: (str(r.get("time")), str(r.get("id"))))


def _read_flag(path: AnyPath) -> dict:
    try:
        found = json.loads(path.read_bytes())
        return {"reason": str(found["reason"]), "time": str(found["time"])}
    except (ValueError, KeyError, TypeError) as exc:
        raise AskLogError(f"{path}: not a flag of the ask log ({exc})") from None


def flag(log: AnyPath, rid: str, reason: str, now: datetime | None = None) -> AnyPath:
    """Mark record `rid` as a failure found in use (a later flag replaces an earlier one)."""
    if not RECORD_ID.fullmatch(rid) or not (log / f"{rid}.json").exists():
        raise AskLogError(f"{log}: no record {rid!r} (`python -m rag_pipeline.asks list` shows the ids)")
    if not reason.strip():
        raise AskLogError("--reason: say what was wrong with the answer")
    now = now or datetime.now(timezone.utc)
    body = {"id": rid, "reason": reason.strip(), "time": now.isoformat(timespec="seconds")}
    path = log / FLAGS / f"{rid}.json"
    write_bytes(json.dumps(body, ensure_ascii=False, indent=1).encode(), path)
    return path


def notes_access(data_dir: AnyPath) -> dict[str, tuple[str, ...]] | None:
    """Each note's groups in the notes the last source step read; None before any build."""
    path = data_dir / SOURCE_NOTES
    if not path.exists():
        return None
    frame = read_frame(path, columns=["note", "access"])
    return {str(n): tuple(a) for n, a in zip(frame["note"], frame["access"])}


@dataclass(frozen=True)
class Visible:
    records: list[dict]
    withheld: int  # records with the reader's groups that cite a note the reader may no longer read


def visible(
    records: Sequence[dict], groups: Sequence[str], access: Mapping[str, Sequence[str]] | None
) -> Visible:
    """The records an asker in `groups` may read (see the module), and how many of those asked with
    groups they hold are withheld because a note they cite was restricted or deleted since."""
    held = [r for r in records if set(r["groups"]) <= set(groups)]
    shown = [
        r
        for r in held
        if all(
            access is not None and p.get("note") in access and may_read(groups, access[p["note"]])
            for p in r.get("passages", [])
        )
    ]
    return Visible(shown, len(held) - len(shown))
