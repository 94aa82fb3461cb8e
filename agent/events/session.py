"""The session's lifecycle: start, resume, idle, errors and notices, mode and model
changes, the system prompt, shutdown, abort.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent.events.base import EventData

Mode = Literal["interactive", "autopilot", "plan"]
AbortReason = Literal["user_initiated", "remote_command", "user_abort", "autopilot_credit_limit"]


class WorkingDirectoryContext(EventData):
    cwd: str
    git_root: str | None = None
    branch: str | None = None


class SessionStartData(EventData):
    TYPE = "session.start"
    session_id: str
    version: int = 1
    producer: str = "loopdeck"
    copilot_version: str
    start_time: str
    selected_model: str | None = None
    context: WorkingDirectoryContext | None = None


class SessionResumeData(EventData):
    TYPE = "session.resume"
    event_count: int
    resume_time: str
    selected_model: str | None = None
    context: WorkingDirectoryContext | None = None


class SessionHandoffData(EventData):
    """The session continues another one; loopdeck writes it first in a fork of a
    session it does not own (a Copilot CLI session): ``remoteSessionId`` is the
    origin's id, ``context`` the path of its log (see agent/log/fork.py)."""

    TYPE = "session.handoff"
    handoff_time: str
    source_type: Literal["remote", "local"]
    context: str | None = None
    host: str | None = None
    remote_session_id: str | None = None
    repository: dict[str, Any] | None = None
    summary: str | None = None


class SessionIdleData(EventData):
    TYPE = "session.idle"
    EPHEMERAL = True
    aborted: bool | None = None
    mode: Mode | None = None


class SessionErrorData(EventData):
    TYPE = "session.error"
    error_type: str
    message: str
    status_code: int | None = None
    provider_error_type: str | None = None


class SessionInfoData(EventData):
    TYPE = "session.info"
    info_type: str
    message: str
    tip: str | None = None


class SessionWarningData(EventData):
    TYPE = "session.warning"
    warning_type: str
    message: str


# session.warning's warningType for a reply the provider cut at its output
# token limit (finish_reason "length"); it follows that turn's assistant.message.
WARNING_OUTPUT_TRUNCATED = "output_truncated"


class SessionTaskCompleteData(EventData):
    TYPE = "session.task_complete"
    summary: str | None = None
    success: bool | None = None


class SessionModeChangedData(EventData):
    TYPE = "session.mode_changed"
    previous_mode: Mode
    new_mode: Mode


class SessionModelChangeData(EventData):
    TYPE = "session.model_change"
    new_model: str
    previous_model: str | None = None


class SystemMessageData(EventData):
    """The system prompt (``role: system``) or instructions a developer injected."""

    TYPE = "system.message"
    content: str
    role: Literal["system", "developer"] = "system"
    name: str | None = None


class ShutdownCodeChanges(EventData):
    files_modified: list[str] = Field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0


class SessionShutdownData(EventData):
    TYPE = "session.shutdown"
    shutdown_type: Literal["routine", "error"] = "routine"
    session_start_time: int
    total_api_duration_ms: float = 0
    code_changes: ShutdownCodeChanges = Field(default_factory=ShutdownCodeChanges)
    model_metrics: dict[str, Any] = Field(default_factory=dict)


class SessionCustomNotificationData(EventData):
    """Producer-defined data; ``source`` names the producer (see agent/events/turn_notes.py)."""

    TYPE = "session.custom_notification"
    source: str
    name: str
    payload: Any = None
    subject: dict[str, str] | None = None
    version: int | None = None


class SessionContextClearedData(EventData):
    """The model's context was cleared (``/clear``): earlier turns stay in the log
    and on screen, the model starts from an empty conversation."""

    TYPE = "session.context_cleared"
    messages_cleared: int
    initial_message: str | None = None


class SessionTitleChangedData(EventData):
    TYPE = "session.title_changed"
    title: str


class SessionWorkspaceFileChangedData(EventData):
    """A file in the session's workspace folder was written (an SDK app's own files)."""

    TYPE = "session.workspace_file_changed"
    path: str
    operation: Literal["create", "update"] = "create"


class SessionAutopilotStoppedData(EventData):
    """Autopilot stopped continuing without task_complete (e.g. at its cap)."""

    TYPE = "session.autopilot_stopped"
    reason: str


class AbortData(EventData):
    TYPE = "abort"
    reason: AbortReason = "user_initiated"
