"""``/model``: the picker filters as you type; with no model configured, ``/model``
starts the session with the model chosen, and the app's start-up note says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList, Static

from agent.models.select import NO_MODEL_HELP, PROVIDER_DEFAULTS
from agent.session.session import Session
from app.app import LoopdeckApp
from app.session_switch import StartupError
from app.tui import in_app
from tests.support.app_harness import SIZE, Harness, make_workspace, send, started
from tests.support.pilot import text_of, wait_for
from tests.support.scripting import scripted
from widgets.model_picker import ModelPicker


def listed(picker: ModelPicker) -> list[str]:
    options = picker.query_one(OptionList)
    return [str(options.get_option_at_index(i).id) for i in range(options.option_count)]


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for keys, _ in PROVIDER_DEFAULTS:
        for key in keys:
            monkeypatch.delenv(key, raising=False)


@pytest.mark.usefixtures("no_keys")
async def test_the_picker_filters_as_you_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPDECK_MODEL", "openai/gpt-4o")
    monkeypatch.setenv("GROQ_API_KEY", "test-key")
    h = Harness([{"text": "hi"}], make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/model")
        await wait_for(pilot, lambda: isinstance(h.app.screen, ModelPicker), "the picker")
        picker = h.app.screen
        assert isinstance(picker, ModelPicker)
        await pilot.press(*"groq")  # no Tab first: typing filters at once
        assert listed(picker) == ["groq/llama-3.3-70b-versatile", "groq"]
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"gpt")
        assert listed(picker) == ["openai/gpt-4o", "gpt"]
        await pilot.press("down", "enter")  # the name as typed
        await wait_for(pilot, lambda: bool(h.recorder.of("session.model_change")), "switch")
        assert h.recorder.of("session.model_change")[0].wire()["data"]["newModel"] == "gpt"


@pytest.mark.usefixtures("no_keys")
async def test_with_no_model_configured_model_starts_the_session(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    opened: list[str] = []

    async def no_model() -> Session:
        raise StartupError(in_app(NO_MODEL_HELP))

    async def with_model(name: str) -> Session:
        opened.append(name)
        if name == "nonsense":
            raise StartupError("No such model: nonsense")
        return await Session.create(model=scripted([{"text": "hi"}]), cwd=workspace, store=None)

    app = LoopdeckApp(no_model, model_opener=with_model)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.query(".startup-error")), "the start-up note")
        note = text_of(app.query_one(".startup-error", Static))
        assert "Type /model to choose one now" in note and "/model scripted:demo" in note
        app.prompt.text = "/model nonsense"
        await pilot.press("enter")
        await wait_for(pilot, lambda: opened == ["nonsense"], "the first try")
        assert app.session is None
        app.prompt.text = "/model"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        picker: Any = app.screen
        assert listed(picker) == ["scripted:demo"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.session is not None, "the session")
        assert opened == ["nonsense", "scripted:demo"]
        assert not app.query(".startup-error")
        outputs = [str(w.render()) for w in app.query(".command-output").results(Static)]
        assert any("Not started with nonsense: No such model" in o for o in outputs)
        assert "No session is open yet." not in "\n".join(outputs)
