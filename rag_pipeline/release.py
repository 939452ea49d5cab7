"""`python -m rag_pipeline.release`, as documented: `rag_pipeline.cli.release`."""

import sys

from rag_pipeline.cli.release import main

if __name__ == "__main__":
    sys.exit(main())
