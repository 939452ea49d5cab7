"""Code around a whole run, in the run's own process, under every executor, and what that process
logs. No project module (the layers test): what runs around is handed in."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import dagster as dg
from dagster._core.events import DagsterEvent
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan

# the logger of Dagster's plan, whose warning `quiet_ungated` drops
PLAN_LOGGER = "dagster._core.execution.plan.active"
UNGATED = "emitted no result"

# the instance, the run, its log, and its executor's events -> the events, the run held inside something
Around = Callable[
    [dg.DagsterInstance, dg.DagsterRun, dg.DagsterLogManager, Iterator[DagsterEvent]], Iterator[DagsterEvent]
]


class _AroundExecutor(dg.Executor):
    """`inner`, with its execution of a whole run passed through `around`; every other attribute
    is `inner`'s (dagster-celery's execution loop asks its executor for `app_args()`)."""

    def __init__(self, inner: dg.Executor, around: Around):
        self.inner, self.around = inner, around

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def execute(self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan):
        events = self.inner.execute(plan_context, execution_plan)
        yield from self.around(plan_context.instance, plan_context.dagster_run, plan_context.log, events)

    @property
    def retries(self):
        return self.inner.retries

    @property
    def step_dependency_config(self):
        return self.inner.step_dependency_config

    def get_step_event_or_retry_event(self, *args, **kwargs):
        return self.inner.get_step_event_or_retry_event(*args, **kwargs)


def around_runs(executor_def: dg.ExecutorDefinition, around: Around) -> dg.ExecutorDefinition:
    """`executor_def` (same name, config schema and requirements) whose execution of each run, in
    the run's own process, goes through `around`. Gap: nothing public runs code around a whole run
    in its process under every executor (resources are built per step process, hooks are per op)."""
    create = executor_def.executor_creation_fn
    assert create is not None, executor_def.name
    return dg.ExecutorDefinition(
        name=executor_def.name,
        config_schema=executor_def.config_schema,
        requirements=executor_def.get_requirements,
        executor_creation_fn=lambda init_context: _AroundExecutor(create(init_context), around),
        description=executor_def.description,
    )


def quiet_ungated() -> None:
    """Drop Dagster's warning, in the process that orchestrates a run, that a step gave one of its
    blocking checks no result so its children go on ungated: said for each step that gives none on
    purpose (a reused output, whose checks passed). Gap: no setting turns the line off."""
    logging.getLogger(PLAN_LOGGER).addFilter(lambda record: UNGATED not in record.getMessage())
