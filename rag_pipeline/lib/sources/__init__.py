"""Notes read from a git commit tree, their front matter, the cleaning rule, and the bundled corpus."""

from rag_pipeline.lib.sources.bundled_repo import (
    BundledRepoError,
    build_repository,
    ensure_repository,
    readable_repository,
    would_sync,
)
from rag_pipeline.lib.sources.cleaning import (
    CLEANER_VERSION,
    HEADING,
    Section,
    clean_markdown,
    clean_note,
    sections_of,
)
from rag_pipeline.lib.sources.frontmatter import FrontMatterError, note_title, split_front_matter
from rag_pipeline.lib.sources.notes import (
    READER_VERSION,
    NotesSourceError,
    SourceNote,
    access_groups,
    is_remote,
    last_changes,
    note_blobs,
    open_repository,
    read_notes,
    resolve_commit,
)
from rag_pipeline.lib.sources.paths import glob_regex, note_id

__all__ = [
    "CLEANER_VERSION",
    "HEADING",
    "READER_VERSION",
    "BundledRepoError",
    "FrontMatterError",
    "NotesSourceError",
    "Section",
    "SourceNote",
    "access_groups",
    "build_repository",
    "clean_markdown",
    "clean_note",
    "ensure_repository",
    "glob_regex",
    "is_remote",
    "last_changes",
    "note_blobs",
    "note_id",
    "note_title",
    "open_repository",
    "read_notes",
    "readable_repository",
    "resolve_commit",
    "sections_of",
    "split_front_matter",
    "would_sync",
]
