"""The first message to a real-provider model: drawn at once, never behind litellm's import.

litellm takes seconds to import; on the UI's event loop that froze the app after the
first Enter (nothing drawn, keys not echoed). The app runs in a fresh interpreter
(tests/support/first_message_probe.py), so the import is the real first one, and an import hook
holds it until the user's message is drawn: that can only happen with the import off
the UI's thread. No timing decides the outcome; the loop's longest stall is reported.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_openai_server import FakeOpenAIServer, openai_server
from tests.support.first_message import first_message

__all__ = ["openai_server"]  # the fixture

def test_first_message_is_drawn_while_litellm_imports_off_the_ui_thread(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    result = first_message(tmp_path, openai_server.base_url)
    print(f"longest event-loop stall from Enter to idle: {result['max_loop_lag'] * 1000:.0f} ms")
    assert result["litellm_imported_on_ui_thread"] is False
    assert result["drawn_while_import_held"] is True
    assert result["turn_status"] == ["done"]
    assert len(openai_server.requests) == 1
