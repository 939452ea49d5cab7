# The image of RAG_EXECUTOR=k8s (docs/scaling-out.md, "Kubernetes"): the code server, the run worker
# and every step pod run it. Not built by the tests or CI here (no Docker engine there); what they
# check is the configuration it runs under and the paths it gives its user
# (rag_pipeline_tests/pipeline/test_kubernetes.py).
FROM python:3.11-slim

# GitPython runs git: the notes repository is read, and mirrored on the pod's disk (under /tmp), with it
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

# DAGSTER_HOME: where the instance the pods get in their command (an instance_ref, the launcher's)
# keeps compute logs and local artifacts; the chart's and the run launcher's default path
ENV DAGSTER_HOME=/opt/dagster/dagster_home PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /opt/rag-pipeline
COPY . .
# editable, as in a checkout: the bundled corpus and questions (data/) are found beside the code; the
# user owns every path a pod writes: DAGSTER_HOME, and data/ (the bundled notes repository is built
# there at first use)
RUN pip install --no-cache-dir -e '.[k8s]' \
 && useradd --create-home --uid 1000 rag \
 && mkdir -p "$DAGSTER_HOME" \
 && chown -R rag "$DAGSTER_HOME" data
USER rag

EXPOSE 4000
# the code server; the run worker's and the steps' pods are started with their own commands
CMD ["dagster", "api", "grpc", "-m", "rag_pipeline.definitions", "-h", "0.0.0.0", "-p", "4000"]
