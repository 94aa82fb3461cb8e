"""The OS sandbox for the bash tool: what a command may write, and whether it may connect.

``policy`` decides (modes, settings, what the model and the user are told);
``landlock`` enforces, in the child process only.
"""

from agent.sandbox.policy import (
    SANDBOX_MODES,
    Confinement,
    Sandbox,
    SandboxMode,
    SandboxSettings,
    Support,
    probe,
)

__all__ = [
    "SANDBOX_MODES",
    "Confinement",
    "Sandbox",
    "SandboxMode",
    "SandboxSettings",
    "Support",
    "probe",
]
