"""`python -m rag_pipeline.dev` (`make dev`): `rag_pipeline.cli.dev`."""

import sys

from rag_pipeline.cli.dev import main

if __name__ == "__main__":
    sys.exit(main())
