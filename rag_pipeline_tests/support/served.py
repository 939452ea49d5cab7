"""Opening a served table in a test: through the store seam (LanceDB's store), as the pipeline does;
a test that checks LanceDB itself reads `.lance`, LanceDB's own table."""

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.serving import LanceStore
from rag_pipeline.lib.serving.lance import LanceTable


def open_table(db_dir: str | AnyPath, name: str) -> LanceTable:
    return LanceStore(db_dir).open(name)
