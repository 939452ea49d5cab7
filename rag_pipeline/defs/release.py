"""Release stage: whether the evaluated index may be served, and moving the `live` tag when it may."""

from collections.abc import Mapping
from datetime import datetime, timezone

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
from rag_pipeline.lib.core import leaked_rows, may_read
from rag_pipeline.lib.evaluation import answer_cost_per_1k
from rag_pipeline.lib.judging import KEY, faithful_scores
from rag_pipeline.lib.questions import asker_groups, usable
from rag_pipeline.lib.release import (
    CURRENT,
    QUESTIONS,
    RELEASED,
    Decision,
    ReleaseError,
    append_history,
    budget_problems,
    checked_current,
    decide,
    follow_release,
    leak_problem,
    narrow_live,
    question_results,
    read_released_questions,
    verify_release,
    write_release,
)
from rag_pipeline.lib.serving import (
    LIVE,
    MissingTable,
    ServedTable,
    Store,
    live_version,
    search_rows,
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


def served_leaks(table: ServedTable, vectors, questions: pd.DataFrame, k: int) -> list[str]:
    """Every row the served table returns at k to an asker who may not read it, searched as an
    application searches it (the asker's groups as a pre-filter)."""
    found = []
    for vector, row in zip(vectors, questions.itertuples()):
        groups = asker_groups(row)
        if groups is None:
            continue
        hits = search_rows(table, vector, k, list(groups), ["chunk_id", "access"]).to_pylist()
        found += [
            f"question {row.question_id}: {h['chunk_id']} {h['access']}"
            for h in hits
            if not may_read(groups, h["access"])
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


def release_asset(
    strategies: list[Strategy], run: tuple[str, str], resources: Mapping[str, object]
) -> dg.AssetsDefinition:
    by_name = {s.name: s for s in strategies}
    strategy = by_name[run[0]]
    rule = (
        "The index may be served: no leak in retrieval or the served table, the served table passes recall "
        "and fill, the release run within the budgets, and against the last release no recall drop beyond "
        "RAG_RELEASE_MAX_DROP, no critical question newly missed, no less abstention on unauthorized "
        "questions, no significant drop of the answers' faithful score beyond RAG_RELEASE_MAX_FAITHFUL_DROP."
    )

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
        checks=[(GATE, rule, True)],
        logic=[leak_problem, retrieval_leaks, served_leaks, live_tags, judged, last_release, decision_row],
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
        k, name = release.k, "/".join(run)
        questions = usable(store.read(lanes.QUESTIONS))
        askers = {
            str(q): asker_groups(row) for q, row in zip(questions["question_id"], questions.itertuples())
        }
        outcomes = store.read(lanes.lane_path("evaluation", strategy))
        evaluated = outcomes["retriever"].unique()
        outcomes = outcomes[outcomes["retriever"] == run[1]]
        answers = store.read(lanes.ANSWERS)
        answers = answers[(answers["strategy"] == run[0]) & (answers["retriever"] == run[1])]
        results = question_results(questions, outcomes, answers if len(answers) else None, judged(store, run))

        report = store.read(lanes.report_path(lanes.SERVING_REPORT))
        # each table's head holds exactly the rows serving_evaluation measured: the lineage re-runs
        # it when an index's content changes, and a table re-created with the same rows is the same
        served = served_store.get()
        tables = {table_key(s.name): served.open(table_key(s.name)) for s in strategies}
        versions = {name: t.version for name, t in tables.items()}
        table = tables[table_key(run[0])]
        vectors, _ = embedder.embed_questions(questions)
        problems = leak_problem("retrieval", retrieval_leaks(store, strategies, askers))
        problems += leak_problem(f"served table {table.name}", served_leaks(table, vectors, questions, k))
        problems += serving_problems(report[report["strategy"] == run[0]])
        problems += budget_problems(store.path(lanes.report_path(lanes.VERDICT)), run)
        if run[1] not in evaluated:
            problems.append(
                f"the release run {name} was not evaluated (retrievers of {run[0]}: "
                f"{', '.join(sorted(evaluated)) or 'none'})"
            )

        release_dir = store.path(lanes.RELEASE)
        current = last_release(context, store)
        previous = read_released_questions(release_dir)
        decision = decide(results, problems, previous, k, release.max_drop, release.max_faithful_drop)
        commit = str(report["commit"].iloc[0])
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if decision.decision == RELEASED:
            state = {
                "decision": RELEASED,
                "commit": commit,
                "run": name,
                "k": k,
                "recall": decision.recall,
                "recall_on": decision.recall_on,
                "embedding_version": str(report["embedding_version"].iloc[0]),
                "table_versions": versions,
                "questions_sha256": str(questions["questions_sha256"].iloc[0]) if len(questions) else "",
                # the same release again (after a run that died before moving every tag) keeps
                # the commit live before it
                "previous_commit": current["previous_commit"]
                if current and (current["commit"], current["table_versions"]) == (commit, versions)
                else (current or {}).get("commit"),
                "time": now,
            }
            write_release(release_dir, state, results)  # the commit point: the tags follow it
        live = state if decision.decision == RELEASED else current
        if live is not None and (moved := follow_release(store.path(), live)):
            context.log.info(f"tag {LIVE!r} moved to the version current.json names: {', '.join(moved)}")
        # a release carries every narrowing of its notes: what live still withholds is recomputed
        source = store.read(lanes.SOURCE_NOTES, columns=["note", "access"])
        access = {note: tuple(groups) for note, groups in zip(source["note"], source["access"])}
        revoked, _ = narrow_live(store.path(), access, commit)
        row = {"commit": commit, "run": name, "time": now, **decision_row(decision)}
        history = append_history(release_dir, row)
        context.log.info(f"release: {decision.decision}" + "".join(f"\n  - {r}" for r in decision.reasons))
        files = [history] + [p for p in (release_dir / CURRENT, release_dir / QUESTIONS) if p.exists()]
        return materialized(
            config_digest(row | {"time": None}, versions if decision.decision == RELEASED else None),
            {
                "decision": decision.decision,
                "run": name,
                f"recall@{k}": decision.recall,
                "faithful": float(results["faithful"].mean()),  # the judge's, uncorrected
                "compared": decision.compared,
                "live_commit": (live or {}).get("commit", ""),
                "live_withheld": len(revoked.notes),
                # what answering costs the run, at the prices (retrieval's cost is the report's)
                "answer_cost_per_1k": answer_cost_per_1k(
                    answers, release.read_prices(), answerer.backend, answerer.model
                )[0],
                "narrowed": dg.MetadataValue.md(
                    revoked.summary() or "none: live serves what its release decided"
                ),
                "reasons": dg.MetadataValue.md(reasons_md(decision)),
            },
            files=files,
            tags=live_tags(store.path(lanes.DB_DIR), served, live),
            checks=[
                dg.AssetCheckResult(
                    check_name=GATE,
                    passed=decision.decision == RELEASED,
                    metadata={
                        "decision": decision.decision,
                        "reasons": dg.MetadataValue.md(reasons_md(decision)),
                        "newly_missed": ", ".join(decision.newly_missed) or "none",
                    },
                )
            ],
        )

    return release


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


def decision_row(decision: Decision) -> dict:
    return {
        "decision": decision.decision,
        "recall": decision.recall,
        "recall_on": decision.recall_on,
        "reasons": decision.reasons,
        "newly_missed": decision.newly_missed,
    }


def reasons_md(decision: Decision) -> str:
    return "\n".join(f"- {r}" for r in decision.reasons) or "none: every rule holds"
