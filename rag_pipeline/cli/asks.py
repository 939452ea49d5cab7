"""`python -m rag_pipeline.asks list [--groups g1,g2] [--flagged] [--json]` and `python -m
rag_pipeline.asks flag ID --reason TEXT [--groups g1,g2]`: the ask log `ask` appends to
(`RAG_ASK_LOG`, default `asks/` in the data directory; `off` keeps none), as an asker in `--groups`
may read it: the records asked with groups they all hold (none: public askers' only), less those
citing a note restricted or deleted since (see `rag_pipeline.lib.asks.log`). `flag` marks a record
as a failure found in use, for `python -m rag_pipeline.gold from-asks`. Exits 2 on a bad setting,
argument or record, 1 when the log cannot be read or written."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence

from rag_pipeline.lib.asks import AskLogError, append, flag, log_location, notes_access, read_log, visible
from rag_pipeline.lib.core import AnyPath, location, unknown_group
from rag_pipeline.settings import Settings, SettingsError

SHOWN_CHARS = 200


def groups_of(value: str) -> list[str]:
    return sorted({g.strip() for g in value.split(",") if g.strip()})


def keep(settings: Settings, record: Mapping[str, object]) -> int:
    """`ask`'s last step: `record` appended to the ask log (unless it is off), and how to flag it;
    the exit status (1 when it could not be written: the answer stands, the record is lost)."""
    log = log_location(settings.ask_log, settings.data_dir)
    if log is None:
        return 0
    try:
        rid = append(log, record)
    except OSError as exc:
        print(f"error: ask log {log}: {exc}; this question was not recorded", file=sys.stderr)
        return 1
    who = f" --groups {','.join(record['groups'])}" if record["groups"] else ""  # type: ignore[index]
    print(
        f'\nrecorded as {rid}; if the answer is wrong: python -m rag_pipeline.asks flag {rid}{who} --reason "…"'
    )
    return 0


def line(record: Mapping) -> str:
    """A record as a person reads it in a terminal: who, what served it, the flag, question, answer."""
    who = ", ".join(record["groups"]) or "public"
    flagged = f"  flagged: {record['flag']['reason']}" if record.get("flag") else ""
    answer = "(abstained)" if record.get("abstained") else str(record.get("answer", ""))[:SHOWN_CHARS]
    cited = ", ".join(map(str, record.get("citations", []))) or "none"
    return (
        f"{record['id']}  {str(record['time'])[:19]}  groups {who}  {record.get('configuration')} at "
        f"{str(record.get('commit', ''))[:12]}{flagged}\n  Q: {record['question']}\n  A: {answer}  "
        f"(cited {cited})"
    )


def readable(log: AnyPath, settings: Settings, groups: Sequence[str]) -> tuple[list[dict], int]:
    """The records an asker in `groups` may read, and how many of theirs were withheld."""
    records = read_log(log)
    access = notes_access(location(settings.data_dir))
    known = {g for a in (access or {}).values() for g in a} | {g for r in records for g in r["groups"]}
    problem = groups and unknown_group(groups, known)
    if problem:
        raise AskLogError(f"--groups: {problem}")
    found = visible(records, groups, access)
    return found.records, found.withheld


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.asks", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["list", "flag"])
    parser.add_argument("id", nargs="?", help="flag: the record's id, as `list` shows it")
    parser.add_argument("--groups", default="", help="the reader's groups, comma-separated (none: public)")
    parser.add_argument("--flagged", action="store_true", help="list: only flagged records")
    parser.add_argument("--json", action="store_true", help="list: the records as a JSON list")
    parser.add_argument("--reason", default="", help="flag: what was wrong with the answer")
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env(os.environ)
        log = log_location(settings.ask_log, settings.data_dir)
        if log is None:
            raise AskLogError("RAG_ASK_LOG=off: no ask log is kept")
        groups = groups_of(args.groups)
        records, withheld = readable(log, settings, groups)
        if args.action == "flag":
            if not args.id:
                raise AskLogError("flag: name the record: python -m rag_pipeline.asks flag ID --reason TEXT")
            if not any(r["id"] == args.id for r in records):
                raise AskLogError(
                    f"{log}: no record {args.id!r} readable with groups {', '.join(groups) or 'none'} "
                    "(a record is read with every group it was asked with: --groups)"
                )
            print(f"flagged {args.id} ({flag(log, args.id, args.reason)})")
            return 0
    except (SettingsError, AskLogError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: ask log: {exc}", file=sys.stderr)
        return 1
    shown = [r for r in records if r["flag"] or not args.flagged]
    if args.json:
        print(json.dumps(shown, ensure_ascii=False, indent=1))
        return 0
    print("\n".join(line(r) for r in shown))
    held = f"; {withheld} withheld: they cite a note these groups may no longer read" if withheld else ""
    print(f"{len(shown)} record(s) of {log}{held}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
