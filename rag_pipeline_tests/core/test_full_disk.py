"""A disk that fills up while an output is written: one line naming the file and what to do, and
nothing half-written left behind."""

import re
import subprocess
import sys

import pytest

FILL_DISK = """
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core import DiskFullError, write_table

disk = Path(sys.argv[1])
try:
    write_table(pa.table({"x": np.random.default_rng(0).random(100_000)}), disk / "reports" / "big.parquet")
except DiskFullError as exc:
    print(exc)
print(sorted(str(p.relative_to(disk)) for p in disk.rglob("*")))
"""


def test_a_full_disk_names_the_file_and_leaves_nothing_half_written(tmp_path):
    """A real full disk: a 64 kB tmpfs mounted in a mount namespace of the test's own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = f'mount -t tmpfs -o size=64k tmpfs "$1" || exit 77; exec "{sys.executable}" -c "$0" "$1"'
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", mount, FILL_DISK, str(disk)], capture_output=True, text=True
    )
    if done.returncode == 77:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    message, left = done.stdout.splitlines()
    assert re.fullmatch(
        re.escape(f"{disk}/reports/big.parquet: no space left on the device (")
        + r"0\.\d MB free"
        + re.escape(
            "), nothing was half-written; free space on that disk, or set RAG_DATA_DIR to a directory on a "
            "disk with room"
        ),
        message,
    ), message
    assert left == "['reports']"  # the folder made for it, and no file
