"""`python -m rag_pipeline.run` (`make run`), as documented: `rag_pipeline.cli.run`."""

import gc
import sys

if __name__ == "__main__":
    # enabled again once the imports are done (cli/run.py): walking their objects took a sixth of a
    # no-op `make run`
    gc.disable()
    from rag_pipeline.cli.run import main

    sys.exit(main())
