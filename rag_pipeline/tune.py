"""`python -m rag_pipeline.tune` (`make tune`), as documented: `rag_pipeline.cli.tune`."""

import sys

from rag_pipeline.cli.tune import main

if __name__ == "__main__":
    sys.exit(main())
