"""A data directory that several processes, on several machines, write at once with no lock: a
segment a compaction replaces stays readable for whoever indexed it, two compactions of the same
segments lose nothing, an object deleted meanwhile is a FileNotFoundError as a local file is, and a
failed write publishes nothing. Each runs on a local directory and on S3 (moto on 127.0.0.1)."""

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.lib.core import location, parquet_file, read_table, segments, write_batches, write_table
from rag_pipeline.lib.core.storage import object_store
from rag_pipeline.lib.embedding import VectorStore


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "_OPENED", {})  # each test's S3 server is another endpoint
    return location(request.getfixturevalue("s3") if request.param == "s3" else str(tmp_path))


def fill(store: VectorStore, segments: int, rows: int = 3) -> tuple[list[str], np.ndarray]:
    hashes = [f"{i:032x}" for i in range(segments * rows)]
    vectors = np.random.default_rng(0).standard_normal((len(hashes), 8)).astype(np.float32)
    for s in range(segments):
        store.put(hashes[s * rows : (s + 1) * rows], vectors[s * rows : (s + 1) * rows])
    return hashes, vectors


def test_a_compaction_deletes_no_segment_another_process_has_indexed(root, monkeypatch):
    writer, reader = VectorStore(root, "v", 8), VectorStore(root, "v", 8)
    hashes, vectors = fill(writer, VectorStore.FANOUT - 1)
    assert reader.contains(hashes).all()  # the reader has indexed the small segments
    indexed = reader.live()
    writer.put(["e" * 32], np.ones((1, 8), np.float32))  # a full tier: the writer merges them
    assert len(writer.live()) == 1 and all(p.exists() for p in indexed)

    def look_again():
        raise AssertionError("the reader had to index the store again")

    with monkeypatch.context() as patched:
        patched.setattr(reader, "refresh", look_again)
        assert np.array_equal(reader.vectors(hashes), vectors)  # from the segments it indexed
    monkeypatch.setattr(VectorStore, "retire_seconds", 0)
    writer.compact()  # now they are retired: deleted
    assert not any(p.exists() for p in indexed)
    assert np.array_equal(reader.vectors(hashes), vectors)  # finds them gone, reads the merged one
    assert len(VectorStore(root, "v", 8)) == len(hashes) + 1


def test_two_compactions_of_the_same_segments_at_once_lose_nothing(root, monkeypatch):
    first, second = VectorStore(root, "v", 8), VectorStore(root, "v", 8)
    hashes, vectors = fill(first, VectorStore.FANOUT - 1)
    extra = ["e" * 32]
    write = segments.write_batches
    inside = []

    def meanwhile(*args, **kwargs):
        """The second store's merge is writing when the first store merges the same segments."""
        if not inside:
            inside.append(True)
            first.put(extra, np.ones((1, 8), np.float32))
        return write(*args, **kwargs)

    second.contains(hashes)
    with monkeypatch.context() as patched:
        patched.setattr(segments, "write_batches", meanwhile)
        patched.setattr(VectorStore, "FANOUT", VectorStore.FANOUT - 1)  # the second merges what it sees
        second.compact()
    assert len(second.live()) == 2  # two merged copies of the same rows, nothing deleted
    monkeypatch.setattr(VectorStore, "retire_seconds", 0)
    for store in (first, second):
        store.compact()
        assert np.array_equal(store.vectors(hashes), vectors) and store.contains(extra).all()
    assert sorted(p.name for p in first.dir.glob("segment-*.parquet")) == [p.name for p in first.live()]


def test_an_object_deleted_while_it_is_read_is_a_file_not_found(s3):
    """Locally an open file stays readable after its deletion; on S3 the next request finds it gone."""
    path = location(s3) / "segment.parquet"
    write_table(pa.table({"x": range(100)}), path, row_group_size=10)
    file = parquet_file(path)
    path.unlink()
    path.unlink(missing_ok=True)  # already gone: fine
    with pytest.raises(FileNotFoundError):
        path.unlink()
    with pytest.raises(FileNotFoundError, match=r"segment\.parquet"), object_store(path):
        file.read_row_group(5)
    with pytest.raises(FileNotFoundError):
        segments.Segment.open(path)


def test_a_failed_write_publishes_nothing(root):
    target = root / "reports" / "summary.parquet"
    write_table(pa.table({"x": [0]}), target)

    def killed_half_way():
        yield pa.table({"x": [1, 2]})
        raise RuntimeError("killed half-way")

    with pytest.raises(RuntimeError):
        write_batches(killed_half_way(), pa.schema([("x", pa.int64())]), target)
    assert read_table(target)["x"].to_pylist() == [0]
    assert [p.name for p in (root / "reports").glob("*")] == ["summary.parquet"]
