"""`python -m rag_pipeline.release`: the live release (commit, run, recall, when), what a newer
commit withholds from it outside a release, and the last decision with its reasons. Exits 1 when the last decision was a rejection, 2 when nothing was
decided yet, a setting is bad, `release/current.json` is damaged or the object store cannot be read, so
CI can gate on it."""

import os
import sys

from rag_pipeline.lib.core import StorageError, location
from rag_pipeline.lib.questions import TEST
from rag_pipeline.lib.release import REJECTED, RELEASE_DIR, ReleaseError, checked_current, read_history
from rag_pipeline.lib.release.gate import SPLIT_NAMES
from rag_pipeline.lib.serving import RevokedError, read_revocation
from rag_pipeline.settings import Settings, SettingsError


def data_dir():
    return location(Settings.from_env(os.environ).data_dir)


def questions_of(split: object) -> str:
    """What a release's recall is over (a release recorded before `recall_on`: the test questions)."""
    return SPLIT_NAMES.get(split if isinstance(split, str) else TEST, f"{split} questions")


def live_line(current: dict | None) -> str:
    if current is None:
        return "live: nothing released yet"
    tables = ", ".join(f"{t} v{v}" for t, v in current["table_versions"].items())
    return (
        f"live: commit {current['commit'][:12]}, run {current['run']}, evidence recall@{current['k']} "
        f"{current['recall']:.3f} on the {questions_of(current.get('recall_on'))}, released "
        f"{current['time']} ({tables})"
    )


def narrowed_lines(data) -> list[str]:
    """What live withholds since a newer commit narrowed it (`release/revoked.json`), if anything."""
    try:
        summary = read_revocation(data).summary()
    except RevokedError as exc:
        return [f"narrowed: error: {exc}"]
    return [summary] if summary else []


def decision_lines(history) -> list[str]:
    last = history.iloc[-1]
    lines = [
        f"last decision: {last['decision']} at {last['time']}, commit {last['commit'][:12]}, run {last['run']}, "
        f"evidence recall {last['recall']:.3f} on the {questions_of(last.get('recall_on'))}"
    ]
    lines += [f"  - {reason}" for reason in last["reasons"]]
    if len(last["newly_missed"]):
        lines.append(f"  newly missed: {', '.join(last['newly_missed'])}")
    return lines


def main() -> int:
    try:
        return show(data_dir())
    except (SettingsError, StorageError) as exc:  # a bad setting, an object store down: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2


def show(data) -> int:
    """Print the live release and the last decision; the exit status."""
    history = read_history(data / RELEASE_DIR)
    if not len(history):
        print(
            f"{data / RELEASE_DIR}: no release decision yet; materialize `release` (make run) first",
            file=sys.stderr,
        )
        return 2
    try:
        current = checked_current(data)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join([live_line(current), *narrowed_lines(data), *decision_lines(history)]))
    return 1 if history.iloc[-1]["decision"] == REJECTED else 0


if __name__ == "__main__":
    raise SystemExit(main())
