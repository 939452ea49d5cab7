"""`python -m rag_pipeline.ask`, as documented: `rag_pipeline.cli.ask`."""

import sys

from rag_pipeline.cli.ask import main

if __name__ == "__main__":
    sys.exit(main())
