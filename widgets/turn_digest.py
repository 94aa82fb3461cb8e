"""A finished turn as one widget: header, reply and tool cards in a single renderable.

A live turn is a container (header, streamed Markdown, a widget per tool card). Once
it is history, those widgets only cost: every frame Textual lays out and styles each
mounted widget, and a long session is mostly history. So finished turns are drawn
by one ``TurnDigest``; its tool calls still expand, by click or with enter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import Static

from agent.transcript.blocks import ToolCallBlock, TurnBlock
from widgets.info_row import REASONING, reasoning_text
from widgets.lazy_rich import rich_markdown
from widgets.tool_card import card_renderable
from widgets.turn_view import cut_text, header_text

TOOL_META = "loopdeck-tool"  # style meta naming the tool call a rendered line belongs to


class TurnDigest(Static, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "turn-digest--header",
        "turn-digest--rule",
        "turn-digest--rule-failed",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_output", "Expand/collapse", show=False)
    ]

    def __init__(
        self, block: TurnBlock, *, show_model: bool = True, expanded: Iterable[str] = ()
    ) -> None:
        super().__init__(classes="turn turn-digest")
        self.block = block
        self.show_model = show_model
        self.expanded: set[str] = set(expanded)  # tool call ids shown in full
        # Drawn once per width, then reused: Textual asks for the height to lay the
        # timeline out, and for the lines to paint it.
        self._lines: tuple[int, list[Strip]] | None = None
        self.set_class(block.status in ("aborted", "error"), "-failed")

    # --- updates from the timeline (rare: the turn has ended) -----------------------

    def sync(self) -> None:
        self.set_class(self.block.status in ("aborted", "error"), "-failed")
        self._redraw()

    def sync_tool(self, tool: ToolCallBlock) -> None:
        self._redraw()

    def _redraw(self) -> None:
        self._lines = None
        self.refresh(layout=True)

    # --- expanding tool output ---------------------------------------------------------

    def toggle(self, tool_call_id: str) -> None:
        self.expanded ^= {tool_call_id}
        self._redraw()

    def action_toggle_output(self) -> None:
        """Enter: expand every tool call of the turn, or fold them all back."""
        ids = {tool.tool_call_id for tool in self.block.tools if tool.finished}
        if self.block.reasoning.strip():
            ids.add(REASONING)
        self.expanded = set() if self.expanded >= ids else ids
        self._redraw()

    def on_click(self, event: events.Click) -> None:
        tool_call_id = event.style.meta.get(TOOL_META)
        if isinstance(tool_call_id, str):
            event.stop()
            self.toggle(tool_call_id)

    # --- drawing -------------------------------------------------------------------------

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines_at(width)) if width > 0 else 0

    def render_line(self, y: int) -> Strip:
        lines = self._lines_at(self.size.width)
        if y < len(lines):
            return lines[y]
        return Strip.blank(self.size.width, self.visual_style.rich_style)

    def _lines_at(self, width: int) -> list[Strip]:
        if self._lines is None or self._lines[0] != width:
            visual = visualize(self, self.render())
            self._lines = (width, Visual.to_strips(self, visual, width, None, self.visual_style))
        return self._lines[1]

    def on_mount(self) -> None:
        # Inline code takes its colours from the Rich theme the app swaps with the
        # Textual theme (app/rich_theme.py): redraw after it, not only on the restyle.
        self.app.theme_changed_signal.subscribe(self, lambda _: self._redraw())

    def on_unmount(self) -> None:
        # The signal drops gone subscribers only when it next fires: until then its
        # callback would keep this widget (and its lines) alive.
        self.app.theme_changed_signal.unsubscribe(self)
        # Gone widgets wait for the cyclic collector: without their lines they cost it
        # a few objects, not a few per line.
        self._lines = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines = None  # a theme change recolours the header and the rules

    def render(self) -> RenderableType:
        """The whole turn as one renderable (drawn into lines by ``_lines_at``)."""
        block = self.block
        header = header_text(block, show_model=self.show_model)
        header.stylize(self._color_of("turn-digest--header"), 0, len(header))
        parts: list[RenderableType] = [header]
        if block.cut_text.strip():
            parts.append(cut_text(block))
        if block.reasoning.strip():
            thinking = reasoning_text(block, expanded=REASONING in self.expanded)
            parts.append(Tagged(thinking, REASONING))
        if block.text.strip():
            parts.append(rich_markdown(block.text))
            if block.tools:
                parts.append(Text())  # the gap a live turn's Markdown leaves
        rule = self._color_of("turn-digest--rule")
        failed_rule = self._color_of("turn-digest--rule-failed")
        for tool in block.tools:
            card = card_renderable(tool, expanded=tool.tool_call_id in self.expanded)
            style = rule if tool.status == "success" else failed_rule
            parts.append(RuledCard(card, style, tool.tool_call_id))
        return Group(*parts)

    def _color_of(self, component: str) -> Style:
        # The full style, not the partial one: theme colours like $text-muted carry an
        # alpha that only the full style has blended with the background.
        return Style.from_color(self.get_component_rich_style(component).color)


class Tagged:
    """A part of the turn whose lines a click can name (see ``TOOL_META``)."""

    def __init__(self, part: RenderableType, tag: str) -> None:
        self.part = part
        self.meta = Style.from_meta({TOOL_META: tag})

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.part, options, pad=False):
            yield from Segment.apply_style(line, post_style=self.meta)
            yield Segment.line()


class RuledCard:
    """A tool card drawn like ``.tool-card``: indented, with a rule down its left side.

    Every line carries the call's id as style meta, so a click knows which card it hit.
    """

    def __init__(self, card: RenderableType, rule: Style, tool_call_id: str) -> None:
        self.card = card
        self.rule = rule
        self.meta = Style.from_meta({TOOL_META: tool_call_id})

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update_width(max(1, options.max_width - 3))
        lines = console.render_lines(self.card, inner, pad=False)
        margin = Segment(" ", self.meta)
        rule = Segment("│", self.rule + self.meta)
        for line in lines:
            yield margin
            yield rule
            yield margin
            yield from Segment.apply_style(line, post_style=self.meta)
            yield Segment.line()
