"""The session's permission level for autopilot, chosen once by the user in the app.

Autopilot never waits for a human, so a call the rules leave open ("ask") is denied.
When the user switches to autopilot in the app and the rules would deny edits or
shell commands, the app asks once for the session's level:

* ``allow-all``: every tool runs without asking in this workspace (deny rules still win);
* ``edits``: creating and editing files runs; shell commands follow the rules;
* ``rules``: nothing changes, what the rules do not allow is denied.

The question and the answer are recorded as the SDK's ``elicitation.requested`` /
``elicitation.completed`` pair (the answer's ``content`` holds ``permissionLevel``),
so replay shows the choice and resume restores it. The recorded level applies only
where somebody could have been asked (:meth:`PermissionLevelChoice.enable`, called
by the app); a headless run keeps to its flags.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol

from agent.events.permission_level import (
    CONTENT_KEY,
    LEVELS,
    OPTIONS,
    QUESTION,
    SOURCE,
    Level,
    level_of,
)
from agent.events.schema import (
    ElicitationCompletedData,
    ElicitationRequestedData,
    Event,
    EventData,
    Mode,
)

if TYPE_CHECKING:
    from agent.permissions.gate import PermissionGate
    from agent.tools.registry import ToolRegistry

def denied_kinds(gate: PermissionGate, tools: ToolRegistry) -> list[str]:
    """Kinds of call (``write``, ``shell``…) that autopilot would deny for want of a rule.

    A command is probed as the empty command line: only a rule for every command
    (``shell``, not ``shell(git:*)``) or ``--allow-all-tools`` lets it through.
    """
    kinds: list[str] = []
    for name in tools.names():
        tool = tools.get(name)
        if tool is None or tool.kind == "read" or tool.kind in kinds:
            continue
        verdict, _rule = gate.policy.decide(tool.kind, name, "")
        if verdict == "ask":
            kinds.append(tool.kind)
    return kinds


class LevelHost(Protocol):
    permissions: PermissionGate

    def emit(self, data: EventData) -> Event: ...

    def tools_for(self, mode: Mode) -> ToolRegistry: ...


class PermissionLevelChoice:
    """Asks once, records the answer, and applies the level to the session's policy."""

    def __init__(self, host: LevelHost) -> None:
        self.host = host
        self.level: Level | None = None
        self.pending: str | None = None  # the question on screen now, not yet answered
        self._questions: set[str] = set()  # request ids of this question, in the log
        self._enabled = False

    def enable(self) -> None:
        """Somebody can be asked (the app): the recorded level, and later ones, apply."""
        self._enabled = True
        self._apply()

    def denied(self) -> list[str]:
        """What autopilot's rules would deny, if the level is still to choose.

        Empty (nothing to ask) once a level is chosen, or when the rules deny nothing.
        """
        if self.level is not None:
            return []
        return denied_kinds(self.host.permissions, self.host.tools_for("autopilot"))

    def ask(self) -> str:
        """Record the question; answer it with :meth:`answer`."""
        request_id = str(uuid.uuid4())
        # Set here, not by the fold: a question left open in a resumed log waits for nobody.
        self.pending = request_id
        self.host.emit(
            ElicitationRequestedData(
                request_id=request_id,
                message=QUESTION,
                elicitation_source=SOURCE,
                requested_schema=_schema(),
            )
        )
        return request_id

    def answer(self, request_id: str, level: Level | None) -> None:
        """Record the answer: a level, or None when the user cancelled the switch."""
        if level is None:
            data = ElicitationCompletedData(request_id=request_id, action="cancel")
        else:
            data = ElicitationCompletedData(
                request_id=request_id, action="accept", content={CONTENT_KEY: level}
            )
        self.host.emit(data)

    def fold(self, event: Event) -> None:
        match event.data:
            case ElicitationRequestedData(elicitation_source=source, request_id=rid):
                if source == SOURCE:
                    self._questions.add(rid)
            case ElicitationCompletedData(request_id=rid) as data:
                if rid not in self._questions:
                    return  # another question's answer
                self._questions.discard(rid)
                if rid == self.pending:
                    self.pending = None
                level = level_of(data)
                if level is not None:
                    self.level = level
                    self._apply()
            case _:
                pass

    def _apply(self) -> None:
        if not self._enabled or self.level is None:
            return
        policy = self.host.permissions.policy
        match self.level:
            case "allow-all":
                policy.allow_all = True
            case "edits":
                policy.approved_writes = True
            case "rules":
                pass


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            CONTENT_KEY: {
                "type": "string",
                "title": "Permission level",
                "enum": list(LEVELS),
                "enumNames": [o.title for o in OPTIONS],
            }
        },
        "required": [CONTENT_KEY],
    }
