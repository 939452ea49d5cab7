"""What `make run` will do, said before it does it (`python -m rag_pipeline.run --plan` says only
that): the assets the automation conditions request, how many passages are not yet in the vector
store, and about how long embedding them takes at the rate this machine last measured; and the
progress bar a terminal shows while a step embeds."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping

import dagster as dg
import pandas as pd

from rag_pipeline.defs import lanes
from rag_pipeline.defs.sources import cleaned_rows, known_notes
from rag_pipeline.lib.chunking import Strategy, chunk_cleaned_note
from rag_pipeline.lib.core import version_key
from rag_pipeline.lib.embedding import Passages, VectorStore, text_hashes
from rag_pipeline.lib.sources import CLEANER_VERSION, SourceNote

MEASURED = 10  # the materializations of a lane searched back for its last measured embedding


def duration(seconds: float) -> str:
    """`45 s`, `3 min 05 s`, `1 h 02 min`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def progress_bar(done: int, total: int, elapsed: float, width: int = 24) -> str:
    """`[#########---------------] 120/320 texts, 1 min 40 s left`: the time left at the rate so far."""
    share = done / total if total else 1.0
    filled = round(width * min(share, 1.0))
    left = f", {duration(elapsed * (total - done) / done)} left" if 0 < done < total and elapsed > 0 else ""
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} texts{left}"


def lane_chunks(
    strategy: Strategy, notes: Iterable[SourceNote], previous: pd.DataFrame | None
) -> pd.DataFrame:
    """The `text` and `heading_path` of the chunks `strategy` makes of `notes`: a note's rows of
    `previous` (the lane's chunks file) when its blob, the cleaner and the chunker are unchanged, the
    others chunked here, as the chunks asset would."""
    columns = ["text", "heading_path"]
    same = set()
    if previous is not None:
        current = (previous["chunker_version"] == strategy.version) & (
            previous["cleaner_version"] == CLEANER_VERSION
        )
        same = set(zip(previous.loc[current, "note"], previous.loc[current, "source_version"]))
    kept, rows = set(), []
    for n in notes:
        if (n.note, n.source_version) in same:
            kept.add(n.note)
            continue
        # as a `source_notes` row; `note_commit` and the access lists make no passage text
        (note,) = cleaned_rows(vars(n) | {"note_commit": n.commit, "cleaner_version": CLEANER_VERSION})
        rows += [{c: row[c] for c in columns} for row in chunk_cleaned_note(strategy, note)]
    old = previous.loc[previous["note"].isin(kept), columns] if previous is not None else None
    return pd.concat([old, pd.DataFrame(rows, columns=columns)], ignore_index=True)


def pending(
    defs: dg.Definitions, wanted: Iterable[dg.AssetKey], head: str, strategies: list[Strategy]
) -> tuple[int, int]:
    """The distinct passages the requested embeddings assets will find missing from the vector store,
    and their characters: exact, from the chunks files, or, for a requested chunks asset, from the
    notes at `head` of which only those that changed are chunked here."""
    r = defs.resources
    names = {k.to_user_string() for k in wanted}
    lanes_due = [s for s in strategies if lanes.lane_key("embeddings", s) in names]
    if not lanes_due:
        return 0, 0
    store, model = r["store"], r["embedder"].get()
    contextual = r["retrieval"].needs_contextual_vectors()
    notes: list[SourceNote] | None = None
    texts: dict[str, int] = {}  # hash -> characters
    for strategy in lanes_due:
        previous = store.previous(lanes.lane_path("chunks", strategy))
        if lanes.lane_key("chunks", strategy) in names or previous is None:
            if notes is None:
                notes = r["notes_repo"].read(head, known_notes(store.previous(lanes.SOURCE_NOTES)))
            chunks = lane_chunks(strategy, notes, previous)
        else:
            chunks = previous
        passages = Passages(chunks["text"].tolist(), chunks["heading_path"].tolist(), contextual)
        every = [passages[i] for i in range(len(passages))]
        texts |= {h: len(t) for h, t in zip(text_hashes(model, every, "passage"), every)}
    hashes = list(texts)
    stored = [False] * len(hashes)
    if (
        store.path("vectors") / version_key(VectorStore.key(model.embedding_version))
    ).exists():  # writes nothing
        stored = r["embedder"].vector_store().contains(hashes)
    missing = [h for h, found in zip(hashes, stored) if not found]
    return len(missing), sum(texts[h] for h in missing)


def measured_rate(
    instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey], embedding_version: str
) -> tuple[float, float] | None:
    """Characters per second of the last embeddings each lane computed under `embedding_version`,
    over all lanes, and when the latest was measured (a timestamp); None before any."""
    chars = seconds = when = 0.0
    for key in keys:
        for record in instance.fetch_materializations(key, limit=MEASURED).records:
            meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
            if meta.get("embedding_version") == embedding_version and meta.get("embed_seconds"):
                chars, seconds = chars + meta["chars_embedded"], seconds + meta["embed_seconds"]
                when = max(when, record.timestamp)
                break
    return (chars / seconds, when) if seconds > 0 else None


def embedding_line(defs: dg.Definitions, instance: dg.DagsterInstance, wanted, head, strategies) -> str:
    """How many passages the run will embed, and about how long that takes here."""
    try:
        count, chars = pending(defs, wanted, head, strategies)
    except Exception as exc:  # a note or a user's chunker the run's own step will name, as it does
        return f"  embed: not counted ({' '.join(str(exc).split())[:160]})"
    if not count:
        return "  embed: nothing, every passage is in the vector store"
    version = defs.resources["embedder"].get().embedding_version
    keys = [dg.AssetKey(lanes.lane_key("embeddings", s)) for s in strategies]
    rate = measured_rate(instance, keys, version)
    said = f"  embed: {count:,} passages ({chars:,} characters) not yet in the vector store"
    if rate is None:
        return f"{said}; no embedding rate measured on this machine for this embedder yet"
    when = datetime.datetime.fromtimestamp(rate[1]).strftime("%Y-%m-%d %H:%M")
    return f"{said}: about {duration(chars / rate[0])} at {rate[0]:,.0f} characters/s (measured {when})"


def stale_summary(stale: Mapping[dg.AssetKey, str], shown: int = 4) -> str:
    """Why the assets are stale, grouped by reason, a few names each."""
    by_reason: dict[str, list[str]] = {}
    for key, why in stale.items():
        by_reason.setdefault(why, []).append(key.to_user_string())
    parts = []
    for why, names in by_reason.items():
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        parts.append(f"{', '.join(names[:shown])}{more} ({why})")
    return "; ".join(parts)


def plan_lines(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    head: str,
    wanted: Mapping[dg.AssetKey, list[str]],
    strategies: list[Strategy],
) -> list[str]:
    """The plan as `make run` prints it."""
    if not wanted:
        return [f"nothing is stale at {head[:12]}: every asset is fresh"]
    reasons = stale_summary({k: ", ".join(v) for k, v in wanted.items()})
    return [
        f"stale at {head[:12]}: {reasons}",
        f"  run: {len(wanted)} assets",
        embedding_line(defs, instance, wanted, head, strategies),
    ]
