"""`python -m rag_pipeline.show_report`, as documented: `rag_pipeline.cli.show_report`."""

import sys

from rag_pipeline.cli.show_report import main

if __name__ == "__main__":
    sys.exit(main())
