"""`python -m rag_pipeline.asks`, as documented: `rag_pipeline.cli.asks`."""

import sys

from rag_pipeline.cli.asks import main

if __name__ == "__main__":
    sys.exit(main())
