"""What `make run` will do, said before it does it (`python -m rag_pipeline.run --plan` says only
that): the assets the automation conditions request, how many passages are not yet in the vector
store, and about how long embedding them takes at the rate this machine last measured; and the
progress bar a terminal shows while a step embeds."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.lineage import REUSED
from rag_pipeline.defs.sources import known_notes
from rag_pipeline.lib.chunking import NOTE_VERSIONS, Strategy, chunk_lane
from rag_pipeline.lib.core import StorageError, clipped, shown_path, version_key
from rag_pipeline.lib.embedding import Passages, VectorStore, text_hashes
from rag_pipeline.lib.sources import CLEANER_VERSION, SourceNote, cleaned_rows, note_entries, resolve_commit

MEASURED = 10  # the computed materializations of a lane searched back for its last measured embedding


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
    """The `text` and `heading_path` of the chunks `strategy` makes of `notes`, as the chunks asset
    makes them (`chunk_lane`): a note's rows of `previous` (the lane's chunks file) kept when its
    blob, the cleaner and the chunker are unchanged, the others cleaned and chunked here."""
    # as `source_notes` rows; `note_commit` and the access lists make no passage text
    rows = {n.note: vars(n) | {"note_commit": n.commit, "cleaner_version": CLEANER_VERSION} for n in notes}

    def cleaned(names: list[str]) -> pd.DataFrame:  # the notes rebuilt
        return pd.DataFrame([row for name in names for row in cleaned_rows(rows[name])])

    versions = pd.DataFrame(list(rows.values()), columns=NOTE_VERSIONS)
    frame = chunk_lane(strategy, previous, versions, cleaned).frame
    return frame.reindex(columns=["text", "heading_path"])  # the columns, of no note too


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


def measured_rate(instance: dg.DagsterInstance, embedding_version: str) -> tuple[float, float] | None:
    """Characters per second of the last embeddings each lane of the instance (any strategy's: the
    rate is the embedder's) computed under `embedding_version`, over all lanes, and when the latest
    was measured (a timestamp); None before any."""
    chars = seconds = when = 0.0
    lanes_of = [k for k in instance.get_asset_keys() if k.to_user_string().startswith("embeddings_")]
    for key in lanes_of:
        for record in computed(instance, key, MEASURED):
            meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
            if meta.get("embedding_version") == embedding_version and meta.get("embed_seconds"):
                chars, seconds = chars + meta["chars_embedded"], seconds + meta["embed_seconds"]
                when = max(when, record.timestamp)
                break
    return (chars / seconds, when) if seconds > 0 else None


def computed(instance: dg.DagsterInstance, key: dg.AssetKey, limit: int) -> list[dg.EventLogRecord]:
    """The latest `limit` materializations of `key` that computed it, newest first: one that reused
    its last output (`lineage.REUSED`) measured nothing."""
    found, cursor = [], None
    while len(found) < limit:
        page = instance.fetch_materializations(key, limit=limit, cursor=cursor)
        found += [r for r in page.records if REUSED not in r.asset_materialization.metadata]
        if not page.has_more:
            break
        cursor = page.cursor
    return found[:limit]


def build_rate(embedding_version: str) -> tuple[float, float] | None:
    """The rate the build's instance measured (`RAG_BUILD_HOME`, which a tuning session's trials are
    given: their own instance has measured nothing before their first embedding)."""
    home = os.environ.get("RAG_BUILD_HOME")
    if not home or not (Path(home) / "history").exists():
        return None
    with dg.DagsterInstance.from_config(home) as build:
        return measured_rate(build, embedding_version)


def embedding_line(defs: dg.Definitions, instance: dg.DagsterInstance, wanted, head, strategies) -> str:
    """How many passages the run will embed, and about how long that takes here."""
    try:
        count, chars = pending(defs, wanted, head, strategies)
    except StorageError:  # the data directory cannot be read: nothing can run (`make run` says so)
        raise
    except Exception as exc:  # a note or a user's chunker the run's own step will name, as it does
        return f"  embed: not counted ({clipped(exc, 300)})"
    if not count:
        return "  embed: nothing, every passage is in the vector store"
    version = defs.resources["embedder"].get().embedding_version
    rate = measured_rate(instance, version) or build_rate(version)
    said = f"  embed: {count:,} passages ({chars:,} characters) not yet in the vector store"
    if rate is None:
        return f"{said}; no embedding rate measured on this machine for this embedder yet"
    when = datetime.datetime.fromtimestamp(rate[1]).strftime("%Y-%m-%d %H:%M")
    return f"{said}: about {duration(chars / rate[0])} at {rate[0]:,.0f} characters/s (measured {when})"


def too_many_shards(defs: dg.Definitions, shards: int, head: str) -> str | None:
    """What is wrong with `RAG_SHARDS` above the number of notes at `head` (shards that hold no
    note), None when nothing is."""
    if shards == 1:
        return None
    repo = defs.resources["notes_repo"]
    notes = len(note_entries(resolve_commit(repo.open(), head), repo.glob, repo.exclude))
    if shards <= notes:
        return None
    return (
        f"RAG_SHARDS={shards} is more than the {notes} notes at {head[:12]}: a shard would hold no "
        f"note; set RAG_SHARDS to {max(notes, 1)} or fewer"
    )


def run_in_progress(instance: dg.DagsterInstance, name: str) -> str | None:
    """What a plan says while a run writes the data directory `name` (its assets are neither stale
    nor fresh until it ends): the run and the steps it is at; None when no live run does."""
    from rag_pipeline.defs.platform.runs import ACTIVE, DATA_DIR_TAG, dead, unfinished_steps

    for run in instance.get_runs(dg.RunsFilter(tags={DATA_DIR_TAG: name}, statuses=ACTIVE)):
        if not dead(instance, run):  # a run whose process is gone is the next `make run`'s to end
            steps = unfinished_steps(instance, run.run_id)
            at = f" (at {', '.join(steps[:3])}{' …' if len(steps) > 3 else ''})" if steps else ""
            return (
                f"run {run.run_id} is in progress on the data directory {shown_path(name)}{at}: what is stale "
                "is known when it ends; run --plan again then"
            )
    return None


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
