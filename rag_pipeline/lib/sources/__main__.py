"""`python -m rag_pipeline.lib.sources CORPUS_DIR REPO_DIR`: the notes repository of a corpus folder
laid out as `data/corpus/` (`base/`, `update/`), built once and kept (`make holdout` uses it); prints
what it built or committed, or one line naming the note that stops it (exit 2)."""

import sys
from pathlib import Path

from rag_pipeline.lib.core import shown_path
from rag_pipeline.lib.sources.bundled_repo import BundledRepoError, ensure_repository

corpus, repo = Path(sys.argv[1]), Path(sys.argv[2])
try:
    print(ensure_repository(corpus, repo) or f"{shown_path(repo)}: up to date with {shown_path(corpus)}/")
except BundledRepoError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(2)
