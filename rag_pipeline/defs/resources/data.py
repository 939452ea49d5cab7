"""The data directory, the notes repository and the questions file."""

import hashlib
import tempfile
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import git
import pandas as pd
from pydantic import PrivateAttr

from rag_pipeline.defs.platform.lineage import config_digest
from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, refusal, settings_tags
from rag_pipeline.defs.resources.base import FromSettings, setting
from rag_pipeline.lib.core import AnyPath, Location, location, read_frame, shown_path, write_frame
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.questions import Question, load_questions, questions_bytes
from rag_pipeline.lib.sources import (
    SourceNote,
    ensure_repository,
    last_changes,
    open_repository,
    read_notes,
    readable_access,
    readable_repository,
    resolve_commit,
    would_sync,
)
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_REPO, Settings, SettingsError


class DataStore(FromSettings):
    """The data directory every output goes under: a local path or an `s3://bucket/prefix` URL.

    In a run it is the one the run names (`DATA_DIR_TAG`), whatever this process's `RAG_DATA_DIR`
    (a Celery worker's, say), and a process whose shared settings or code are not the run's (`own`,
    the tags of the definitions it was built from) refuses the run's steps before any is written."""

    data_dir: str = setting("data_dir")
    own: dg.ResourceDependency[dict]  # `runs.settings_tags` of the settings that built it
    _run_dir: str | None = PrivateAttr(default=None)

    @classmethod
    def from_settings(cls, settings: Settings, **resources: object) -> "DataStore":
        own = dg.ResourceDefinition.hardcoded_resource(settings_tags(settings))  # not config: no run sets it
        return super().from_settings(settings, own=own, **resources)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        run = context.run
        if run is None:
            return
        if problem := refusal(run, self.own):
            raise SettingsError(problem)
        self._run_dir = run.tags.get(DATA_DIR_TAG)

    def root(self) -> str:
        return self._run_dir or self.data_dir

    def path(self, *parts: str) -> AnyPath:
        return location(self.root()).joinpath(*parts)

    def local(self, *parts: str) -> Path:
        """Under the data directory when it is local; else under a local cache of this machine (git
        mirrors need a real disk)."""
        root = location(self.root())
        if isinstance(root, Location):
            digest = hashlib.sha256(self.root().encode()).hexdigest()[:16]
            root = Path(tempfile.gettempdir()) / "rag-pipeline-cache" / digest
        return root.joinpath(*parts)

    def previous(self, relative: str) -> pd.DataFrame | None:
        """An asset's last written output, the base of its incremental rebuild."""
        path = self.path(relative)
        return read_frame(path) if path.exists() else None

    def read(self, relative: str, **options) -> pd.DataFrame:
        """An upstream asset's Parquet output (`options` go to the reader: columns, ...)."""
        path = self.path(relative)
        if not path.exists():
            raise FileNotFoundError(f"{path}: not materialized yet")
        return read_frame(path, **options)

    def write(
        self,
        frame: pd.DataFrame,
        relative: str,
        row_group_size: int | None = None,
        metadata: dict | None = None,
    ) -> AnyPath:
        """`frame` as the Parquet file at `relative`, atomically, with `metadata` as its schema's;
        returns its path."""
        path = self.path(relative)
        write_frame(frame, path, row_group_size=row_group_size, metadata=metadata)
        return path


@logic
class NotesRepository(FromSettings):
    """A git repository of Markdown notes, read at one commit from its tree.

    `repo` is a local path or a URL (mirrored under the data directory); empty means the
    bundled corpus, which `sync` builds and keeps up to date with `data/corpus/`.
    """

    store: dg.ResourceDependency[DataStore]
    repo: str = setting("notes_repo")
    ref: str = setting("notes_ref")
    glob: str = setting("notes_glob")
    exclude: list[str] = ["_index.md"]

    def open(self) -> git.Repo:
        """The repository as it is (a URL is mirrored and fetched first); the bundled one is not
        brought up to date with `data/corpus/` here (`sync` does that), and before it is built a
        temporary build is read."""
        if not self.repo:
            return git.Repo(readable_repository(BUNDLED_CORPUS, BUNDLED_REPO))
        return open_repository(self.repo, self.store.local("git"))

    def sync(self, apply: bool = True) -> str | None:
        """The bundled repository built, or the edits of `data/corpus/` committed on top of it; one
        line saying what was done (with `apply` false: what would be, and nothing is written), None
        when nothing was (always, for a repository of one's own). A note changed both in the corpus
        and in a commit of the user's raises `BundledRepoError`, naming it."""
        if self.repo:
            return None
        return (ensure_repository if apply else would_sync)(BUNDLED_CORPUS, BUNDLED_REPO)

    def location(self) -> str:
        return self.repo or str(BUNDLED_REPO)

    def version(self) -> str:
        """What the notes read depend on besides the commit: the repository (empty: the bundled one,
        wherever the project lies) and which files are notes."""
        return config_digest(self.repo, self.glob, sorted(self.exclude))

    def head(self, ref: str | None = None) -> str:
        """The full sha that `ref` (default: the configured one) names now, after a fetch for a URL."""
        return resolve_commit(self.open(), ref or self.ref).hexsha

    def read(
        self, commit: str, known: Mapping[tuple[str, str], SourceNote] | None = None
    ) -> list[SourceNote]:
        """The notes at `commit`; those in `known` (path, blob sha) are not read again (`read_notes`)."""
        return read_notes(resolve_commit(self.open(), commit), self.glob, self.exclude, known)

    def readable_access(self, commit: str) -> dict[str, tuple[str, ...] | None]:
        """Per note at `commit`, its groups, None where they cannot be read (`sources.readable_access`)."""
        return readable_access(resolve_commit(self.open(), commit), self.glob, self.exclude)

    def last_changes(self, commit: str, paths: set[str], since: str | None) -> dict[str, str]:
        """Per path, the newest commit at or before `commit` that changed it (`sources.last_changes`)."""
        return last_changes(self.open(), commit, paths, since)


@logic
class QuestionsFile(FromSettings):
    """The gold questions; `invalid` says what a bad evidence label does: `fail` the run, or `skip`
    the question (counted as `n_invalid` in every report); `test_share` puts about that share of the
    questions without a `split` field in the test split."""

    path: str = setting("questions")
    invalid: str = setting("invalid_questions")
    test_share: float = setting("test_share")
    test_looks: int = setting("test_looks")  # the verdict warns past it; not in `version`: a warning only

    def load(self) -> list[Question]:
        return load_questions(shown_path(self.path))  # its messages name it from where the user stands

    def sha256(self) -> str:
        """The file's content hash: the data version of the `questions_file` observation."""
        return hashlib.sha256(questions_bytes(shown_path(self.path))).hexdigest()

    def version(self) -> str:
        return config_digest(self.invalid, self.test_share)
