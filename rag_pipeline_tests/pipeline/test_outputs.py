"""The fingerprint `look` keeps of the LanceDB outputs it found whole: any change to a file the check
reads changes it, so a damaged table or release is opened and checked again."""

import os

from rag_pipeline.defs.outputs import lance_files


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
    assert lance_files({"path": str(tmp_path / "reports" / "report.md")}) is None  # no table read
