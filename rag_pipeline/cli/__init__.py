"""The command-line modules: `python -m rag_pipeline.<name>` runs `rag_pipeline.cli.<name>`'s `main`
(a module of two lines at the package's top keeps the documented command working)."""
