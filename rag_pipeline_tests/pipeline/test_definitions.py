"""The code location as Dagster loads it: every job and the sensor resolve, and the lineage
matches a reviewed snapshot, so an accidental change of the asset graph shows in review (the code
versions' settings part: the rest is a digest of the code, which changes with it).

After an intended change: `UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest rag_pipeline_tests/test_definitions.py`.
"""

import json
import os
from pathlib import Path

import dagster as dg

from rag_pipeline.definitions import defs
from rag_pipeline.defs.platform.lineage import config_of

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.json"


def graph_snapshot(definitions: dg.Definitions) -> dict:
    graph = definitions.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "settings": config_of(node.code_version),
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "checks": sorted(c.name for c in node.check_keys),
        }
    return assets


def test_every_job_and_sensor_resolves():
    jobs = {j.name for j in defs.resolve_all_job_defs()}
    assert "index_and_evaluate" in jobs
    sensors = [defs.resolve_sensor_def(s.name) for s in defs.sensors]
    assert {s.name for s in sensors} == {"rag_automation"}
    assert not defs.schedules  # the nightly re-index is a cron condition


def test_asset_graph_matches_the_snapshot():
    current = graph_snapshot(defs)
    if os.environ.get("UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())
