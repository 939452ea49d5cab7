"""Everything the project takes from Dagster's private modules, and only here, grouped by purpose:
`reads` (what Dagster records), `events` (reported outside a run), `launch` (runs and their
launcher), `execution` (code around a whole run). An upgrade of Dagster fails here first
(rag_pipeline_tests/pipeline/test_dagster_internals.py names each piece). These modules import no
project module: what they need of the project's policy is handed in. Each function says which gap of
the public API it fills; docs/assets.md lists them."""
