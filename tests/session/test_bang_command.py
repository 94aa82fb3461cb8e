"""``!command`` is the user's own: it runs at once, whatever the rules written for the
model say, and is not asked about; the sandbox still confines it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.permissions.rules import PermissionAnswer, PermissionPolicy, PermissionPrompt
from agent.sandbox.policy import Confinement, Sandbox, SandboxSettings, probe
from tests.support.scripting import new_session, scripted

LANDLOCK = probe()


class FakeAsker:
    """A human who would answer every permission prompt; counts being asked."""

    def __init__(self) -> None:
        self.asked: list[PermissionPrompt] = []

    async def __call__(self, prompt: PermissionPrompt) -> PermissionAnswer:
        self.asked.append(prompt)
        return PermissionAnswer(decision="deny")


async def test_a_bang_command_runs_at_once_without_asking(tmp_path: Path) -> None:
    """With no rule allowing it, the model's `touch` would be asked about; the
    user's runs, and a human who would say no is never asked."""
    session, recorder = await new_session(scripted([]), tmp_path)
    asker = FakeAsker()
    session.permissions.asker = asker
    result = await session.run_user_command("touch made")
    assert result.success, result.error
    assert (tmp_path / "ws" / "made").exists()
    assert asker.asked == []
    assert recorder.of("permission.requested") == []
    assert [e.type for e in recorder.events if not e.ephemeral] == [
        "tool.user_requested",
        "tool.execution_complete",
    ]
    await session.close()


async def test_rules_for_the_model_do_not_apply_to_the_user(tmp_path: Path) -> None:
    policy = PermissionPolicy.from_flags(["shell(ls)"], ["shell(touch)"])
    session, recorder = await new_session(scripted([]), tmp_path, policy=policy)
    result = await session.run_user_command("touch made")
    assert result.success, result.error
    assert (tmp_path / "ws" / "made").exists()
    assert recorder.of("permission.requested") == []
    await session.close()


@pytest.mark.skipif(not LANDLOCK.available, reason=f"no Landlock here: {LANDLOCK.reason}")
async def test_the_sandbox_still_confines_a_bang_command(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = Sandbox(SandboxSettings(), cwd=workspace)
    session, _ = await new_session(scripted([]), tmp_path, sandbox=sandbox)
    try:
        result = await session.run_user_command("touch ../outside")
        assert not result.success
        assert not (tmp_path / "outside").exists()
        inside = await session.run_user_command("touch inside")
        assert inside.success and (workspace / "inside").exists()
    finally:
        await session.close()


@pytest.mark.skipif(not LANDLOCK.available, reason=f"no Landlock here: {LANDLOCK.reason}")
@pytest.mark.parametrize("command", ["touch ../outside", "touch ../outside || true"])
async def test_a_refused_bang_command_tells_the_user_whole_what_would_allow_it(
    tmp_path: Path, command: str
) -> None:
    """The note is for the user, not the model, and comes even when the command
    exited 0 (``|| true``): it names the writable folder and the flags, uncut."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = Sandbox(SandboxSettings(), cwd=workspace)
    session, _ = await new_session(scripted([]), tmp_path, sandbox=sandbox)
    try:
        result = await session.run_user_command(command)
        assert not (tmp_path / "outside").exists()
        assert result.success is command.endswith("|| true")
        (note,) = [line for line in result.content.splitlines() if line.startswith("sandbox: ")]
        assert str(workspace) in note
        assert "/add-dir PATH" in note and "--sandbox off" in note
        assert "tell the user" not in result.content  # the model's wording stays the model's
    finally:
        await session.close()


def test_a_read_only_file_system_is_not_blamed_on_the_sandbox(tmp_path: Path) -> None:
    confinement = Confinement("workspace-write", (tmp_path,), True, None)
    erofs = "touch: cannot touch '/mnt/ro/x': Read-only file system"
    assert confinement.refusal_note(erofs) is None
    assert confinement.refusal_note(erofs, for_user=True) is None
    eacces = "touch: cannot touch '../x': Permission denied"
    assert confinement.refusal_note(eacces) is not None
    assert (confinement.refusal_note(eacces, for_user=True) or "").startswith("sandbox: ")
