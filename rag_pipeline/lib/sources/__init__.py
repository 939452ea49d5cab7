"""Notes read from a git commit tree, their front matter, the cleaning rule, and the bundled corpus."""

from rag_pipeline.lib.sources.access import SOURCE_NOTES, NotesSourceError, access_groups, gives_access
from rag_pipeline.lib.sources.bundled_repo import (
    BundledRepoError,
    build_repository,
    ensure_repository,
    readable_repository,
    would_sync,
)
from rag_pipeline.lib.sources.cascade import hugo_glob, logical_path
from rag_pipeline.lib.sources.cleaning import (
    CLEANER_VERSION,
    HEADING,
    Section,
    clean_markdown,
    clean_note,
    cleaned_rows,
    sections_of,
)
from rag_pipeline.lib.sources.frontmatter import FrontMatterError, note_title, split_front_matter, title_of
from rag_pipeline.lib.sources.notes import (
    READER_VERSION,
    SourceNote,
    blob_text,
    is_remote,
    last_changes,
    note_entries,
    note_version,
    open_repository,
    read_cascades,
    read_notes,
    readable_access,
    resolve_commit,
)
from rag_pipeline.lib.sources.paths import glob_regex, note_id

__all__ = [
    "CLEANER_VERSION",
    "HEADING",
    "READER_VERSION",
    "SOURCE_NOTES",
    "BundledRepoError",
    "FrontMatterError",
    "NotesSourceError",
    "Section",
    "SourceNote",
    "access_groups",
    "blob_text",
    "build_repository",
    "clean_markdown",
    "clean_note",
    "cleaned_rows",
    "ensure_repository",
    "gives_access",
    "glob_regex",
    "hugo_glob",
    "is_remote",
    "last_changes",
    "logical_path",
    "note_entries",
    "note_id",
    "note_title",
    "note_version",
    "open_repository",
    "read_cascades",
    "read_notes",
    "readable_access",
    "readable_repository",
    "resolve_commit",
    "sections_of",
    "split_front_matter",
    "title_of",
    "would_sync",
]
