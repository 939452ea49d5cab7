"""Resources that build themselves from the settings: a field declared `setting("name")` takes the
setting's default and, in `from_settings`, its value, so a setting is named once in `Settings` and
once where it is used."""

from typing import Any

import dagster as dg
from pydantic import Field

from rag_pipeline.settings import DEFAULTS, Settings

SETTING = "setting"


def setting(name: str) -> Any:
    """A resource field set from the setting `name`."""
    value = getattr(DEFAULTS, name)
    return Field(
        default=list(value) if isinstance(value, tuple) else value, json_schema_extra={SETTING: name}
    )


class FromSettings(dg.ConfigurableResource):
    @classmethod
    def from_settings(cls, settings: Settings, **resources: object) -> "FromSettings":
        """This resource as `settings` describe it; `resources` are the ones it depends on."""
        values = {
            name: getattr(settings, extra[SETTING])
            for name, field in cls.model_fields.items()
            if isinstance(extra := field.json_schema_extra, dict) and SETTING in extra
        }
        return cls(**values, **resources)
