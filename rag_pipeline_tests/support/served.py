"""Opening a served table in a test: through the store seam (LanceDB's store), as the pipeline does;
a test that checks LanceDB itself reads `.lance`, LanceDB's own table."""

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.serving import LanceStore, duplicate_chunk_ids
from rag_pipeline.lib.serving.lance import LanceTable


def open_table(db_dir: str | AnyPath, name: str) -> LanceTable:
    return LanceStore(db_dir).open(name)


def assert_each_chunk_once(db_dir: AnyPath, tables: list[str]) -> None:
    for table in tables:
        assert duplicate_chunk_ids(open_table(db_dir, table)) == 0, table
