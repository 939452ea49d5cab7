"""Source stage: the repository head and the questions file as observed, notes read from the pinned
commit, cleaned text, the located questions."""

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import replace

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.conditions import OBSERVE
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.core import content_version, joined_in_order, note_buckets, rebuild_by_note
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.release import narrow_live
from rag_pipeline.lib.sources import (
    CLEANER_VERSION,
    READER_VERSION,
    NotesSourceError,
    SourceNote,
    cleaned_rows,
)

SOURCE_FIELDS = [f.name for f in dataclasses.fields(SourceNote)]

HEAD = dg.AssetKey("notes_head")
QUESTIONS_FILE = dg.AssetKey("questions_file")


@dg.observable_source_asset(
    group_name="sources",
    description="The commit the configured ref names now.",
    automation_condition=OBSERVE,
)
def notes_head(context: dg.AssetExecutionContext, notes_repo: NotesRepository) -> dg.DataVersion:
    if said := notes_repo.sync():  # the edits of data/corpus/ become a commit before the head is read
        context.log.info(said)
    return dg.DataVersion(notes_repo.head())


@dg.observable_source_asset(
    group_name="sources",
    description="The gold questions file, versioned by the sha256 of its bytes.",
    automation_condition=OBSERVE,
)
def questions_file(questions_file: QuestionsFile) -> dg.DataVersion:
    return dg.DataVersion(questions_file.sha256())


def observe(
    notes_repo: NotesRepository, questions: QuestionsFile, sync: bool = True
) -> dict[dg.AssetKey, str]:
    """What the two observations would record now: the runner and the sensor plan from these. The
    bundled repository is brought up to date first, and what was done is printed; unless `sync` is
    false (a plan): then what would be done is printed, and the head as it is is read."""
    if said := notes_repo.sync(apply=sync):
        print(said, flush=True)
    return {HEAD: notes_repo.head(), QUESTIONS_FILE: questions.sha256()}


@logic
def note_commits(
    notes_repo: NotesRepository,
    commit: str,
    paths: list[str],
    previous: pd.DataFrame | None,
) -> dict[str, str]:
    """Per note path, the newest commit up to `commit` that changed it: only commits since the
    previous build are read when there is one, so the cost follows the change."""
    known: dict[str, str] = {}
    since = None
    if previous is not None and len(previous) and "note_commit" in previous:
        known = dict(zip(previous["path"], previous["note_commit"]))
        since = str(previous["commit"].iloc[0])
    found = notes_repo.last_changes(commit, set(paths), since)
    missing = {p for p in paths if p not in found and p not in known}
    if missing and since is not None:  # a path the previous build did not read (another glob)
        found |= notes_repo.last_changes(commit, missing, None)
    return {p: found.get(p) or known.get(p) or commit for p in paths}


@logic
def known_notes(previous: pd.DataFrame | None) -> dict[tuple[str, str], SourceNote]:
    """The previous build's notes by (path, source_version), when the same reader made them."""
    if (
        previous is None
        or "reader_version" not in previous
        or (previous["reader_version"] != READER_VERSION).any()
    ):
        return {}
    columns = [previous[f].tolist() for f in SOURCE_FIELDS]  # lists: itertuples over Arrow strings is slow
    notes = [SourceNote(*values) for values in zip(*columns)]
    return {(n.path, n.source_version): replace(n, access=tuple(n.access)) for n in notes}


def source_notes_asset(resources: Mapping[str, object]) -> dg.AssetsDefinition:
    @stage_asset(
        "source_notes",
        group="sources",
        config=lambda notes_repo: notes_repo.version(),
        external=lambda notes_repo: {"commit": notes_repo.head()},
        resources=resources,
        kinds=("git", "parquet"),
        deps=[notes_head],
        description="One row per note at the pinned commit: note (slug), path, commit, version "
        "(source_version: the blob sha, with the groups a section cascades), the last commit that changed "
        "it (note_commit), title, raw text, access, the `_index.md` that cascaded it; first, what the "
        "commit restricts or deletes is withheld from the live release (`release/revoked.json`).",
    )
    def _source_notes(context: dg.AssetExecutionContext, notes_repo: NotesRepository, store: DataStore):
        commit = notes_repo.head()
        previous = store.previous(lanes.SOURCE_NOTES)
        try:
            notes = notes_repo.read(commit, known_notes(previous))
        except NotesSourceError:
            # the commit stops the build: still, what it restricts or deletes leaves the live index
            # now, and so does every note whose groups cannot be read, until they can
            with contextlib.suppress(NotesSourceError):  # the repository itself cannot be read
                withhold(context, store, notes_repo.readable_access(commit), commit)
            raise
        # first, before anything else of the run can fail: what this commit restricts or deletes
        # leaves the live index now (widening waits for the release)
        withheld = withhold(context, store, {n.note: n.access for n in notes}, commit)
        frame = pd.DataFrame({f: [getattr(n, f) for n in notes] for f in SOURCE_FIELDS})
        frame["access"] = [list(n.access) for n in notes]
        frame["reader_version"] = READER_VERSION
        changed = note_commits(notes_repo, commit, frame["path"].tolist(), previous)
        frame["note_commit"] = frame["path"].map(changed)
        since = previous["commit"].iloc[0] if previous is not None and len(previous) else None
        context.log.info(f"read {len(frame)} notes at {commit} (previous build: {since or 'none'})")
        path = store.write(frame, lanes.SOURCE_NOTES)
        return materialized(
            # the commit is part of it: the reports say which commit they were computed at
            content_version(frame, ["note", "path", "source_version", "note_commit", "commit"]),
            {
                "previous_commit": since or "",
                "repository": notes_repo.location(),
                "ref": notes_repo.ref,
                "notes": len(frame),
                "raw_chars": int(frame["raw"].str.len().sum()),
                "notes_cascaded": int((frame["cascade"] != "").sum()),
                "live_withheld": withheld,
            },
            files=[path],
        )

    return _source_notes


def withhold(
    context: dg.AssetExecutionContext,
    store: DataStore,
    access: Mapping[str, tuple[str, ...] | None],
    commit: str,
) -> int:
    """Narrow the live release to `access` at once (`narrow_live`); a change is said on the `release`
    asset's page too, since this run may never reach it. How many notes live withholds."""
    revoked, changed = narrow_live(store.path(), access, commit)
    if revoked.notes:
        context.log.warning(revoked.summary())
    if changed:
        summary = (
            revoked.summary() or "nothing withheld: the live release serves every note as the notes allow"
        )
        metadata = {"live_withheld": len(revoked.notes), "narrowed": dg.MetadataValue.md(summary)}
        context.log_event(dg.AssetObservation(asset_key="release", metadata=metadata))
    return len(revoked.notes)


@logic
def clean(context: dg.AssetExecutionContext, store: DataStore, source: pd.DataFrame, relative: str):
    """The cleaned rows of `source`'s notes into the file at `relative`, reusing its previous rows of
    notes whose blob sha and cleaner version are unchanged: the frame, its path, what was rebuilt."""
    frame, changes = rebuild_by_note(
        store.previous(relative),
        source.assign(cleaner_version=CLEANER_VERSION),
        key=["source_version", "cleaner_version"],
        build=cleaned_rows,
        refresh={"commit": "commit", "path": "path", "note_commit": "note_commit"},
    )
    if not len(frame):  # a shard that holds no note
        frame = pd.DataFrame({c: pd.Series(dtype=str) for c in [*CLEANED_VERSIONS, "path", "text"]})
        frame["n_chars"] = pd.Series(dtype=int)
    empty = sorted(frame.loc[frame["text"].str.strip() == "", "path"])
    if empty:
        context.log.warning(f"{len(empty)} note(s) hold no text after cleaning: {', '.join(empty)}")
    context.log.info(f"cleaned notes: {changes.counts()}")
    # row groups of a few notes: a chunker reads the whole rows of the notes it rebuilds only
    path = store.write(frame, relative, row_group_size=lanes.NOTES_PER_GROUP)
    metadata = {"notes": len(frame), "chars": int(frame["n_chars"].sum()), "notes_empty": len(empty)}
    return frame, path, metadata | changes.counts()


CLEANED_DESCRIPTION = (
    "Plain text per note (code, markup and front matter removed) with every heading's span; a note "
    "whose blob sha and cleaner version are unchanged is taken from the previous build."
)
CLEANED_VERSIONS = ["note", "source_version", "cleaner_version", "note_commit"]  # not the commit: a
# commit that changes no note's text stales nothing downstream


def cleaned_assets(shards: int) -> list[dg.AssetsDefinition]:
    """The cleaned notes: one step, or (`RAG_SHARDS` > 1) a step per shard of the notes, which any
    worker takes, and the one that joins their files."""
    if shards == 1:
        return [cleaned_notes]
    return [*(cleaned_shard_asset(k, shards) for k in range(shards)), joined_cleaned_asset(shards)]


@stage_asset("cleaned_notes", group="sources", deps=["source_notes"], description=CLEANED_DESCRIPTION)
def cleaned_notes(context: dg.AssetExecutionContext, store: DataStore):
    frame, path, metadata = clean(context, store, store.read(lanes.SOURCE_NOTES), lanes.CLEANED_NOTES)
    return materialized(content_version(frame, CLEANED_VERSIONS), metadata, files=[path])


def cleaned_shard_asset(shard: int, shards: int) -> dg.AssetsDefinition:
    @stage_asset(
        lanes.cleaned_shard_key(shard),
        group="sources",
        deps=["source_notes"],
        config=lambda: config_digest((shard, shards)),  # which notes the shard holds
        first=True,  # the shards lead to the embedding
        description=f"The cleaned notes of shard {shard} of {shards} (by a hash of the note's name). "
        + CLEANED_DESCRIPTION,
    )
    def _cleaned(context: dg.AssetExecutionContext, store: DataStore):
        names = store.read(lanes.SOURCE_NOTES, columns=["note"])["note"].tolist()
        mine = [n for n, b in zip(names, note_buckets(names, shards)) if b == shard]
        source = store.read(lanes.SOURCE_NOTES, filters=[("note", "in", mine)]) if mine else None
        source = source if source is not None else store.read(lanes.SOURCE_NOTES).head(0)
        frame, path, metadata = clean(context, store, source, lanes.cleaned_shard_path(shard, shards))
        return materialized(content_version(frame, CLEANED_VERSIONS), metadata, files=[path])

    return _cleaned


def joined_cleaned_asset(shards: int) -> dg.AssetsDefinition:
    """The cleaned notes' file from its shards' files, in the source notes' order: the rows one step
    would write, merged a row group at a time (the step never holds every note's text)."""

    @stage_asset(
        "cleaned_notes",
        group="sources",
        deps=["source_notes", *(lanes.cleaned_shard_key(k) for k in range(shards))],
        config=lambda: config_digest(shards),
        description=f"{CLEANED_DESCRIPTION} Joined from its {shards} shards.",
    )
    def _cleaned(context: dg.AssetExecutionContext, store: DataStore):
        notes = store.read(lanes.SOURCE_NOTES, columns=["note"])["note"].tolist()
        parts = [store.path(lanes.cleaned_shard_path(k, shards)) for k in range(shards)]
        path = store.path(lanes.CLEANED_NOTES)
        joined_in_order(parts, "note", notes, path, lanes.NOTES_PER_GROUP)
        written = store.read(lanes.CLEANED_NOTES, columns=[*CLEANED_VERSIONS, "n_chars"])
        metadata = {"notes": len(written), "chars": int(written["n_chars"].sum()), "shards": shards}
        return materialized(content_version(written, CLEANED_VERSIONS), metadata, files=[path])

    return _cleaned
