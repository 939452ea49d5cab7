"""What a run must execute now: every stale asset and everything downstream of it, in one run.

The runner (`make run`), the commit sensor and the nightly schedule plan the same way: observe the
notes head and the questions file, find the stale assets by `lineage.stale_reason`, and run them
with all their descendants and the two observations, pinned to the commit observed. Inside the run
a step whose inputs turned out unchanged returns at once (`lineage.reuse`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import dagster as dg

from rag_pipeline.defs.lineage import stale_reason
from rag_pipeline.defs.resources import NotesRepository, QuestionsFile
from rag_pipeline.defs.sources import HEAD, QUESTIONS_FILE, observe

SOURCES = (HEAD, QUESTIONS_FILE)
FROM_TAG = "rag/commit_from"
TO_TAG = "rag/commit_to"


@dataclass(frozen=True)
class Plan:
    observed: dict[dg.AssetKey, str]
    stale: dict[dg.AssetKey, str]  # why each stale asset is stale
    selection: list[dg.AssetKey]  # the stale assets and all their descendants, upstream first

    @property
    def head(self) -> str:
        return self.observed[HEAD]

    def digest(self) -> str:
        """The same plan gives the same digest: a sensor never requests one run twice."""
        body = " ".join(
            [*(f"{k.to_user_string()}={v}" for k, v in sorted(self.observed.items())), *self.names()]
        )
        return hashlib.sha256(body.encode()).hexdigest()[:12]

    def names(self) -> list[str]:
        return [k.to_user_string() for k in self.selection]


def plan(graph, instance: dg.DagsterInstance, observed: Mapping[dg.AssetKey, str]) -> Plan:
    """The stale assets of `graph` (an asset graph) given the sources' `observed` versions."""
    stale: dict[dg.AssetKey, str] = {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        parents = sorted(node.parent_keys, key=lambda k: k.to_user_string())
        reason = stale_reason(instance, key, node.code_version, parents, current=observed)
        if reason is not None:
            stale[key] = reason
    reach: set[dg.AssetKey] = set()
    todo = list(stale)
    while todo:
        key = todo.pop()
        if key not in reach:
            reach.add(key)
            todo += list(graph.get(key).child_keys)
    selection = [k for k in graph.toposorted_asset_keys if k in reach]
    return Plan(dict(observed), stale, selection)


def pinned_config(notes_repo: NotesRepository, commit: str) -> dict:
    """Run config that reads the notes at `commit` (a resource's config is replaced whole)."""
    config = {
        "repo": notes_repo.repo,
        "ref": commit,
        "glob": notes_repo.glob,
        "exclude": list(notes_repo.exclude),
    }
    return {"resources": {"notes_repo": {"config": config}}}


def run_request(found: Plan, notes_repo: NotesRepository, last: str | None) -> dg.RunRequest:
    """The one run that brings `found.selection` up to date, observing the sources first."""
    return dg.RunRequest(
        run_key=f"{found.head}:{found.digest()}",
        asset_selection=[*SOURCES, *found.selection],
        run_config=pinned_config(notes_repo, found.head),
        tags={FROM_TAG: last or "", TO_TAG: found.head},
    )


def next_run(
    graph,
    instance: dg.DagsterInstance,
    notes_repo: NotesRepository,
    questions: QuestionsFile,
) -> tuple[Plan, dg.RunRequest | None]:
    """Observe the sources, plan, and the run request that brings everything up to date (None:
    everything is fresh). `notes_repo.ref` names the commit to index."""
    found = plan(graph, instance, observe(notes_repo, questions))
    if not found.stale:
        return found, None
    return found, run_request(found, notes_repo, last_indexed_commit(instance))


def last_indexed_commit(instance: dg.DagsterInstance) -> str | None:
    """The commit recorded by the latest materialization of `source_notes`."""
    records = instance.fetch_materializations(dg.AssetKey("source_notes"), limit=1).records
    if not records:
        return None
    commit = records[0].asset_materialization.metadata.get("commit")
    return str(commit.value) if commit is not None else None


def execute(
    definitions: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest, job_name: str
) -> dg.ExecuteInProcessResult:
    """Execute a planned run in this process (tests; the runner launches it as a run of the job)."""
    job = definitions.resolve_job_def(job_name)
    return job.execute_in_process(
        instance=instance,
        asset_selection=list(request.asset_selection),
        run_config=request.run_config,
        tags=request.tags,
        raise_on_error=False,
    )
