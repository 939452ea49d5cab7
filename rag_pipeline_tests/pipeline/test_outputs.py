"""The fingerprint `look` keeps of the LanceDB outputs it found whole: any change to a file the check
reads changes it, so a damaged table or release is opened and checked again."""

import os
import shutil

from rag_pipeline.defs.platform.outputs import damaged, lance_files, outputs


def test_every_file_a_lancedb_check_reads_is_in_its_fingerprint(tmp_path):
    versions = tmp_path / "lancedb" / "section.lance" / "_versions"
    versions.mkdir(parents=True)
    (versions / "1.manifest").write_text("one")
    current = tmp_path / "release" / "current.json"
    current.parent.mkdir()
    current.write_text('{"table_versions": {"section": 1}}')
    table = {"db": str(tmp_path / "lancedb"), "table": "section", "version": 1}
    release = {"path": str(current)}
    seen = [lance_files(table), lance_files(release)]

    (versions / "2.manifest").write_text("two")  # a new version of the table
    assert lance_files(table) not in seen and lance_files(release) not in seen
    seen += [lance_files(table), lance_files(release)]
    os.utime(versions / "2.manifest", ns=(1, 1))  # rewritten in place: same size, another time
    assert lance_files(table) not in seen
    seen.append(lance_files(table))
    current.write_text('{"table_versions": {"section": 2}}')  # only current.json changed
    assert lance_files(release) not in seen and lance_files(table) == seen[-1]
    seen.append(lance_files(release))
    current.unlink()
    assert lance_files(release) not in seen
    tags = versions.parent / "_refs" / "tags"  # a tag: the tag's check reads it, the table's does not
    tags.mkdir(parents=True)
    tagged = table | {"tag": "live"}
    before = lance_files(tagged)
    (tags / "live.json").write_text('{"version": 2}')
    assert lance_files(tagged) != before and lance_files(table) == seen[-2]
    assert lance_files({"path": str(tmp_path / "reports" / "report.md")}) is None  # no table read
    assert lance_files({"db": "s3://bucket/run/lancedb", "table": "section", "version": 1}) is None
    assert lance_files({"path": "s3://bucket/run/release/current.json"}) is None  # not cached
    shutil.rmtree(versions.parent)  # a deleted table
    assert lance_files(table) not in seen


def test_a_table_as_its_writer_left_it_is_not_opened_until_a_file_changes(tmp_path):
    """`outputs` records the fingerprint at write time; `look` (a `verified` map) trusts it while the
    files are unchanged, the nightly check (none) opens the table. Not a LanceDB table: opening it fails."""
    versions = tmp_path / "lancedb" / "section.lance" / "_versions"
    versions.mkdir(parents=True)
    (versions / "1.manifest").write_text("not a manifest")
    recorded = outputs(tables=[(tmp_path / "lancedb", "section", 1)])
    assert damaged(recorded, {}) is None
    assert "cannot be read" in damaged(recorded)
    (versions / "2.manifest").write_text("another")
    assert "cannot be read" in damaged(recorded, {})
