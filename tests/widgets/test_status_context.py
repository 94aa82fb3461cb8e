"""The status line's ``ctx`` and ``/context`` give one number: at rest both count the
history as it is now (the last reply included), and ``ctx`` follows a compaction at
once, not at the next turn."""

from __future__ import annotations

import re
from pathlib import Path

from textual.widgets import Static

from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.app_harness import SIZE
from tests.support.pilot import text_of, wait_for
from tests.support.scripting import FakeCountingModel, FakeRecorder

WINDOW = 8_000


def ctx_shown(app: LoopdeckApp) -> str:
    found = re.search(r"ctx (\d+)%", text_of(app.status))
    assert found, text_of(app.status)
    return found.group(1)


def context_said(app: LoopdeckApp) -> str:
    """The share of the request's room /context gives the total, as ``ctx`` rounds it."""
    said = [str(w.render()) for w in app.query(".command-output").results(Static)][-1]
    total = re.search(r"total\s+([\d,]+)", said)
    room = re.search(r"([\d,]+) for the request", said) or re.search(r"window: ([\d,]+)", said)
    assert total and room, said
    share = int(total.group(1).replace(",", "")) / int(room.group(1).replace(",", ""))
    return f"{share:.0%}".rstrip("%")


async def test_ctx_and_context_agree_at_rest_and_after_a_compaction(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = Script.model_validate(
        {
            "turns": [{"text": "alpha beta " * 600}, {"text": "gamma delta " * 600}],
            "context_window": WINDOW,
        }
    )
    recorder = FakeRecorder()

    async def opener() -> Session:
        model = FakeCountingModel(ScriptedModel(script, "test"))
        session = await Session.create(model=model, cwd=workspace, store=None)
        session.subscribe(recorder)
        return session

    app = LoopdeckApp(opener)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session")
        for number, prompt in enumerate(("write a lot", "and more"), start=1):
            app.prompt.text = prompt
            await pilot.press("enter")
            await wait_for(pilot, lambda n=number: len(recorder.of("session.idle")) == n, "idle")
            await pilot.pause()
            app.prompt.text = "/context"
            await pilot.press("enter")
            await wait_for(pilot, lambda: bool(app.query(".command-output")), "/context")
            await pilot.pause()
            assert ctx_shown(app) == context_said(app), (ctx_shown(app), context_said(app))
            for output in app.query(".command-output"):
                output.remove()
            await pilot.pause()

        before = ctx_shown(app)
        app.prompt.text = "/compact"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(recorder.of("session.compaction_complete")), "done")
        await pilot.pause()
        assert recorder.of("session.compaction_complete")[-1].data.success
        assert int(ctx_shown(app)) < int(before)  # at once, no turn needed
