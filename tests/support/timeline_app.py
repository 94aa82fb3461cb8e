"""An app that holds only the timeline, for tests that feed it events themselves."""

from __future__ import annotations

from textual.app import App, ComposeResult

from widgets.timeline import Timeline


class FakeTimelineApp(App[None]):
    """The timeline alone, fed by the test (``app.query_one(Timeline).load(...)``)."""

    def compose(self) -> ComposeResult:
        yield Timeline(id="timeline")


class FakeDeferredTimelineApp(App[None]):
    """The timeline alone, deferring its work as the app's does during a burst."""

    def compose(self) -> ComposeResult:
        yield Timeline(deferred=True, id="timeline")
