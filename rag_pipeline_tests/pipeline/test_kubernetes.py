"""`RAG_EXECUTOR=k8s` as docs/scaling-out.md describes it, checked without a cluster or a Docker
engine: its run config validates against the k8s executor's config schema, its `dagster.yaml`
against Dagster's instance schema (run monitoring on); the run launcher built from that block builds
the run worker's Job as the installed dagster-k8s does (the cluster's API call caught: there is no
cluster here), with no mount, the environment and the instance in its command; a step's Job gets the
launcher's image and environment; the Helm values give that `dagster.yaml`; the image makes and owns
the paths its user writes, and `.dockerignore` keeps `data/` out but the bundled inputs. What needs
a cluster (pods starting) is not tested here."""

import re
import subprocess
from pathlib import Path

import dagster as dg
import pytest
import yaml

from rag_pipeline.definitions import JOB, build_definitions, reconstructable_job
from rag_pipeline.settings import PROJECT_ROOT, Settings
from rag_pipeline_tests.docs.test_docs import snippets

dagster_k8s = pytest.importorskip(
    "dagster_k8s",
    reason="the k8s extra is not installed (`make install` installs it: pip install -e '.[k8s]')",
)
from dagster._core.instance.config import dagster_instance_config  # noqa: E402  (no public validator)
from dagster._core.instance.ref import InstanceRef  # noqa: E402  (what the launcher puts in a pod's command)
from dagster._core.launcher import LaunchRunContext, RunLauncher  # noqa: E402
from dagster._serdes import ConfigurableClassData  # noqa: E402  (how the instance builds its launcher)
from dagster_k8s.container_context import K8sContainerContext  # noqa: E402
from dagster_k8s.job import construct_dagster_k8s_job  # noqa: E402

IMAGE = "registry.example.com/rag-pipeline:1a2b3c4"
DAGSTER_HOME = "/opt/dagster/dagster_home"


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


def documented_launcher(directory: Path, monkeypatch) -> tuple[dict, dagster_k8s.K8sRunLauncher]:
    """The documented `dagster.yaml` in `directory`, as Dagster's instance config reads it, and the
    run launcher built from its block (the credentials a pod of the cluster has replaced by a
    kubeconfig naming 127.0.0.1)."""
    (directory / "dagster.yaml").write_text(documented("dagster.yaml (ConfigMap dagster-instance)"))
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "secret")  # from the secret postgres_password_secret names
    instance, _ = dagster_instance_config(str(directory))
    block = instance["run_launcher"]
    outside = {"load_incluster_config": False, "kubeconfig_file": str(kubeconfig(directory / "kubeconfig"))}
    config = yaml.safe_dump(block["config"] | outside)
    return instance, ConfigurableClassData(block["module"], block["class"], config).rehydrate(RunLauncher)


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
    instance, launcher = documented_launcher(tmp_path, monkeypatch)
    block = instance["run_launcher"]
    assert instance["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    [limit] = instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert limit["key"] == "rag/data_dir" and limit["limit"] == 1
    assert (
        instance["run_monitoring"]["enabled"] and instance["run_monitoring"]["max_resume_run_attempts"] == 0
    )
    assert isinstance(launcher, dagster_k8s.K8sRunLauncher) and launcher.supports_check_run_worker_health
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


def test_the_run_workers_job_gets_the_instance_in_its_command_and_mounts_nothing(tmp_path, monkeypatch):
    """The Job the documented launcher builds for a run, as the installed dagster-k8s builds it (its
    call to the cluster's API caught), and a step's Job built from the step's container context."""
    _, launcher = documented_launcher(tmp_path, monkeypatch)
    created = []
    monkeypatch.setattr(
        launcher._api_client,
        "create_namespaced_job_with_retries",
        lambda body, namespace: created.append(body),
    )
    origin = dg.reconstructable(reconstructable_job).get_python_origin()
    origin = origin._replace(repository_origin=origin.repository_origin._replace(container_image=IMAGE))
    with dg.instance_for_test() as instance:
        # the instance a pod gets is the launcher's: that of the documented dagster.yaml (opening it
        # would connect to its Postgres, which is not here)
        monkeypatch.setattr(instance, "get_ref", lambda: InstanceRef.from_dir(str(tmp_path)))
        launcher.register_instance(instance)
        run = instance.add_run(dg.DagsterRun(job_name=JOB, job_code_origin=origin))
        launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    [job] = created
    assert job.spec.template.spec.volumes in (None, [])  # no ConfigMap, nothing mounted
    [container] = job.spec.template.spec.containers
    assert container.image == IMAGE and container.volume_mounts in (None, [])
    env = {e.name: e for e in container.env}
    assert env["DAGSTER_HOME"].value == DAGSTER_HOME
    password = env["DAGSTER_PG_PASSWORD"].value_from.secret_key_ref
    assert (password.name, password.key) == ("dagster-postgresql", "postgresql-password")
    assert [(s.config_map_ref or s.secret_ref).name for s in container.env_from] == ["rag-env", "rag-secrets"]
    command, args = container.args[:3], dg.deserialize_value(container.args[3])
    assert command == ["dagster", "api", "execute_run"] and args.run_id == run.run_id
    storage = yaml.safe_load(args.instance_ref.run_storage_data.config_yaml)["postgres_db"]
    assert storage["hostname"] == "postgres.rag.svc.cluster.local"
    assert storage["password"] == {"env": "DAGSTER_PG_PASSWORD"}  # the name, not the password
    # local files go where the launcher's DAGSTER_HOME is (in the cluster /opt/dagster/dagster_home,
    # which the image makes and gives its user): the pods get the launcher's paths
    assert yaml.safe_load(args.instance_ref.local_artifact_storage_data.config_yaml) == {
        "base_dir": str(tmp_path)
    }
    # a step's Job: the launcher's image, namespace and environment, and no mount either
    context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=False)
    step = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(None, launcher),
        args=["dagster", "api", "execute_step"],
        job_name="step-job",
        pod_name="step-pod",
        component="step_worker",
        user_defined_k8s_config=context.run_k8s_config,
    )
    [step_container] = step.spec.template.spec.containers
    assert step_container.image == IMAGE and context.namespace == "rag"
    assert step_container.volume_mounts in (None, []) and step.spec.template.spec.volumes in (None, [])
    assert {e.name for e in step_container.env} >= {"DAGSTER_HOME", "DAGSTER_PG_PASSWORD"}


def test_the_helm_values_give_the_documented_dagster_yaml(tmp_path, monkeypatch):
    """The Helm values, read as the chart's instance templates read them
    (helm/dagster/templates/helpers/instance/ in dagster-io/dagster), say what the `dagster.yaml` says."""
    instance, _ = documented_launcher(tmp_path, monkeypatch)
    values = yaml.safe_load(documented("Helm values (dagster/dagster)"))
    pg, launcher = values["postgresql"], values["runLauncher"]["config"]["k8sRunLauncher"]
    assert instance["storage"]["postgres"]["postgres_db"] == {
        "hostname": pg["postgresqlHost"],
        "port": pg["service"]["port"],
        "username": pg["postgresqlUsername"],
        "password": {"env": "DAGSTER_PG_PASSWORD"},  # the chart's, always
        "db_name": pg["postgresqlDatabase"],
        "scheme": pg["postgresqlScheme"],
    }
    assert not pg["enabled"] and not values["generatePostgresqlPasswordSecret"]
    daemon = values["dagsterDaemon"]
    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert daemon["runCoordinator"]["type"] == instance["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert queued["tagConcurrencyLimits"] == instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    camel = {re.sub(r"_(.)", lambda m: m[1].upper(), k): v for k, v in instance["run_monitoring"].items()}
    assert daemon["runMonitoring"] == camel
    run_launcher = instance["run_launcher"]["config"]
    assert values["runLauncher"]["type"] == instance["run_launcher"]["class"]
    assert launcher["jobNamespace"] == run_launcher["job_namespace"]
    assert [m["name"] for m in launcher["envConfigMaps"]] == run_launcher["env_config_maps"]
    assert [m["name"] for m in launcher["envSecrets"]] == run_launcher["env_secrets"]
    assert values["global"]["postgresqlSecretName"] == run_launcher["postgres_password_secret"]
    assert values["global"]["dagsterHome"] == run_launcher["dagster_home"] == DAGSTER_HOME
    [code] = values["dagster-user-deployments"]["deployments"]
    assert f"{code['image']['repository']}:{code['image']['tag']}" == run_launcher["job_image"]
    assert code["dagsterApiGrpcArgs"] == ["-m", "rag_pipeline.definitions"]
    assert code["envConfigMaps"] == launcher["envConfigMaps"] and code["envSecrets"] == launcher["envSecrets"]


def test_the_image_owns_what_its_user_writes_and_leaves_out_all_of_data_but_the_bundled_inputs():
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    [home] = re.findall(r"DAGSTER_HOME=(\S+)", dockerfile)
    assert home == DAGSTER_HOME  # where the launcher's instance keeps its local files, in every pod
    before_user = dockerfile.split("\nUSER rag\n")[0]
    assert 'mkdir -p "$DAGSTER_HOME"' in before_user and 'chown -R rag "$DAGSTER_HOME" data' in before_user
    ignored = (PROJECT_ROOT / ".dockerignore").read_text().splitlines()
    tracked = subprocess.run(
        ["git", "ls-files", "data"], cwd=PROJECT_ROOT, capture_output=True, text=True
    ).stdout
    bundled = {f"!data/{path.split('/')[1]}" for path in tracked.split()}
    assert "data/*" in ignored and {line for line in ignored if line.startswith("!")} == bundled
