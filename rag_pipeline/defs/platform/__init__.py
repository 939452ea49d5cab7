"""The platform wing: everything in defs/ that is not a stage. The memo layer (`lineage`, `outputs`,
`assets.stage_asset`), automation (`conditions`, `automation`), runs and what keeps them apart
(`runs`, `lease`, `launcher`), executors and the run's identity (`executors`, `identity`), what
stages share (`lanes`, `io`, `ledger`), and Dagster's private API, quarantined by purpose in
`internals`. It imports no stage module (rag_pipeline_tests/test_layers.py)."""
