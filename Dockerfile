# The image of RAG_EXECUTOR=k8s (docs/scaling-out.md, "Kubernetes"): the code server, the run worker
# and every step pod run it. Not built by the tests or CI here (no Docker engine there); what they
# check is the configuration it runs under (rag_pipeline_tests/pipeline/test_kubernetes.py).
FROM python:3.11-slim

# GitPython runs git: the notes repository is read, and mirrored on the pod's disk, with it
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/rag-pipeline
COPY . .
# editable, as in a checkout: the bundled corpus and questions (data/) are found beside the code
RUN pip install --no-cache-dir -e '.[k8s]' \
 && useradd --create-home --uid 1000 rag \
 && chown -R rag data
USER rag

# where K8sRunLauncher mounts the instance's dagster.yaml (its ConfigMap) in the pods it starts
ENV DAGSTER_HOME=/opt/dagster/dagster_home PYTHONUNBUFFERED=1
EXPOSE 4000
# the code server; the run worker's and the steps' pods are started with their own commands
CMD ["dagster", "api", "grpc", "-m", "rag_pipeline.definitions", "-h", "0.0.0.0", "-p", "4000"]
