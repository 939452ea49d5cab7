"""`python -m rag_pipeline.gold`, as documented: `rag_pipeline.cli.gold`."""

import sys

from rag_pipeline.cli.gold import main

if __name__ == "__main__":
    sys.exit(main())
