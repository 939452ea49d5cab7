"""`python -m rag_pipeline.tune --space FILE --budget N [--json] [--seed S]` (`make tune`): a random
search over a space of chunking and retrieval settings (see `rag_pipeline.lib.evaluation.tuning`),
chosen on the development questions and confirmed on the test questions once.

Each trial is a run of `python -m rag_pipeline.run` tagged `rag/tune=<id>`, under the trial's
strategy file and settings, in the session's own data directory and Dagster instance
(`$RAG_DATA_DIR/tune/<id>/`): the build `make run` serves, its reports, its live release and its
lineage stay as they were. The session starts from the build's vectors (hard links), so only new
chunks are embedded, and hands the vectors it embedded back, so adopting the winner costs none.
Every trial's experiment is recorded in the build's ledger (marked with its session), with the look
its verdict took at the test questions; the best trial on the development questions is then
compared, on the test questions, with the build's baseline and with its verdict's choice, which counts
one more look. `best.env` adopts it as measured: its strategy (named as the built-in one when that
makes the same chunks), its retrieval settings, and its configuration kept as the verdict's choice
(RAG_CHOSEN_RUN) and served (RAG_RELEASE_RUN), so `make run` reproduces the figures tune confirmed.
Exits 0, 1 when a trial's run failed, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.core import StorageError, location
from rag_pipeline.lib.evaluation import (
    LEDGER,
    experiment_reuse,
    experiment_split,
    import_looks,
    looks_sentence,
    record_look,
    to_markdown,
)
from rag_pipeline.lib.evaluation.experiments import import_experiment, read_current, read_outcomes
from rag_pipeline.lib.evaluation.ranking import scored_rows
from rag_pipeline.lib.evaluation.significance import p_text, p_value
from rag_pipeline.lib.evaluation.tuning import (
    SpaceError,
    Trial,
    adoption,
    best_on_dev,
    confirm_on_test,
    draw,
    on_test,
    read_space,
)
from rag_pipeline.lib.evaluation.versus import Comparison, Side, UnknownReference, experiment_sides
from rag_pipeline.settings import DEFAULT_DAGSTER_HOME, Settings, SettingsError

RUN_OK = (0, 3)  # `rag_pipeline.run`: success, or only the session's release gate held its index back
TAG = "rag/tune"


@dataclass
class Tried:
    number: int
    trial: Trial
    experiment: str
    best: pd.Series  # the trial's best configuration on dev: configuration, value, mrr@10


def configuration(label: str) -> str:
    """A report's configuration name as `strategy/retriever` (the report drops `/dense`)."""
    return label if "/" in label else f"{label}/dense"


def share_files(source: Path, target: Path) -> None:
    """Every file under `source` that `target` lacks, hard-linked there (copied across devices): the
    vector store's segments are immutable, so both stores may hold one file."""
    for path in source.rglob("*"):
        if path.is_file() and not (to := target / path.relative_to(source)).exists():
            to.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, to)
            except OSError:
                shutil.copy2(path, to)


def trial_env(settings: Settings, session: Path, trial: Trial, number: int, tune: str) -> dict[str, str]:
    """The environment of a trial's run: the user's settings but for the session's data directory and
    instance, the trial's strategy alone and its retrieval settings, the in-process executor, and no
    release or answer run of the user's (their strategies are not built here)."""
    folder = session / "trials" / str(number)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "strategy.toml").write_text(trial.strategy_toml())
    return (
        dict(os.environ)
        | settings.path_variables()
        | {
            "RAG_DATA_DIR": str(session / "data"),
            "DAGSTER_HOME": str(session / "dagster_home"),
            "RAG_STRATEGY_FILE": str(folder / "strategy.toml"),
            "RAG_STRATEGIES": trial.name,
            "RAG_RELEASE_RUN": "",
            "RAG_CHOSEN_RUN": "",
            "RAG_ANSWER_RUNS": "",
            "RAG_EXECUTOR": "in_process",
            "RAG_RUN_TAGS": f"{TAG}={tune},rag/trial={number}",
            # the plan's embedding rate: the build measured it (cli/plan.py)
            "RAG_BUILD_HOME": os.environ.get("DAGSTER_HOME") or str(DEFAULT_DAGSTER_HOME),
        }
        | trial.env()
    )


def run_trial(settings: Settings, session: Path, trial: Trial, number: int, tune: str) -> tuple[int, Path]:
    """`python -m rag_pipeline.run` for one trial; (its exit status, its log)."""
    env = trial_env(settings, session, trial, number, tune)
    log = session / "trials" / str(number) / "run.log"
    with log.open("w") as out:
        done = subprocess.run([sys.executable, "-m", "rag_pipeline.run"], env=env, stdout=out, stderr=out)
    return done.returncode, log


def figures(c: Comparison | None) -> dict[str, object]:
    """The build's configuration compared with, and the best trial's difference from it on test (the
    difference of the two values as kept, as the verdict's `delta`)."""
    if c is None:
        return {"configuration": None, "test_delta": None, "test_p": None}
    return {
        "configuration": c.a.split(":", 1)[1],
        "test_delta": round(round(c.value_b, 4) - round(c.value_a, 4), 4),
        "test_p": p_value(c.p_value),
    }


def output(
    tried: list[Tried], best: Tried, chosen: Side, versus: dict, session: Path, looks: str, adopted: dict
) -> dict:
    """What `--json` prints, and the table is made of."""
    test = on_test(chosen)
    return {
        "trials": [
            {"trial": t.number, "settings": t.trial.settings(), "dev_value": round(float(t.best["value"]), 4)}
            | {"configuration": t.best["configuration"], "experiment": t.experiment}
            for t in tried
        ],
        "best": best.trial.settings() | {"retriever": chosen.configuration.split("/", 1)[1]},
        "configuration": adopted["RAG_CHOSEN_RUN"],
        "built_in": best.trial.built_in(),
        "adopt": adopted,
        "dev_value": round(float(best.best["value"]), 4),
        "test_value": round(test.value, 4) if len(scored_rows(test.rows)) else None,
        "test_delta": figures(versus["baseline"])["test_delta"],
        "test_p": figures(versus["baseline"])["test_p"],
        "n_test": len(scored_rows(test.rows)),
        "experiment": best.experiment,
        "baseline": figures(versus["baseline"]),
        "current_choice": figures(versus["current_choice"]),
        "session": str(session),
        "test_looks": looks,
    }


def described(settings: dict) -> str:
    """`fixed size=500 overlap=100, candidate_k=50, ...` of a trial's settings."""
    strategy = " ".join(str(v) if k == "kind" else f"{k}={v}" for k, v in settings["strategy"].items())
    return ", ".join([strategy, *(f"{k}={v}" for k, v in settings.items() if k != "strategy")])


def text(result: dict, session: Path) -> str:
    rows = pd.DataFrame(
        [
            {"trial": t["trial"], "settings": described(t["settings"]), "best on dev": t["configuration"]}
            | {"dev": f"{t['dev_value']:.3f}", "experiment": t["experiment"]}
            for t in result["trials"]
        ]
    )
    same = f", the chunks of the built-in `{result['built_in']}`" if result["built_in"] else ""
    lines = [
        to_markdown(rows),
        "",
        f"best on the development questions: {result['configuration']} ({described(result['best'])}{same}) "
        f"({result['dev_value']:.3f})",
        f"confirmed once, on {result['n_test']} test questions: {result['test_value']}",
    ]
    for who in ("baseline", "current_choice"):
        c = result[who]
        said = (
            "not scored in the build"
            if c["configuration"] is None
            else f"{c['test_delta']:+.3f} ({p_text(c['test_p'])})"
        )
        lines.append(f"  against the build's {who.replace('_', ' ')} {c['configuration'] or ''}: {said}")
    lines += [
        result["test_looks"],
        f"adopt it: `set -a; . {session / 'best.env'}; set +a; make run` (serves {result['configuration']} "
        "under these settings and keeps it as the verdict's choice: "
        + " ".join(f"{k}={v}" for k, v in result["adopt"].items())
        + ")",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.tune", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--space", required=True, help="the TOML file of the space (the project's: data/tune.toml)"
    )
    parser.add_argument("--budget", type=int, required=True, help="at most this many trials")
    parser.add_argument("--seed", type=int, default=0, help="which trials are drawn (default 0)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env(os.environ)
        if args.budget < 1:
            raise ValueError(f"--budget {args.budget}: give a number of trials >= 1")
        points = read_space(args.space)
        data = location(settings.data_dir)
        if not isinstance(data, Path):
            raise ValueError(
                f"RAG_DATA_DIR={settings.data_dir}: tuning runs its trials in a local data directory"
            )
        root = data / LEDGER
        build = build_sides(data)
    except (SettingsError, SpaceError, UnknownReference, ValueError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tune = uuid.uuid4().hex[:8]
    session = data / "tune" / tune
    (session / "dagster_home").mkdir(parents=True)
    (session / "dagster_home" / "dagster.yaml").touch()  # the defaults, without Dagster's notice
    share_files(data / "vectors", session / "data" / "vectors")
    tried = []
    trials = draw(points, args.budget, args.seed)
    for number, trial in enumerate(trials, start=1):
        print(f"trial {number}/{len(trials)} ({TAG}={tune}): {json.dumps(trial.settings())}", file=sys.stderr)
        # what the session serves is nobody's: each trial's release is a first one (absolute checks),
        # not held back against the strategy another trial released
        shutil.rmtree(session / "data" / "release", ignore_errors=True)
        code, log = run_trial(settings, session, trial, number, tune)
        if code not in RUN_OK:
            tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
            print(f"{tail}error: trial {number}'s run failed (exit {code}); its log: {log}", file=sys.stderr)
            return 1
        experiment = read_current(session / "data" / LEDGER)["id"]
        import_experiment(session / "data" / LEDGER, root, experiment, tune)
        import_looks(session / "data" / LEDGER, root, experiment, tune)
        best = best_on_dev(read_outcomes(root, experiment))
        tried.append(Tried(number, trial, experiment, best))
        print(
            f"  best on dev: {best['configuration']} {best['value']:.3f} (experiment {experiment})",
            file=sys.stderr,
        )
    share_files(session / "data" / "vectors", data / "vectors")
    best = max(tried, key=lambda t: (round(float(t.best["value"]), 4), float(t.best["mrr@10"]), -t.number))
    chosen = experiment_sides(root, best.experiment)[str(best.best["configuration"])]
    versus = {who: confirm_on_test(chosen, side) if side else None for who, side in build.items()}
    record_look(root, experiment_split(root, best.experiment), best.experiment, f"tune {tune}")
    looks = looks_sentence(experiment_reuse(root, best.experiment), settings.test_looks)
    (session / "best-strategy.toml").write_text(best.trial.strategy_toml())
    retriever = chosen.configuration.split("/", 1)[1]
    adopt = adoption(best.trial, retriever, session / "best-strategy.toml", settings.strategies)
    (session / "best.env").write_text("".join(f"{k}={v}\n" for k, v in adopt.items()))
    result = output(tried, best, chosen, versus, session, looks, adopt)
    print(json.dumps(result, indent=1) if args.json else text(result, session))
    return 0


def build_sides(data: Path) -> dict:
    """The build's baseline and its verdict's choice (sides of its current experiment), which the
    best trial is confirmed against; an error when there is no build to confirm against."""
    root, verdict_path = data / LEDGER, data / "reports" / "verdict.json"
    current = read_current(root)["id"]
    if current is None or not verdict_path.exists():
        raise ValueError(f"{data}: no build to confirm the trials against yet; run `make run` first")
    verdict = json.loads(verdict_path.read_text())
    sides = experiment_sides(root, current)
    if any("split" not in s.rows for s in sides.values()):
        raise ValueError(f"{data}: the build predates dev and test questions; run `make run` first")
    chosen = configuration(verdict["best"][0]) if verdict.get("best") else None
    return {
        "baseline": sides.get(configuration(str(verdict["baseline"]))),
        "current_choice": sides.get(chosen),
    }
