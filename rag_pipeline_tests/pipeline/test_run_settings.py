"""One set of settings and one code for a whole run: a run records its launcher's shared settings and
code fingerprint; a process built from other ones (a Celery worker's environment, another checkout)
refuses the run's steps with one line before anything is written, and every step writes in the
data directory the run names. The settings no output depends on are not compared, and they change
no asset's code version. Celery's config, the run's and its workers', bounds a lost task."""

import json
import os
import re
import threading

import dagster as dg
import pytest
import yaml

from rag_pipeline.cli import celery_yaml
from rag_pipeline.cli.progress import Progress, user_message
from rag_pipeline.definitions import build_resources
from rag_pipeline.defs.platform.executors import VISIBILITY_MARGIN_S, celery_config
from rag_pipeline.defs.platform.identity import identified
from rag_pipeline.defs.platform.lanes import SOURCE_NOTES
from rag_pipeline.defs.platform.runs import (
    CODE_TAG,
    EMBEDDER_TAG,
    SETTINGS_TAG,
    ended,
    refusal,
    settings_tags,
)
from rag_pipeline.defs.resources import EmbedderResource
from rag_pipeline.settings import VARS, Settings
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.runs import forget_reconstructed_jobs, project_definitions

SMALL = {"RAG_EMBEDDER": "hashing", "RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
FIRST = [dg.AssetKey("source_notes"), dg.AssetKey("cleaned_notes")]
# a value other than the default of each setting that is not shared (`Var.shared`)
NOT_SHARED = {
    "RAG_TEST_LOOKS": "3",
    "RAG_EMBED_URL": "http://127.0.0.1:11435",
    "RAG_EMBED_BATCH_SIZE": "4",
    "RAG_EMBED_CONCURRENCY": "3",
    "RAG_EMBED_TIMEOUT": "5",
    "RAG_EMBED_RETRIES": "1",
    "RAG_LLM_TIMEOUT": "5",
    "RAG_LLM_RETRIES": "1",
    "RAG_JUDGE_TIMEOUT": "5",
    "RAG_JUDGE_RETRIES": "1",
    "RAG_REINDEX": "on",
    "RAG_REINDEX_CRON": "0 4 * * *",
    "RAG_REINDEX_TIMEZONE": "Asia/Tokyo",
    "RAG_RETRY_AFTER": "0",
    "RAG_EXECUTOR": "multiprocess",
    "RAG_REDIS_PORT": "7000",
    "RAG_CELERY_BROKER": "redis://127.0.0.1:7000/0",
    "RAG_CELERY_BACKEND": "redis://127.0.0.1:7000/1",
    "RAG_CELERY_TASK_TIMEOUT": "120",
    "RAG_RUN_TAGS": "rag/tune=t1",
    "RAG_ASK_LOG": "off",
    "RAG_REDACT_TERMS": "terms.txt",
    "RAG_ASK_MAX_CHARS": "100",
}


def run_on(launcher: dict, worker: dict, instance: dg.DagsterInstance):
    """A run the definitions of `launcher` create (their job's tags), executed by a process whose
    definitions `worker` describes, as a Celery worker rebuilds the job from its environment."""
    tags = project_definitions(launcher).resolve_job_def("index_and_evaluate").tags
    job = project_definitions(worker).resolve_job_def("index_and_evaluate")
    return job.execute_in_process(
        instance=instance, asset_selection=FIRST, tags=dict(tags), raise_on_error=False
    )


def init_failure(result) -> str:
    """The line `make run` shows for the run's failure to set up its resources."""
    errors = [
        e.event_specific_data.error
        for e in result.all_events
        if e.event_type_value == "RESOURCE_INIT_FAILURE"
    ]
    return user_message(errors[0])


def test_a_process_with_other_shared_settings_refuses_the_runs_steps_before_writing(tmp_path):
    launcher = SMALL | {"RAG_DATA_DIR": str(tmp_path / "launcher")}
    worker = SMALL | {"RAG_DATA_DIR": str(tmp_path / "worker"), "RAG_ANALYZER": "sudachi"}
    with dg.instance_for_test() as instance:
        result = run_on(launcher, worker, instance)
    assert not result.success
    assert init_failure(result) == (
        "RAG_ANALYZER=sudachi here, char in the run: "
        "start this worker with the run's settings (the launcher's RAG_* variables)"
    )
    assert not (tmp_path / "launcher").exists() and not (tmp_path / "worker").exists()


def test_a_process_with_another_data_directory_writes_in_the_one_the_run_names(tmp_path):
    launcher = SMALL | {"RAG_DATA_DIR": str(tmp_path / "launcher")}
    worker = SMALL | {"RAG_DATA_DIR": str(tmp_path / "worker")}
    with dg.instance_for_test() as instance:
        assert run_on(launcher, worker, instance).success
    assert (tmp_path / "launcher" / SOURCE_NOTES).exists() and not (tmp_path / "worker").exists()


def test_other_code_and_an_ended_run_are_refused():
    own = settings_tags(Settings.from_env(SMALL))
    other_code = dg.DagsterRun(job_name="j", tags={**own, CODE_TAG: "0123456789abcdef"})
    assert refusal(other_code, own).startswith(f"the code here ({own[CODE_TAG]}, ")
    assert refusal(other_code, own).endswith(
        "is not the run's (0123456789abcdef): run the launcher's checkout on this worker"
    )
    failed = dg.DagsterRun(job_name="j", run_id="1234abcd-0000", status=dg.DagsterRunStatus.FAILURE, tags=own)
    assert ended(failed) == "run 1234abcd… has ended (failure): its step is not run"
    assert ended(dg.DagsterRun(job_name="j", status=dg.DagsterRunStatus.STARTED, tags=own)) is None
    # its settings and code are this process's: its result may make its resources again once it ended
    assert refusal(failed, own) is None
    assert refusal(dg.DagsterRun(job_name="j", tags=own), own) is None
    assert refusal(dg.DagsterRun(job_name="j"), own) is None  # `dg.materialize`: nothing recorded


def test_a_setting_that_is_not_shared_changes_no_code_version():
    assert set(NOT_SHARED) == {v.name for v in VARS.values() if not v.shared}
    base = project_definitions(SMALL)
    versions = base.resolve_asset_graph().get_all_asset_keys()
    expected = {k: base.resolve_asset_graph().get(k).code_version for k in versions}
    recorded = json.loads(settings_tags(Settings.from_env(SMALL))[SETTINGS_TAG])
    for name, value in NOT_SHARED.items():
        defs = project_definitions(SMALL | {name: value})
        assert {k: defs.resolve_asset_graph().get(k).code_version for k in versions} == expected, name
        assert json.loads(settings_tags(Settings.from_env(SMALL | {name: value}))[SETTINGS_TAG]) == recorded


def test_the_celery_urls_default_to_the_services_redis_port():
    settings = Settings.from_env({"RAG_REDIS_PORT": "16379"})
    assert (settings.celery_broker, settings.celery_backend) == (
        "redis://127.0.0.1:16379/0",
        "redis://127.0.0.1:16379/1",
    )
    assert Settings.from_env({"RAG_CELERY_BROKER": "redis://h:1/2"}).celery_broker == "redis://h:1/2"


def test_the_workers_celery_yaml_is_the_runs_executor_config_and_bounds_a_lost_task(tmp_path, monkeypatch):
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("RAG_CELERY_TASK_TIMEOUT", "120")
    assert celery_yaml.main([str(tmp_path / "celery.yaml")]) == 0
    validated = get_validated_config(
        str(tmp_path / "celery.yaml")
    )  # as `dagster-celery worker start -y` reads it
    config = celery_config(Settings.from_env(os.environ))  # what it read: CI's RAG_REDIS_PORT among it
    assert yaml.safe_load((tmp_path / "celery.yaml").read_text())["execution"]["config"] == config
    source = validated["config_source"]
    assert (
        source["task_acks_late"] and source["task_reject_on_worker_lost"] and source["task_time_limit"] == 120
    )
    assert source["broker_transport_options"]["visibility_timeout"] == 120 + VISIBILITY_MARGIN_S
    executor = (
        project_definitions({"RAG_EXECUTOR": "celery"}).resolve_job_def("index_and_evaluate").executor_def
    )
    assert executor.name == "celery"


def test_verbose_changes_what_is_shown_not_what_a_rejected_release_exits_with():
    """A real run's log whose `release` step fails its blocking `release_gate` check, seen with and
    without `-v`: both find the rejection (exit 3), only the verbose one shows every event."""

    @dg.asset(name="release", check_specs=[dg.AssetCheckSpec("release_gate", asset="release", blocking=True)])
    def release():
        return dg.MaterializeResult(
            check_results=[dg.AssetCheckResult(passed=False, metadata={"why": "recall dropped"})]
        )

    with dg.instance_for_test() as instance:
        result = dg.materialize([release], instance=instance, raise_on_error=False)
        entries = [r.event_log_entry for r in instance.get_records_for_run(result.run_id).records]
    for verbose in (False, True):
        shown: list[str] = []
        progress = Progress(echo=lambda text="", end="\n", shown=shown: shown.append(text), verbose=verbose)
        for entry in entries:
            progress.see(entry)
        progress.flush(force=True)
        assert progress.rejected(), verbose
        assert any(line.startswith("  FAILED  release: ") for line in shown) is not verbose
        assert (len(shown) == len(entries)) is verbose  # one line per event


def test_follow_passes_what_the_watch_says(tmp_path):
    """The launcher's progress shows the watch's lines once the run is known (`cli.progress.follow`)."""
    from rag_pipeline.cli.progress import REQUEST_TAG, follow

    with dg.instance_for_test() as instance:
        run = instance.add_run(dg.DagsterRun(job_name="j", tags={REQUEST_TAG: "r1"}))
        shown: list[str] = []
        done = threading.Event()
        seen: list[str] = []

        def watch(run_id: str) -> list[str]:
            seen.append(run_id)
            done.set()
            return [f"  LOST  step: of {run_id}"]

        follow(instance, "r1", Progress(echo=lambda text="", end="\n": shown.append(text)), done, watch)
    assert seen == [run.run_id] and shown == [f"  LOST  step: of {run.run_id}"]


def embedding_job() -> dg.JobDefinition:
    """A job of one op that embeds a text with the embedder RAG_EMBED_URL names (a worker's), its
    executor recording the one LAUNCHER_EMBED_URL names (the run's own process's)."""
    own = build_resources(Settings.from_env(os.environ))
    launcher = build_resources(
        Settings.from_env(os.environ | {"RAG_EMBED_URL": os.environ["LAUNCHER_EMBED_URL"]})
    )

    @dg.op
    def embed(embedder: EmbedderResource) -> None:
        embedder.get().embed(["a passage"], "passage")

    executor = identified(
        dg.in_process_executor.configured({}), launcher["embedder"]
    )  # not the one it leaves be

    @dg.job(executor_def=executor, resource_defs={"embedder": own["embedder"]})
    def embedding():
        embed()

    return embedding


def test_the_embedder_is_compared_by_what_it_is_not_by_its_url(tmp_path, monkeypatch):
    """Another server of the run's model is accepted (a server per machine); a server of another
    model (its digest) is refused before anything is embedded."""
    with (
        FakeOllama() as launcher,
        FakeOllama() as same,
        FakeOllama() as other,
        dg.instance_for_test() as instance,
    ):
        other.digest = "sha256:another"
        env = {"RAG_EMBEDDER": "ollama", "RAG_EMBED_MODEL": "bge-m3", "RAG_DATA_DIR": str(tmp_path)}
        for name, value in (env | {"LAUNCHER_EMBED_URL": launcher.url}).items():
            monkeypatch.setenv(name, value)
        results = {}
        for server in (same, other):
            monkeypatch.setenv("RAG_EMBED_URL", server.url)
            forget_reconstructed_jobs()  # built again from the environment now
            results[server] = dg.execute_job(
                dg.reconstructable(embedding_job), instance, raise_on_error=False
            )
        runs = [instance.get_run_by_id(r.run_id) for r in results.values()]
    [recorded] = {run.tags[EMBEDDER_TAG] for run in runs}  # the model as its server names it, and the code
    assert re.fullmatch(r"ollama:bge-m3@sha256:0123456789ab\+code-[0-9a-f]+\|dim=8\|l2\|q=''\|p=''", recorded)
    another = recorded.replace("0123456789ab", "another")
    assert results[same].success and len(same.requests) == 1
    assert not results[other].success and other.requests == []
    [failure] = [e for e in results[other].all_events if e.event_type_value == "STEP_FAILURE"]
    assert user_message(failure.step_failure_data.error) == (
        f"the embedder here (ollama {other.url} model 'bge-m3': {another}) "
        f"is not the run's ({recorded}): give this process the run's model (RAG_EMBEDDER, RAG_EMBED_MODEL; its "
        "RAG_EMBED_URL may name a server of its own)"
    )


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
