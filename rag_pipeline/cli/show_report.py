"""Print the evaluation from the report files: `python -m rag_pipeline.show_report`. The verdict
comes last, where a terminal leaves the eye."""

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from rag_pipeline.cli.release import decision_lines, live_line, narrowed_lines
from rag_pipeline.lib.answers import SHORT_KEY, answer_table
from rag_pipeline.lib.core import StorageError, location, read_frame, shown_path
from rag_pipeline.lib.evaluation import (
    BASELINE_RUN,
    LEDGER,
    SHOWN,
    decided_rows,
    experiment_reuse,
    looks_sentence,
    matrix_table,
    reference_table,
    reported_costs,
    short,
    shown_matrix,
    to_markdown,
    with_costs,
)
from rag_pipeline.lib.evaluation.experiments import read_current as read_ledger_current
from rag_pipeline.lib.evaluation.experiments import read_index
from rag_pipeline.lib.evaluation.markdown import folded_md, key_md, plain
from rag_pipeline.lib.judging import served_lines
from rag_pipeline.lib.questions import stale_suggestions
from rag_pipeline.lib.release import (
    REJECTED,
    RELEASE_DIR,
    ReleaseError,
    checked_current,
    read_current,
    read_history,
)
from rag_pipeline.settings import (
    DEFAULT_DAGSTER_HOME,
    DEFAULT_DATA_DIR,
    DEFAULTS,
    PATH_FIELDS,
    VARS,
    Settings,
    SettingsError,
)


def live_release(data, verified: bool) -> dict | ReleaseError | None:
    """`current.json`, each table version it names checked to exist unless `verified` (`make run`
    has just checked every output, the served tables included, and LanceDB takes seconds to import);
    the error when it is damaged."""
    try:
        return read_current(data / RELEASE_DIR) if verified else checked_current(data)
    except ReleaseError as exc:
        return exc


def release_summary(data, current: dict | ReleaseError | None) -> str:
    """The live release, and the last decision when it held a new index back."""
    history = read_history(data / RELEASE_DIR)
    if not len(history):
        return "release: no decision yet"
    lines = [f"live: error: {current}" if isinstance(current, ReleaseError) else live_line(current)]
    lines += narrowed_lines(data)
    if history.iloc[-1]["decision"] == REJECTED:
        lines += decision_lines(history)
    return "\n".join(lines)


def configuration(name: str) -> str:
    """A report's configuration name as `strategy/retriever` (the report drops `/dense`)."""
    return name if "/" in name else f"{name}/dense"


def stale_lines(reports) -> list[str]:
    """The questions whose gold labels went stale at the indexed commit, each with its suggestion."""
    path = reports / "gold_drift.parquet"
    lines = stale_suggestions(read_frame(path)) if path.exists() else []
    return ["", *lines] if lines else []


def pointing(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that point a command at this build rather than `make run`'s: `DAGSTER_HOME`, the
    path settings that differ from their defaults (`make holdout` sets four), then every other
    setting of the build that differs from its default (tune's `best.env` sets the retrieval settings
    a configuration was measured under): a command without them acts on another build."""
    home = env.get("DAGSTER_HOME")
    # DAGSTER_HOME stays absolute: Dagster takes no other
    found = {"DAGSTER_HOME": home} if home and Path(home).resolve() != DEFAULT_DAGSTER_HOME.resolve() else {}
    default = DEFAULTS.path_variables()
    settings = Settings.from_env(env)
    ours = settings.path_variables().items()
    paths = {name: shown_path(value) for name, value in ours if default.get(name) != value}
    # the settings a build is made under (`Settings.shared`), not how one process runs it (`make
    # run` itself sets RAG_RETRY_AFTER)
    others = {k: v for k, v in settings.shared().items() if k not in {VARS[f].name for f in PATH_FIELDS}}
    return found | paths | others


def typed(variables: Mapping[str, str], leave_out: tuple[str, ...] = ()) -> str:
    """`NAME=value ` for each variable (but those `leave_out`), as typed before a command."""
    return "".join(f"{k}={shlex.quote(v)} " for k, v in variables.items() if k not in leave_out)


def next_lines(
    data,
    current: dict | ReleaseError | None,
    verdict: dict,
    where: Mapping[str, str] | None = None,
    same: Mapping[str, str] | None = None,
) -> list[str]:
    """What the user got and what to do next: the served run (and whether it is the baseline or the
    best), an `ask` with a question of their set, the UI, and how to serve the best configuration;
    each command with the variables `where` (`pointing`) it needs to act on this build: `ask` opens
    no Dagster instance. `same`: the strategies the report folds into another with the same chunks
    (a run of one is the run of the other)."""
    where, same = where or {}, same or {}
    current = None if isinstance(current, ReleaseError) else current
    best = configuration(verdict["best"][0]) if verdict.get("best") else None
    lines = []
    if current is not None:
        strategy, _, retriever = current["run"].partition("/")
        served = f"{same.get(strategy, strategy)}/{retriever}"
        role = (
            "the baseline"
            if served == configuration(str(verdict.get("baseline")))
            else "set by RAG_RELEASE_RUN"
        )
        role = "the best configuration" if served == best else role
        lines.append(f"\nserved: {current['run']} ({role}), commit {current['commit'][:12]}")
    example = ask_example(data, current["run"] if current else None)
    lines.append("next:")
    if example:
        asking = typed(where, ("DAGSTER_HOME",))
        lines.append(f'  {asking}.venv/bin/python -m rag_pipeline.ask "{example}"    ask the live index')
    lines.append(
        f"  {typed(where)}make dev    the Dagster UI on http://127.0.0.1:3000 (evaluation_summary holds the report)"
    )
    if best and current is not None and served != best:
        lines.append(
            f"  RAG_RELEASE_RUN={best} {typed(where, ('RAG_RELEASE_RUN',))}make run    serve the best "
            "configuration instead"
        )
    return lines


def ask_example(data, run: str | None) -> str | None:
    """The question `ask` is shown with: the first public answerable one that the served `run` (as
    `strategy/retriever`) answered with a citation of its evidence, so that the example shows an
    answer; else the first public answerable one."""
    questions = data / "notes" / "questions.parquet"
    if not questions.exists():
        return None
    frame = read_frame(questions, columns=["question_id", "q", "answerable", "groups"])
    public = frame[frame["answerable"] & frame["groups"].isna()]
    answers = data / "answers" / "answers.parquet"
    if run is not None and answers.exists():
        strategy, retriever = run.split("/", 1)
        found = read_frame(
            answers, columns=["question_id", "strategy", "retriever", "abstained", "citation_correct"]
        )
        shown = found[
            (found["strategy"] == strategy)
            & (found["retriever"] == retriever)
            & ~found["abstained"].astype(bool)
            & found["citation_correct"].fillna(False).astype(bool)
        ]
        answered = public[public["question_id"].isin(set(shown["question_id"]))]
        public = answered if len(answered) else public
    return str(public["q"].iloc[0]) if len(public) else None


def judged_lines(reports, current: dict | ReleaseError | None, verdict: dict) -> list[str]:
    """One line per criterion for the served run (the live release's, else the report's baseline)."""
    path = reports / "judged_summary.parquet"
    if not path.exists():
        return []
    summary = read_frame(path)
    live = None if isinstance(current, ReleaseError) else current
    run = live["run"] if live else configuration(str(verdict.get("baseline")))
    lines = served_lines(summary, run)
    if not lines:
        return []
    judge = short(str(summary["judge_version"].iloc[0]), 60)
    return [f"\nJudged answers of {run} (judge {judge}):", *(f"  {line}" for line in lines)]


def main(verified: bool = False) -> int:
    """`verified`: every output was checked just now (`make run`), the live tables are not opened again."""
    try:
        where = pointing(os.environ)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return show(where, verified)
    except StorageError as exc:  # the object store down: one line naming it and the variables
        print(f"error: {exc}", file=sys.stderr)
        return 1


def show(where: Mapping[str, str], verified: bool) -> int:
    """Print the report of the data directory the environment names; the exit status."""
    reports = location(os.environ.get("RAG_DATA_DIR") or str(DEFAULT_DATA_DIR)) / "reports"
    path = reports / "evaluation_summary.parquet"
    if not path.exists():
        print(f"{path}: no report yet; materialize evaluation_summary first", file=sys.stderr)
        return 1
    # the rows of the question set the verdict was decided on; the other set's are in report.md
    summary = decided_rows(read_frame(path))
    verdict = json.loads((reports / "verdict.json").read_text())
    same = {s: k for s, k in summary.groupby("strategy")["same_chunks_as"].first().items() if k}
    shown = summary[~summary["strategy"].isin(list(same))]
    budget = decided_rows(read_frame(reports / "budget_recall.parquet"))
    splits = decided_rows(read_frame(reports / "splits.parquet"))
    at5 = shown[shown["k"] == 5]
    print(
        f"commit {summary['commit'].iloc[0][:12]}: {int(summary['n_questions'].iloc[0])} answerable questions, "
        f"{int(summary['n_unanswerable'].iloc[0])} unanswerable, {int(summary['n_unauthorized'].iloc[0])} "
        f"unauthorized; at k=5 {int(at5['leaked_units'].sum())} units leaked, under-filled at most "
        f"{at5['underfilled'].max():.2f}"
    )
    for version in summary["embedding_version"].unique():
        print(f"embedding_version {version}")
    print("\nThe reference experiment's table (dense retrieval):")
    print(to_markdown(reference_table(shown[shown["retriever"] == BASELINE_RUN[1]])))
    print(
        f"\nEvery configuration, best {verdict['measure']} on the development questions first. {folded_md(same)}"
    )
    folded = budget[~budget["strategy"].isin(list(same))], splits[~splits["strategy"].isin(list(same))]
    matrix = matrix_table(shown, *folded)
    if (reports / "costs.parquet").exists():  # retrieval's latency and cost, as the verdict held them
        matrix = with_costs(
            matrix, reported_costs(read_frame(reports / "costs.parquet"), verdict.get("budgets") or {})
        )
    chosen = configuration(verdict["best"][0]) if verdict.get("best") else None
    matrix = shown_matrix(matrix, verdict["best"][0] if chosen else None, verdict["baseline"])
    print(to_markdown(matrix[[c for c in SHOWN if c in matrix]]))
    print(key_md())
    agreement = verdict.get("agreement")
    if agreement:
        tau = agreement["kendall_tau"]
        print(
            f"\nThe {' and '.join(agreement['sets'])} questions rank the {agreement['configurations']} "
            f"configurations with Kendall's tau {'undefined' if tau is None else f'{tau:.2f}'}; "
            f"{len(agreement['flips'])} pair(s) ordered the other way (report.md lists them)"
        )
    answers = reports / "answer_summary.parquet"
    if answers.exists():
        table = read_frame(answers)
        print(f"\nAnswers by {short(table['llm_version'].iloc[0], 60)}:")
        print(to_markdown(answer_table(table)))
        print(SHORT_KEY)
    current = live_release(reports.parent, verified)
    print("\n".join(judged_lines(reports, current, verdict)))
    print(f"\nfull report: {shown_path(reports / 'report.md')}")
    print(release_summary(reports.parent, current))
    print("\n".join(stale_lines(reports) + next_lines(reports.parent, current, verdict, where, same)))
    print(f"\nVerdict: {plain(verdict['wording'])}{looks_note(reports.parent)}")
    return 0


def looks_note(data) -> str:
    """` (the test split (96 questions) has confirmed N choices)`, from the ledger (empty: none recorded)."""
    root = data / LEDGER
    current = read_ledger_current(root)["id"]
    index = read_index(root)
    if current is None or current not in set(index["id"]):
        return ""
    limit = Settings.from_env(os.environ).test_looks
    return f" ({looks_sentence(experiment_reuse(root, current, index), limit)})"


if __name__ == "__main__":
    raise SystemExit(main())
