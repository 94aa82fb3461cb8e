"""A start that fails for want of an API key (no request ever left) leaves no session
behind: nothing to resume, nothing listed as "error"; a provider's refusal is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.events.schema import SessionErrorData
from agent.log.store import SessionStore
from app.cli import main
from tests.support.scripting import new_session, scripted


def test_no_api_key_leaves_no_error_session_in_the_list(
    loopdeck_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # each try
        assert main(["-p", "hi", "--model", "gpt-4o"]) == 1
        err = capsys.readouterr().err
        assert "No API key for gpt-4o: set OPENAI_API_KEY" in err
        assert "Resume this session" not in err
    assert SessionStore(loopdeck_home).list_sessions() == []


async def test_an_error_a_server_sent_keeps_the_session(tmp_path: Path) -> None:
    """A key a server rejected is a session worth resuming (the user may fix the key)."""
    store = SessionStore(tmp_path / "home")
    session, _ = await new_session(scripted([]), tmp_path, store=store)
    await session.send_and_wait("hi")
    rejected = "The openai API rejected the API key for gpt-4o (401): check OPENAI_API_KEY."
    session.emit(SessionErrorData(error_type="auth", message=rejected))
    session._outcome = "error"
    await session.close()
    assert [s.id for s in store.list_sessions()] == [session.id]
