"""Live narrowed outside a release: the notes a newer source commit restricted or deleted, withheld
from every search of the live release until a release carries the narrowing.

`release/revoked.json` records, per note, the groups that may still read it (`null`: nobody, the
note is gone or its groups cannot be read) and which live release that narrows; the source step writes it (`rag_pipeline.lib.release.narrow_live`)
as soon as it has read a commit, whatever later fails, and the next release replaces it. Every live
search (`LiveTable`, `search_rows`) reads it again, so a narrowing reaches a running application at
once; a record that cannot be read stops the search (fails closed). A note's access only narrows
here: widening, as any other change, waits for a release."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag_pipeline.lib.core import AnyPath, as_path, may_read, write_bytes
from rag_pipeline.lib.serving.store import ServedTable

RELEASE_DIR = "release"  # the release record's directory under the data directory
REVOKED = "revoked.json"
AGAIN = "run `make run` to write it again; until then the live index serves no search"

Groups = tuple[str, ...] | None  # who may still read a note: any of these groups; None: nobody


class RevokedError(ValueError):
    """`release/revoked.json` cannot be read: no live search may run without it."""


@dataclass(frozen=True)
class Revocation:
    """The notes withheld from the live release `live` (a key of it) since source commit `commit`."""

    notes: dict[str, Groups] = field(default_factory=dict)
    live: str = ""
    commit: str = ""
    time: str = ""

    def withheld(self, groups: Sequence[str] | None) -> list[str]:
        """The notes an asker in `groups` may no longer read (None, every group: the deleted ones)."""
        return sorted(n for n, still in self.notes.items() if still is None or not may_read(groups, still))

    def summary(self) -> str:
        """What is withheld, from when, and by which commit, in one line ('' when nothing is)."""
        if not self.notes:
            return ""
        who = [
            f"{note} ({'nobody' if still is None else ', '.join(still) + ' only'})"
            for note, still in sorted(self.notes.items())
        ]
        return (
            f"live narrowed outside a release by commit {self.commit[:12]} at {self.time}: "
            f"{len(who)} note(s) withheld until a release carries the change: {', '.join(who)}"
        )


def narrows(served: Sequence[str], now: Sequence[str]) -> bool:
    """Whether some asker may read a note served with groups `served` but not with `now` (empty: public)."""
    return bool(now) and (not served or not set(served) <= set(now))


def narrowed(
    served: Mapping[str, set[tuple[str, ...]]], now: Mapping[str, Sequence[str] | None]
) -> dict[str, Groups]:
    """Per note the live release serves (with each access list its rows carry), the groups that may
    still read it when the notes are now `now` (note -> groups; None: unreadable): only notes now
    deleted, unreadable or narrowed."""
    out: dict[str, Groups] = {}
    for note, lists in served.items():
        if now.get(note) is None:
            out[note] = None
        elif any(narrows(groups, now[note]) for groups in lists):
            out[note] = tuple(sorted(now[note]))
    return out


def merged(old: Mapping[str, Groups], new: Mapping[str, Groups]) -> dict[str, Groups]:
    """Both narrowings at once: an asker must pass both (two lists: the groups in both; none left:
    nobody). A note narrowed and then widened stays narrowed until a release."""
    out = dict(old)
    for note, groups in new.items():
        if note not in out:
            out[note] = groups
        else:
            both = None if out[note] is None or groups is None else set(out[note]) & set(groups)
            out[note] = tuple(sorted(both)) if both else None
    return out


def read_revocation(data_dir: AnyPath) -> Revocation:
    """The record (an empty one when there is none); `RevokedError` when it cannot be read."""
    path = as_path(data_dir) / RELEASE_DIR / REVOKED
    if not path.exists():
        return Revocation()
    try:
        record = json.loads(path.read_bytes())
        notes = {
            str(note): None if groups is None else tuple(str(g) for g in groups)
            for note, groups in record["notes"].items()
        }
        return Revocation(notes, str(record["live"]), str(record["commit"]), str(record["time"]))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RevokedError(f"{path} cannot be read ({exc.__class__.__name__}: {exc}); {AGAIN}") from None


def write_revocation(data_dir: AnyPath, revocation: Revocation) -> AnyPath:
    """The record, replaced whole and atomically; none at all when nothing is withheld."""
    path = as_path(data_dir) / RELEASE_DIR / REVOKED
    if not revocation.notes:
        path.unlink(missing_ok=True)
        return path
    record = {
        "notes": revocation.notes,
        "live": revocation.live,
        "commit": revocation.commit,
        "time": revocation.time,
    }
    write_bytes(json.dumps(record, indent=1, ensure_ascii=False).encode(), path)
    return path


@dataclass(frozen=True)
class LiveTable:
    """A served table checked out at its live version, searched (`search_rows`) with the notes
    withheld since its release left out; `table` is the store's table itself, with no rule applied."""

    table: ServedTable
    data_dir: AnyPath

    def withheld(self, groups: Sequence[str] | None) -> list[str]:
        return read_revocation(self.data_dir).withheld(groups)
