"""A session's workspace files, name and metadata through the unmodified Copilot SDK:
``session.workspaces.*``, ``session.name.*``, ``session.metadata.snapshot``."""

from __future__ import annotations

from pathlib import Path

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.rpc import (  # noqa: E402
    NameSetAutoRequest,
    NameSetRequest,
    WorkspacesCreateFileRequest,
    WorkspacesReadFileRequest,
    WorkspacesSaveLargePasteRequest,
)
from copilot.generated.session_events import (  # noqa: E402
    SessionTitleChangedData,
    SessionWorkspaceFileChangedData,
    WorkspaceFileChangedOperation,
)

from tests.support.sdk_runtime import Recorder, Runtime, new_session, shared, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["shared"]  # the module's runtime, started once

QUIET = [{"text": "ok"}]


async def test_files_are_written_listed_read_and_announced(shared: Runtime) -> None:
    session = await new_session(shared, QUIET)
    rec = Recorder()
    session.on(rec)
    ws = session.rpc.workspaces
    assert (await within(ws.list_files())).files == []
    await within(ws.create_file(WorkspacesCreateFileRequest(path="a.txt", content="one")))
    await within(ws.create_file(WorkspacesCreateFileRequest(path="sub/b.txt", content="two")))
    await within(ws.create_file(WorkspacesCreateFileRequest(path="a.txt", content="three")))

    assert (await within(ws.list_files())).files == ["a.txt", "sub/b.txt"]
    read = await within(ws.read_file(WorkspacesReadFileRequest(path="a.txt")))
    assert read.content == "three"
    await rec.wait_for("session.workspace_file_changed")
    changes = [
        (e.data.path, e.data.operation)
        for e in rec.of("session.workspace_file_changed")
        if isinstance(e.data, SessionWorkspaceFileChangedData)
    ]
    assert changes == [
        ("a.txt", WorkspaceFileChangedOperation.CREATE),
        ("sub/b.txt", WorkspaceFileChangedOperation.CREATE),
        ("a.txt", WorkspaceFileChangedOperation.UPDATE),
    ]
    where = await within(ws.get_workspace())
    assert where.workspace is not None and where.workspace.id == session.session_id
    assert where.path is not None
    assert (Path(where.path) / "files" / "sub" / "b.txt").read_text() == "two"
    await within(session.disconnect())


async def test_a_path_may_not_leave_the_workspace(shared: Runtime) -> None:
    session = await new_session(shared, QUIET)
    for bad in ("../out.txt", "x/../../out.txt", "/etc/passwd"):
        with pytest.raises(Exception, match="workspace files directory"):
            await within(
                session.rpc.workspaces.create_file(
                    WorkspacesCreateFileRequest(path=bad, content="x")
                )
            )
        with pytest.raises(Exception, match="workspace files directory"):
            await within(session.rpc.workspaces.read_file(WorkspacesReadFileRequest(path=bad)))
    await within(session.disconnect())


async def test_a_link_inside_the_workspace_does_not_lead_out(
    shared: Runtime, tmp_path: Path
) -> None:
    session = await new_session(shared, QUIET)
    ws = session.rpc.workspaces
    await within(ws.create_file(WorkspacesCreateFileRequest(path="a.txt", content="one")))
    where = await within(ws.get_workspace())
    assert where.path is not None
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (Path(where.path) / "files" / "link.txt").symlink_to(outside)
    with pytest.raises(Exception, match="outside the workspace files directory"):
        await within(ws.create_file(WorkspacesCreateFileRequest(path="link.txt", content="x")))
    with pytest.raises(Exception, match="outside the workspace files directory"):
        await within(ws.read_file(WorkspacesReadFileRequest(path="link.txt")))
    assert outside.read_text() == "keep"
    await within(session.disconnect())


async def test_a_large_paste_is_kept_as_a_file(shared: Runtime) -> None:
    session = await new_session(shared, QUIET)
    content = "paste ✂\n" * 300
    saved = (
        await within(
            session.rpc.workspaces.save_large_paste(
                WorkspacesSaveLargePasteRequest(content=content)
            )
        )
    ).saved
    assert saved is not None and saved.size_bytes == len(content.encode())
    read = await within(
        session.rpc.workspaces.read_file(WorkspacesReadFileRequest(path=saved.filename))
    )
    assert read.content == content
    await within(session.disconnect())


async def test_an_auto_name_yields_to_the_apps_own(shared: Runtime) -> None:
    session = await new_session(shared, QUIET)
    rec = Recorder()
    session.on(rec)
    assert (await within(session.rpc.name.get())).name is None
    auto = await within(session.rpc.name.set_auto(NameSetAutoRequest(summary="  Tidy up  ")))
    assert auto.applied is True
    assert (await within(session.rpc.name.get())).name == "Tidy up"
    await within(session.rpc.name.set(NameSetRequest(name="Mine")))
    again = await within(session.rpc.name.set_auto(NameSetAutoRequest(summary="Other")))
    assert again.applied is False
    assert (await within(session.rpc.name.get())).name == "Mine"
    await rec.wait_for("session.title_changed")
    titles = [
        e.data.title
        for e in rec.of("session.title_changed")
        if isinstance(e.data, SessionTitleChangedData)
    ]
    assert titles[-1:] == ["Mine"]
    snapshot = await within(session.rpc.metadata.snapshot())
    assert snapshot.session_id == session.session_id
    assert snapshot.workspace is not None and snapshot.workspace.name == "Mine"
    assert snapshot.is_remote is False
    await within(session.disconnect())
