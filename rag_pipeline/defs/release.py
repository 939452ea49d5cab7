"""Release stage: whether the evaluated index may be served, and moving the `live` tag when it may."""

from collections.abc import Mapping

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import (
    AnswerResource,
    DataStore,
    EmbedderResource,
    ReleaseResource,
    ServedStore,
    ServingResource,
)
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import leaked_rows
from rag_pipeline.lib.evaluation import answer_cost_per_1k
from rag_pipeline.lib.judging import KEY, faithful_scores
from rag_pipeline.lib.questions import asker_groups, usable
from rag_pipeline.lib.release import (
    RELEASED,
    Decision,
    Gate,
    ReleaseError,
    budget_problems,
    checked_current,
    leak_problem,
    reasons_md,
    release_decision,
    served_leaks,
    unevaluated,
    verify_release,
)
from rag_pipeline.lib.serving import (
    LIVE,
    MissingTable,
    Store,
    live_version,
    serving_problems,
    table_key,
)

GATE = "release_gate"
VERIFIED = "live_release"


def release_run(setting: str, baseline: tuple[str, str], retrievers: list[str]) -> tuple[str, str]:
    """`RAG_RELEASE_RUN` as (strategy, retriever). Unset: the report's baseline, or, when the
    configured retrievers leave its retriever out, the baseline strategy with the first of them."""
    if setting:
        strategy, retriever = setting.split("/", 1)
        return strategy, retriever
    return baseline if baseline[1] in retrievers else (baseline[0], retrievers[0])


def retrieval_leaks(store: DataStore, strategies: list[Strategy], askers: dict) -> list[str]:
    """Every retrieved unit (any lane, any retriever, any rank) its question's asker may not read."""
    found = []
    for s in strategies:
        columns = ["question_id", "retriever", "rank", "chunk_id", "access"]
        frame = store.read(lanes.lane_path("retrieval", s), columns=columns)
        found += [
            f"{s.name}/{r.retriever} question {r.question_id} rank {r.rank}: {r.chunk_id} {list(r.access)}"
            for r in leaked_rows(frame, askers).itertuples()
        ]
    return found


def live_tags(db_dir, tables: Store, live: dict | None) -> list[tuple[object, str, str, int]]:
    """The live tags as a decision leaves them, recorded so that a table deleted or re-created (which
    loses its tag) makes `release` decide again; a tag already gone is not recorded, as no run could
    bring it back."""
    tags = []
    for name, version in (live or {}).get("table_versions", {}).items():
        try:
            tagged = live_version(tables.open(name))
        except MissingTable:
            continue
        if tagged == version:
            tags.append((db_dir, name, LIVE, version))
    return tags


GATE_RULE = (
    "The index may be served: no leak in retrieval or the served table, the served table passes recall "
    "and fill, the release run within the budgets, and against the last release no recall drop beyond "
    "RAG_RELEASE_MAX_DROP, no critical question newly missed, no less abstention on unauthorized "
    "questions, no significant drop of the answers' faithful score beyond RAG_RELEASE_MAX_FAITHFUL_DROP."
)


def release_asset(
    strategies: list[Strategy], run: tuple[str, str], resources: Mapping[str, object]
) -> dg.AssetsDefinition:
    by_name = {s.name: s for s in strategies}
    by_name[run[0]]  # a release run of no configured strategy fails here, not in a run

    @stage_asset(
        "release",
        group="release",
        config=lambda release, embedder, serving: config_digest(
            release.version(), embedder.version(), serving.version(), run, sorted(by_name)
        ),
        resources=resources,
        kinds=("lancedb", "json"),
        deps=[
            "questions",
            "evaluation_summary",
            "serving_evaluation",
            "answers",
            "judgments",
            "budgets",
            *(lanes.lane_key(stage, s) for s in strategies for stage in ("retrieval", "index")),
        ],
        checks=[(GATE, GATE_RULE, True)],
        logic=[read_candidate, retrieval_leaks, live_tags, judged, last_release],
        description=f"Decides whether `{'/'.join(run)}` as evaluated may be served: on `released` the served "
        f"tables' evaluated versions are tagged `live` and `{lanes.RELEASE}/current.json` names them; "
        f"every decision is appended to `{lanes.RELEASE}/history.parquet`.",
    )
    def release(
        context: dg.AssetExecutionContext,
        release: ReleaseResource,
        embedder: EmbedderResource,
        serving: ServingResource,
        served_store: ServedStore,
        store: DataStore,
        answerer: AnswerResource,
    ) -> dg.MaterializeResult:
        served = served_store.get()
        candidate, problems, versions = read_candidate(store, strategies, run, served, embedder, release.k)
        gate = Gate(release.k, release.max_drop, release.max_faithful_drop)
        current = last_release(context, store)
        done = release_decision(store.path(), run, gate, candidate, problems, versions, current)
        if done.moved:
            context.log.info(f"tag {LIVE!r} moved to the version current.json names: {', '.join(done.moved)}")
        context.log.info(
            f"release: {done.decision.decision}" + "".join(f"\n  - {r}" for r in done.decision.reasons)
        )
        cost = answer_cost_per_1k(done.answers, release.read_prices(), answerer.backend, answerer.model)[0]
        figures = done.figures(release.k, cost)
        released = done.decision.decision == RELEASED
        return materialized(
            config_digest(done.row | {"time": None}, versions if released else None),
            figures | {key: dg.MetadataValue.md(figures[key]) for key in ("narrowed", "reasons")},
            files=done.files,
            tags=live_tags(store.path(lanes.DB_DIR), served, done.live),
            checks=[gate_result(done.decision)],
        )

    return release


def read_candidate(
    store: DataStore,
    strategies: list[Strategy],
    run: tuple[str, str],
    served: Store,
    embedder: EmbedderResource,
    k: int,
) -> tuple[dict[str, pd.DataFrame], list[str], dict[str, int]]:
    """What the gate decides on: the candidate's frames (`release_decision`), what the absolute
    checks find wrong (a leak in retrieval or in the release run's served table, a served table that
    failed its checks, a budget, an unevaluated run), and the served tables' versions."""
    questions = usable(store.read(lanes.QUESTIONS))
    outcomes = store.read(lanes.lane_path("evaluation", run[0]))
    report = store.read(lanes.report_path(lanes.SERVING_REPORT))
    # each table's head holds exactly the rows serving_evaluation measured: the lineage re-runs
    # it when an index's content changes, and a table re-created with the same rows is the same
    tables = {table_key(s.name): served.open(table_key(s.name)) for s in strategies}
    askers = {str(q): asker_groups(row) for q, row in zip(questions["question_id"], questions.itertuples())}
    table = tables[table_key(run[0])]
    vectors, _ = embedder.embed_questions(questions)
    problems = leak_problem("retrieval", retrieval_leaks(store, strategies, askers))
    problems += leak_problem(f"served table {table.name}", served_leaks(table, vectors, questions, k))
    problems += serving_problems(report[report["strategy"] == run[0]])
    problems += budget_problems(store.path(lanes.report_path(lanes.VERDICT)), run)
    problems += unevaluated(run, outcomes["retriever"].unique())
    candidate = {"questions": questions, "outcomes": outcomes, "answers": store.read(lanes.ANSWERS)}
    candidate |= {"judged": judged(store, run), "report": report}
    candidate["notes"] = store.read(lanes.SOURCE_NOTES, columns=["note", "access"])
    return candidate, problems, {name: t.version for name, t in tables.items()}


def gate_result(decision: Decision) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=GATE,
        passed=decision.decision == RELEASED,
        metadata={
            "decision": decision.decision,
            "reasons": dg.MetadataValue.md(reasons_md(decision)),
            "newly_missed": ", ".join(decision.newly_missed) or "none",
        },
    )


def judged(store: DataStore, run: tuple[str, str]) -> pd.DataFrame:
    """Per question of the release run: its judge_version, faithful score and a person's label."""
    rows = store.read(lanes.JUDGMENTS)
    items = store.read(lanes.JUDGED_ITEMS, columns=[*KEY, "faithful_label"])
    return faithful_scores(rows, items, store.read(lanes.report_path(lanes.JUDGED_SUMMARY)), run)


def last_release(context: dg.AssetExecutionContext, store: DataStore) -> dict | None:
    """The live release `current.json` records, with every table version it names; None (and a
    warning) when it is damaged: the decision then compares with no live release."""
    try:
        return checked_current(store.path())
    except ReleaseError as exc:
        context.log.warning(f"deciding as if nothing were live: {exc}")
        return None


@dg.asset_check(
    asset="release",
    name=VERIFIED,
    blocking=True,
    description=f"`{lanes.RELEASE}/current.json` is readable, every table version it names exists, and "
    f"each table's `{LIVE}` tag is on that version.",
)
def live_release(store: DataStore) -> dg.AssetCheckResult:
    reason = verify_release(store.path())
    return dg.AssetCheckResult(passed=reason is None, metadata={"reason": reason or "none"})
