"""The ``result`` line that ends ``copilot -p --output-format json``: the run's figures.

It is not a session event (no ``data``, no ``id``): it is read as :class:`UnknownData`
and validated here, by the stream's fold and by the session listing alike.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from agent.events.schema import Event, ShutdownCodeChanges, UnknownData

RESULT_TYPE = "result"  # the last line of `copilot -p --output-format json`


class _Fields(BaseModel):
    # Built on first use: the first model built loads pydantic's plugins (and
    # importlib.metadata), which the app's first frame does not need.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True
    )


class RunUsage(_Fields):
    premium_requests: float | None = None
    total_api_duration_ms: float | None = None
    session_duration_ms: float | None = None
    code_changes: ShutdownCodeChanges | None = None


class RunResult(_Fields):
    """What the ``result`` line says about the whole run."""

    session_id: str | None = None
    exit_code: int | None = None
    usage: RunUsage | None = None


def run_result_of(event: Event) -> RunResult | None:
    """The ``result`` line's figures, if ``event`` is that line (and they read)."""
    if event.type != RESULT_TYPE or not isinstance(event.data, UnknownData):
        return None
    try:
        return RunResult.model_validate(event.data.raw)
    except ValidationError:
        return None
