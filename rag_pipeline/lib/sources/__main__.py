"""`python -m rag_pipeline.lib.sources CORPUS_DIR REPO_DIR`: the notes repository of a corpus folder
laid out as `data/corpus/` (`base/`, `update/`), built once and kept (`make holdout` uses it)."""

import sys
from pathlib import Path

from rag_pipeline.lib.sources.bundled_repo import BundledRepoError, ensure_repository

try:
    print(ensure_repository(Path(sys.argv[1]), Path(sys.argv[2])))
except BundledRepoError as error:
    sys.exit(f"error: {error}")
