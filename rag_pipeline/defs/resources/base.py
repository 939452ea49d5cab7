"""Resources that build themselves from the settings: a field declared `setting("name")` takes the
setting's default and, in `from_settings`, its value, so a setting is named once in `Settings` and
once where it is used (`rag_pipeline.settings.models`, which `ask` uses without Dagster)."""

import dagster as dg

from rag_pipeline.settings.models import SettingFields, setting

__all__ = ["FromSettings", "setting"]


class FromSettings(dg.ConfigurableResource, SettingFields):
    """A Dagster resource whose `from_settings(settings, **resources)` takes the resources it depends on."""
