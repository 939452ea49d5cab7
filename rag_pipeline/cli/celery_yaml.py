"""`python -m rag_pipeline.cli.celery_yaml PATH`: write the Celery workers' config (`celery.yaml`,
which `dagster-celery worker start -y` reads) from this environment's settings, as the run's
executor has it (`executors.celery_config`). `make services` and `make worker` run it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import yaml

from rag_pipeline.settings import Settings, SettingsError


def main(argv: list[str]) -> int:
    from rag_pipeline.defs.platform.executors import celery_config

    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(argv[0])
    text = yaml.safe_dump({"execution": {"config": celery_config(settings)}}, sort_keys=False)
    # beside it, then renamed over it: a worker starting meanwhile reads the old file or the new
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".celery.")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
