"""`make run`'s plan (`python -m rag_pipeline.run --plan`): what it says runs is what runs next, the
passages it counts are those the run embeds, and making it runs and writes nothing; the progress bar."""

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.cli import instance as instance_module
from rag_pipeline.cli import plan as plan_module
from rag_pipeline.cli import run
from rag_pipeline.cli.plan import duration, plan_lines, progress_bar, run_in_progress
from rag_pipeline.cli.progress import Progress
from rag_pipeline.cli.run import due
from rag_pipeline.defs.platform.runs import DATA_DIR_TAG
from rag_pipeline.defs.sources import HEAD
from rag_pipeline.lib.chunking import load_strategies
from rag_pipeline_tests.support.repos import NOTES, commit_files
from rag_pipeline_tests.support.runs import make_run, project_definitions

TCP = "content/notes/net/tcp-handshake/index.md"


def files(root: str) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time."""
    found = {}
    for path in Path(root).rglob("*"):
        if path.is_file():
            stat = path.stat()
            found[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


def texts_embedded(result) -> int:
    total = 0
    for event in result.get_asset_materialization_events():
        meta = event.event_specific_data.materialization.metadata
        if "texts_embedded" in meta and "reused" not in meta:
            total += meta["texts_embedded"].value
    return total


def planned(defs, instance, env) -> tuple[dict, list[str]]:
    """What `--plan` finds and prints, recording nothing."""
    observed, wanted = due(defs, instance, plan=True)
    strategies = load_strategies(env.get("RAG_STRATEGIES"), None)
    return wanted, plan_lines(defs, instance, observed[HEAD], wanted, strategies)


def embed_count(lines: list[str]) -> int:
    line = next(line for line in lines if line.startswith("  embed:"))
    return 0 if "nothing" in line else int(line.split()[1].replace(",", ""))


def test_a_plan_runs_nothing_and_the_next_run_runs_what_it_planned(notes_repo, small_env):
    env = small_env | {"RAG_STRATEGIES": "fixed-200,section", "RAG_RETRIEVERS": "dense,bm25"}
    defs, instance = project_definitions(env), dg.DagsterInstance.ephemeral()
    data = env["RAG_DATA_DIR"]

    # cold: every distinct passage is to be embedded, and the plan writes no file
    wanted, lines = planned(defs, instance, env)
    assert not Path(data).exists() and not instance.get_runs()
    assert "no embedding rate measured" in lines[-1]
    found, cold = make_run(defs, instance)
    assert set(found.requested) == set(wanted)
    assert embed_count(lines) == texts_embedded(cold) > 0

    # an edit of one note: "a parent was updated" is planned, then still run
    commit_files(
        notes_repo, {TCP: NOTES[TCP] + "\nA new paragraph about SYN cookies and half-open queues.\n"}, "edit"
    )
    before, runs = files(data), len(instance.get_runs())
    wanted, lines = planned(defs, instance, env)
    assert "a parent was updated" in lines[0] and "characters/s (measured" in lines[-1]
    assert files(data) == before and len(instance.get_runs()) == runs
    again, _ = planned(defs, instance, env)  # a second plan sees the same
    assert set(again) == set(wanted)
    found, edit = make_run(defs, instance)
    assert edit.success and set(found.requested) == set(wanted) and found.after == {}
    assert embed_count(lines) == texts_embedded(edit) > 0

    # nothing stale: the plan says so
    wanted, lines = planned(defs, instance, env)
    assert not wanted and lines == [
        f"nothing is stale at {notes_repo.head.commit.hexsha[:12]}: every asset is fresh"
    ]


@pytest.mark.slow
def test_the_plan_command_prints_the_plan_and_exits_0_without_a_run(small_env, tmp_path):
    home = tmp_path / "home"  # not made yet: a plan reads an empty instance and makes none
    env = os.environ | small_env | {"DAGSTER_HOME": str(home), "RAG_STRATEGIES": "section"}
    done = subprocess.run(
        [sys.executable, "-m", "rag_pipeline.run", "--plan"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("stale at ") and lines[-1].startswith("  embed: ") and len(lines) == 3
    assert not Path(small_env["RAG_DATA_DIR"]).exists() and not home.exists()


def test_without_dagster_home_every_cli_takes_make_run_s(tmp_path, monkeypatch):
    """`DAGSTER_HOME` unset (a command typed as the README has it): the project's data/dagster_home,
    as the Makefile exports it; a plan before it exists makes nothing."""
    home = tmp_path / "dagster_home"
    monkeypatch.setattr(instance_module, "DEFAULT_DAGSTER_HOME", home)
    monkeypatch.setenv("DAGSTER_HOME", "restored after the test")
    monkeypatch.delenv("DAGSTER_HOME")
    with run.open_instance(plan=True) as instance:
        assert not instance.get_runs() and not home.exists()
    home.mkdir()
    (home / "dagster.yaml").write_text("run_monitoring:\n  enabled: true\n")  # as the Makefile makes it
    with run.open_instance(plan=True) as instance:  # made, but no storage in it yet: still none
        assert not instance.get_runs() and sorted(p.name for p in home.iterdir()) == ["dagster.yaml"]
    assert os.environ["DAGSTER_HOME"] == str(home)  # the run's processes read the same one
    with run.open_instance() as instance:
        assert instance.root_directory == str(home) and (home / "history" / "runs.db").exists()
    with run.open_instance(plan=True) as instance:  # made: the plan reads it
        assert instance.root_directory == str(home)


def test_the_progress_bar_says_how_much_is_done_and_the_time_left():
    assert progress_bar(0, 40, 0.0, width=8) == "[--------] 0/40 texts"
    assert progress_bar(10, 40, 30.0, width=8) == "[##------] 10/40 texts, 1 min 30 s left"
    assert progress_bar(40, 40, 99.0, width=8) == "[########] 40/40 texts"
    assert [duration(s) for s in (0.4, 59, 61, 3725)] == ["0 s", "59 s", "1 min 01 s", "1 h 02 min"]


def entry(message: str, level: int = 20) -> dg.EventLogEntry:
    return dg.EventLogEntry(
        error_info=None,
        level=level,
        user_message=message,
        run_id="r",
        timestamp=time.time(),
        step_key="embeddings_section",
        job_name="index_and_evaluate",
    )


@pytest.mark.parametrize("tty", [True, False])
def test_a_terminal_redraws_one_progress_line_and_a_pipe_gets_the_log_lines(tty):
    shown: list[str] = []
    progress = Progress(echo=lambda text="", end="\n": shown.append(text + end), tty=tty)
    for done in (10, 20):
        progress.see(entry(f"embeddings_section: embedded {done}/40 texts (2.0 texts/s)"))
    progress.see(entry("a warning", level=30))  # on a line of its own, below the bar
    progress.see(entry("embeddings_section: embedded 40/40 texts (2.0 texts/s)"))
    out = "".join(shown)
    if tty:
        assert out.count("\r") == 3 and "[######------------------] 10/40 texts, 15 s left" in out
        assert "10 s left\x1b[K\n  a warning\n\r" in out and out.endswith("40/40 texts\x1b[K\n")
    else:
        assert "\r" not in out and out.count("\n") == 4
        assert "  embeddings_section: embedded 20/40 texts (2.0 texts/s)\n  a warning\n" in out


def test_a_failed_blocking_check_is_one_line_with_its_name_and_problem_and_a_long_warning_is_whole():
    reasons = "evidence recall@k dropped from 0.671 to 0.125 on the 280 questions both scored"
    notes = ", ".join(f"note-{n} (sre only)" for n in range(30))

    @dg.asset(check_specs=[dg.AssetCheckSpec("release_gate", asset="release", blocking=True)])
    def release(context):
        context.log.warning(f"live narrowed outside a release: withheld {notes}")
        return dg.MaterializeResult(
            check_results=[dg.AssetCheckResult(passed=False, metadata={"reasons": reasons})]
        )

    @dg.asset(deps=[release])
    def below():
        pass

    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([release, below], instance=instance, raise_on_error=False)
        shown: list[str] = []
        progress = Progress(echo=shown.append)
        for record in instance.all_logs(result.run_id):
            progress.see(record)
        progress.flush(force=True)
    assert f"  FAILED  release: check release_gate failed: {reasons}" in shown, shown
    assert progress.rejected()
    assert any(line.endswith("note-29 (sre only)") for line in shown), shown


def test_a_plan_while_a_run_writes_the_data_directory_names_that_run(tmp_path, monkeypatch):
    """Its assets are neither stale nor fresh until it ends: the plan says so, not `nothing is stale`."""
    monkeypatch.chdir(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    name = str(tmp_path / "out")
    for run_id, status, where in [
        ("done", dg.DagsterRunStatus.SUCCESS, name),
        ("elsewhere", dg.DagsterRunStatus.STARTED, str(tmp_path / "other")),
    ]:
        instance.add_run(
            dg.DagsterRun("index_and_evaluate", run_id, status=status, tags={DATA_DIR_TAG: where})
        )
    assert run_in_progress(instance, name) is None
    instance.add_run(
        dg.DagsterRun(
            "index_and_evaluate", "busy", status=dg.DagsterRunStatus.STARTED, tags={DATA_DIR_TAG: name}
        )
    )
    assert run_in_progress(instance, name) == (
        "run busy is in progress on the data directory out: what is stale is known when it ends; "
        "run --plan again then"
    )


def test_a_failed_first_step_is_one_line_and_the_assets_below_are_counted_of_the_plan():
    @dg.asset
    def first():
        raise ValueError("notes/a.md: front matter never closed")

    @dg.asset(deps=[first])
    def below():
        pass

    @dg.asset(deps=[below])
    def lower():
        pass

    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([first, below, lower], instance=instance, raise_on_error=False)
        shown: list[str] = []
        progress = Progress(echo=shown.append, planned={"first", "below", "lower"})
        for record in instance.all_logs(result.run_id):
            progress.see(record)
        progress.flush(force=True)
    assert [line for line in shown if "FAILED" in line] == [
        "  FAILED  first: ValueError: notes/a.md: front matter never closed"
    ]  # once: the run's failure says nothing more
    assert "  2 of the 3 assets did not run: they depend on the failed step(s)" in shown


def test_the_embedding_rate_is_the_embedders_over_every_lane_and_a_tuning_trial_reads_the_builds(
    tmp_path, monkeypatch
):
    """A new strategy's lanes, or a tuning trial in its own instance, have embedded nothing yet: the
    rate is the embedder's, measured on any lane, in the build's instance for a trial."""
    from rag_pipeline.cli.instance import make

    home = tmp_path / "build_home"
    make(home)
    with dg.DagsterInstance.from_config(str(home)) as build:
        for lane, seconds in [("embeddings_fixed_200", 2.0), ("embeddings_section", 3.0), ("other", 1.0)]:
            meta = {"embedding_version": "e5", "embed_seconds": seconds, "chars_embedded": 1000.0}
            build.report_runless_asset_event(dg.AssetMaterialization(lane, metadata=meta))
        for _ in range(plan_module.MEASURED + 2):  # runs that reused a lane's output measured nothing
            build.report_runless_asset_event(
                dg.AssetMaterialization("embeddings_section", metadata={"reused": "an-earlier-run"})
            )
        rate, _ = plan_module.measured_rate(build, "e5")
    assert rate == 2000.0 / 5.0  # the two lanes, not `other`
    trial = dg.DagsterInstance.ephemeral()
    assert plan_module.measured_rate(trial, "e5") is None
    monkeypatch.setenv("RAG_BUILD_HOME", str(home))
    assert plan_module.build_rate("e5")[0] == 400.0 and plan_module.build_rate("other-embedder") is None
