"""`python -m rag_pipeline.instance` (the Makefile, before `make run` and `make dev`): `rag_pipeline.cli.instance`."""

import sys

from rag_pipeline.cli.instance import main

if __name__ == "__main__":
    sys.exit(main())
