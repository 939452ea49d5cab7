"""The gold-label tests' fixture."""

import pytest

from rag_pipeline_tests.support.gold import make_history


@pytest.fixture
def history(tmp_path):
    return make_history(tmp_path)
