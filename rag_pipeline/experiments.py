"""`python -m rag_pipeline.experiments`, as documented: `rag_pipeline.cli.experiments`."""

import sys

from rag_pipeline.cli.experiments import main

if __name__ == "__main__":
    sys.exit(main())
