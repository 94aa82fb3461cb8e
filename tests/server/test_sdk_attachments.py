"""``session.send(attachments=…)`` from the unmodified Copilot SDK: files, folders
and selections are recorded on ``user.message`` as the schema has them, and the
model is given their text, as with ``@file`` in the app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.session_events import (  # noqa: E402
    AttachmentDirectory,
    AttachmentFile,
    AttachmentSelection,
    UserMessageData,
)

from tests.support.sdk_runtime import Recorder, T, new_client, script, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_file_directory_and_selection_attachments_reach_the_model(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "pkg").mkdir(parents=True)
    (workspace / "pkg" / "mod.py").write_text("MAGIC = 'zebra-17'\n", encoding="utf-8")
    (workspace / "notes.txt").write_text("nothing here\n", encoding="utf-8")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    client = new_client(tmp_path / "home", workspace)
    await within(client.start())
    try:
        session = await within(
            client.create_session(
                model=script(scripts, [{"text": "Read them."}]),
                on_permission_request=copilot.PermissionHandler.approve_all,
            )
        )
        seen = Recorder()
        session.on(seen)
        await within(
            session.send_and_wait(
                "Look at these",
                attachments=[
                    {"type": "file", "path": "./pkg/mod.py"},
                    {"type": "directory", "path": "pkg", "displayName": "the package"},
                    {
                        "type": "selection",
                        "filePath": "notes.txt",
                        "displayName": "notes.txt:1",
                        "text": "nothing here",
                        "selection": {
                            "start": {"line": 0, "character": 0},
                            "end": {"line": 0, "character": 12},
                        },
                    },
                ],
                timeout=T,
            )
        )
        user = seen.of("user.message")[0].data
        assert isinstance(user, UserMessageData)
        assert user.content == "Look at these"
        assert user.attachments is not None
        file, folder, selection = user.attachments
        assert isinstance(file, AttachmentFile)
        assert file.path == str(workspace / "pkg" / "mod.py")
        assert file.display_name == "./pkg/mod.py"
        assert isinstance(folder, AttachmentDirectory)
        assert folder.display_name == "the package"
        assert isinstance(selection, AttachmentSelection)
        assert selection.text == "nothing here"
        # What the model was sent, read back from the log the runtime wrote.
        home = tmp_path / "home" / "session-state" / session.session_id / "events.jsonl"
        lines = [json.loads(line) for line in home.read_text("utf-8").splitlines()]
        sent = next(e for e in lines if e["type"] == "user.message")["data"]
        assert "MAGIC = 'zebra-17'" in sent["transformedContent"]
        assert "mod.py" in sent["transformedContent"]  # the folder's listing
        assert "nothing here" in sent["transformedContent"]

        # An attachment the runtime cannot record is refused with a reason.
        with pytest.raises(Exception, match="not supported"):
            await within(
                session.send(
                    "and this", attachments=[{"type": "blob", "data": "", "mimeType": "x"}]
                )
            )
    finally:
        await within(client.stop())
