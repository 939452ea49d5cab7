"""The farm every ledger test builds on (`rag_pipeline_tests.support.farm`)."""

import pytest

from rag_pipeline_tests.support.farm import make_farm


@pytest.fixture
def farm(tmp_path):
    """A repository of N_NOTES notes, one fact each, and settings that evaluate fixed-200 dense on it."""
    return make_farm(tmp_path)
