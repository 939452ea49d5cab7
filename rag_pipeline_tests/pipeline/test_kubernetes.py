"""`RAG_EXECUTOR=k8s` as docs/scaling-out.md describes it, checked without a cluster: its run config
validates against the k8s executor's config schema, its `dagster.yaml` against Dagster's instance
schema, the run launcher is built from that block, and a step pod gets the launcher's image and
environment. What needs a cluster (pods starting) is not tested here."""

from pathlib import Path

import dagster as dg
import pytest
import yaml

from rag_pipeline.definitions import JOB, build_definitions
from rag_pipeline.settings import Settings
from rag_pipeline_tests.docs.test_docs import snippets

dagster_k8s = pytest.importorskip(
    "dagster_k8s",
    reason="the k8s extra is not installed (`make install` installs it: pip install -e '.[k8s]')",
)
from dagster._core.instance.config import dagster_instance_config  # noqa: E402  (no public validator)
from dagster._core.launcher import RunLauncher  # noqa: E402
from dagster._serdes import ConfigurableClassData  # noqa: E402  (how the instance builds its launcher)
from dagster_k8s.container_context import K8sContainerContext  # noqa: E402


def documented(title: str) -> str:
    """The YAML block of docs/scaling-out.md whose first line is the comment `# <title>`."""
    [block] = [
        s.code
        for s in snippets()
        if s.page == "docs/scaling-out.md" and s.language == "yaml" and s.code.startswith(f"# {title}\n")
    ]
    return block


def kubeconfig(path: Path) -> Path:
    """A kubeconfig naming a cluster on 127.0.0.1 (not asked: building the launcher only reads it),
    in place of the credentials a pod of the cluster has."""
    cluster = {"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}
    user = {"name": "u", "user": {"token": "t"}}
    context = {"name": "x", "context": {"cluster": "c", "user": "u"}}
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [user]}
    path.write_text(yaml.safe_dump(config | {"contexts": [context], "current-context": "x"}))
    return path


def test_the_documented_run_config_validates_against_the_k8s_executors_schema():
    job = build_definitions(Settings.from_env({"RAG_EXECUTOR": "k8s"})).resolve_job_def(JOB)
    assert job.executor_def.name == "k8s"
    run_config = yaml.safe_load(documented("run config"))
    resolved = dg.validate_run_config(job, run_config)["execution"]["k8s"]
    assert resolved["max_concurrent"] == 8
    assert resolved["step_k8s_config"]["container_config"]["resources"]["requests"]["cpu"] == "2"
    run_config["execution"]["config"]["max_concurent"] = 8  # the schema catches a misspelt key
    with pytest.raises(dg.DagsterInvalidConfigError, match='unexpected config entry "max_concurent"'):
        dg.validate_run_config(job, run_config)


def test_the_documented_dagster_yaml_is_an_instance_whose_k8s_launcher_builds_and_feeds_the_steps(
    tmp_path, monkeypatch
):
    (tmp_path / "dagster.yaml").write_text(documented("dagster.yaml (ConfigMap dagster-instance)"))
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "secret")  # from the secret postgres_password_secret names
    instance, _ = dagster_instance_config(str(tmp_path))
    assert instance["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    [limit] = instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert limit["key"] == "rag/data_dir" and limit["limit"] == 1
    block = instance["run_launcher"]
    outside = {"load_incluster_config": False, "kubeconfig_file": str(kubeconfig(tmp_path / "kubeconfig"))}
    config = yaml.safe_dump(block["config"] | outside)
    launcher = ConfigurableClassData(block["module"], block["class"], config).rehydrate(RunLauncher)
    assert isinstance(launcher, dagster_k8s.K8sRunLauncher)
    # what a step pod of a run gets: the k8s executor starts from the launcher's container context
    run = dg.DagsterRun(job_name=JOB)
    step = K8sContainerContext.create_for_run(run, launcher, include_run_tags=False)
    assert step.get_k8s_job_config(None, launcher).job_image == block["config"]["job_image"]
    assert step.namespace == "rag"
    assert step.run_k8s_config.container_config["env_from"] == [
        {"config_map_ref": {"name": "rag-env"}},
        {"secret_ref": {"name": "rag-secrets"}},
    ]
    # the ConfigMap and the Secret it names, as documented
    objects = list(yaml.safe_load_all(documented("rag-env and rag-secrets")))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ConfigMap", "rag-env"),
        ("Secret", "rag-secrets"),
    ]
    assert objects[0]["data"]["RAG_EXECUTOR"] == "k8s" and objects[0]["data"]["RAG_DATA_DIR"].startswith(
        "s3://"
    )
