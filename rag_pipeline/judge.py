"""`python -m rag_pipeline.judge`, as documented: `rag_pipeline.cli.judge`."""

import sys

from rag_pipeline.cli.judge import main

if __name__ == "__main__":
    sys.exit(main())
