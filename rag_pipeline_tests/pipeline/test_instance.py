"""The Dagster instance is made once: its storage, under a lock (`cli.instance`), before anything
opens it, so processes that open a new DAGSTER_HOME together (two `dagster asset materialize`,
`dagster dev`'s processes) find it whole; a damaged one is one line naming how to set it aside.
Opening a new home's sqlite storage from three processes at once, unguarded, left it unusable in
most tries here (two alembic heads)."""

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_pipeline.cli.instance import InstanceError, make
from rag_pipeline_tests.support.runs import cli

# each process imports first, then acts at the same moment as the others
TOGETHER = "import sys, time\nimport dagster as dg\n{imports}\nwhile time.time() < {start}: pass\n{act}\n"
OPEN = "with dg.DagsterInstance.get() as i: i.get_runs(limit=1)"


def together(home: Path, act: str, imports: str = "", n: int = 3) -> list[subprocess.CompletedProcess]:
    code = TOGETHER.format(imports=imports, start=time.time() + 8, act=act)
    env = {"DAGSTER_HOME": str(home), "PATH": "/usr/bin:/bin"}
    processes = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    return [subprocess.CompletedProcess(p.args, p.wait(timeout=120), "", p.stderr.read()) for p in processes]


@pytest.mark.slow
def test_processes_that_make_a_new_instance_at_once_leave_it_whole(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("run_monitoring:\n  enabled: true\n")  # as the Makefile writes it
    made = together(home, "make()", imports="from rag_pipeline.cli.instance import make")
    assert [p.returncode for p in made] == [0, 0, 0], [p.stderr[-500:] for p in made]
    opened = together(home, OPEN)  # then opened at once, as two `dagster asset materialize` do
    assert [p.returncode for p in opened] == [0, 0, 0], [p.stderr[-500:] for p in opened]
    make(home)  # and once more


def test_a_damaged_instance_is_one_line_naming_how_to_set_it_aside(tmp_path, small_env):
    home = tmp_path / "dagster_home"
    make(home)
    with sqlite3.connect(home / "history" / "runs.db") as db:  # what two processes' stamps leave
        (head,) = db.execute("select version_num from alembic_version").fetchone()
        older = "5771160a95ad" if head != "5771160a95ad" else "29b539ebc72a"  # a stamp of another process
        db.execute("insert into alembic_version values (?)", (older,))
    with pytest.raises(InstanceError) as error:
        make(home)
    said = str(error.value)
    assert said.startswith(f"the Dagster instance in {home} cannot be opened, its storage is damaged (")
    assert f"mv {home}/history {home}/history.damaged && mv {home}/schedules {home}/schedules.damaged" in said
    done = cli("rag_pipeline.run", ["--plan"], small_env, tmp_path)  # run from tmp_path: relative paths
    assert done.returncode == 2 and not done.stdout and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: the Dagster instance in dagster_home cannot be opened")
    assert "mv dagster_home/history dagster_home/history.damaged" in done.stderr
