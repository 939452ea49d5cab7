"""The experiment ledger cannot block a build: a missing or corrupt `index.parquet` or `current.json` is
rebuilt from the experiment folders (by the run, with a warning, and by `experiments repair`), and a
ledger that cannot be written is a warning. Real pipeline runs on the farm's notes (hashing embedder)."""

import json

import dagster as dg
import pandas as pd

from rag_pipeline.lib.evaluation.experiments import CURRENT, INDEX, NOT_RECORDED, RECORD
from rag_pipeline_tests.support.farm import cli
from rag_pipeline_tests.support.runs import materialization_metadata, run_all


def warnings_of(env: dict[str, str]) -> tuple[object, list[str]]:
    """A run of the whole pipeline, and the warnings its log holds."""
    instance = dg.DagsterInstance.ephemeral()
    result = run_all(env, instance=instance)
    logs = instance.all_logs(result.run_id)
    return result, [e.user_message for e in logs if e.dagster_event is None and e.level >= 30]


def test_a_broken_ledger_is_rebuilt_from_its_folders_and_never_fails_a_build(farm, monkeypatch, capsys):
    _, env, root = farm
    both = env | {"RAG_RETRIEVERS": "dense,bm25"}
    for settings in (env, both):
        result, warnings = warnings_of(settings)
        assert result.success and not [w for w in warnings if "ledger" in w]
    index = pd.read_parquet(root / INDEX)
    first, second = index["id"]
    assert all(json.loads((root / e / RECORD).read_text())["id"] == e for e in index["id"])

    (root / INDEX).write_bytes(b"PAR1 truncated")
    (root / CURRENT).write_text('{"id": ')
    status, out, err = cli(monkeypatch, capsys, root, "list")
    assert status == 2 and not out and len(err.splitlines()) == 1
    assert (
        err.startswith(f"error: {root / INDEX} cannot be read (") and "experiments repair` rebuilds it" in err
    )
    result, warnings = warnings_of(both)  # the same experiment again: evaluation_summary records it
    assert result.success
    rebuilt = [w for w in warnings if w.startswith("experiment ledger: ")]
    assert rebuilt[0].startswith(
        f"experiment ledger: rebuilt {root / INDEX} from the 2 experiment folder(s): "
    )
    assert f"{root / INDEX} cannot be read" in rebuilt[0] and len(rebuilt) == 2
    assert rebuilt[1].startswith(
        f"experiment ledger: rebuilt {root / CURRENT} naming the newest two (current {second}"
    )
    pd.testing.assert_frame_equal(pd.read_parquet(root / INDEX), index)
    assert json.loads((root / CURRENT).read_text()) == {"id": second, "previous": first}

    (root / INDEX).unlink()
    (root / CURRENT).unlink()
    (root / first / RECORD).unlink()  # a folder recorded before experiment.json was written
    status, _, err = cli(monkeypatch, capsys, root, "compare")
    assert status == 2 and err.startswith(
        f"error: {root / INDEX} is missing, and 2 experiment folder(s) are there"
    )
    status, out, _ = cli(monkeypatch, capsys, root, "repair")
    assert (
        status == 0
        and len(out.splitlines()) == 2
        and f"rebuilt {root / INDEX} from the 2 experiment folder(s): " in out
    )
    recovered = pd.read_parquet(root / INDEX).set_index("id")
    assert list(recovered.index) == [first, second] and recovered.at[first, "commit"] == ""
    assert recovered.at[first, "best"] == index.at[0, "best"] and (root / first / RECORD).exists()
    assert json.loads((root / CURRENT).read_text()) == {"id": second, "previous": first}
    status, out, _ = cli(monkeypatch, capsys, root, "compare")
    assert status == 0 and f"a  {first}:fixed-200/dense" in out
    status, out, _ = cli(monkeypatch, capsys, root, "repair")
    assert status == 0 and out.startswith(f"{root}: nothing to repair")


def test_a_ledger_that_cannot_be_written_warns_and_the_build_goes_on(farm):
    _, env, root = farm
    root.parent.mkdir(parents=True)
    root.write_text("not a folder")  # every write under experiments/ fails
    result, warnings = warnings_of(env)
    assert result.success
    assert [w for w in warnings if w.startswith(NOT_RECORDED)] and "; the build goes on" in warnings[-1]
    shown = materialization_metadata(result, "evaluation_summary")
    assert shown["vs previous experiment"].startswith(NOT_RECORDED)
    assert (root.parent / "reports" / "evaluation_summary.parquet").exists()
