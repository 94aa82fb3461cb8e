"""One turn (= one model call): a header, the streamed reply, its tool cards.

While the reply streams, text goes to a Markdown widget through ``MarkdownStream``,
flushed about ten times a second; when the message ends it gets one full render.
Once older turns are history, the timeline swaps their view for a ``TurnDigest``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import Vertical
from textual.timer import Timer
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from agent.transcript.blocks import ToolCallBlock, TurnBlock
from widgets.format import LIMIT_CUT_MARK, cost, duration, speed, tokens
from widgets.info_row import REASONING, ReasoningView
from widgets.lazy_rich import rich_markdown
from widgets.markdown_split import freeze_point, shared_parser
from widgets.tool_card import ToolCard

if TYPE_CHECKING:
    from textual.widgets import Markdown
    from textual.widgets.markdown import MarkdownStream

FLUSH_SECONDS = 0.1
FREEZE_AT = 1600  # characters in the live Markdown widget before its head is frozen
KEEP_LIVE = 500  # characters that stay live after a freeze (the tail being read)
SPEED_REFRESH_SECONDS = 0.5  # the running turn's tokens/s is redrawn at most this often


class TurnHeader(Static):
    def __init__(self, block: TurnBlock, *, show_model: bool = True) -> None:
        super().__init__(classes="turn-header")
        self.block = block
        self.show_model = show_model  # only when it differs from the turn before

    def render(self) -> Text:
        return header_text(self.block, show_model=self.show_model)


def header_text(block: TurnBlock, *, show_model: bool) -> Text:
    """The turn's first line: number, model, duration, tokens, cost, retries, state."""
    text = Text.assemble((f"Turn {block.number}", "bold"))
    parts = [block.model_label] if show_model else []
    if block.finished:
        parts.append(duration(block.duration))
    usage = []
    if block.input_tokens:
        usage.append(f"{tokens(block.input_tokens)} in")
    if block.output_tokens:
        usage.append(f"{tokens(block.output_tokens)} out")
    if usage:
        parts.append(" / ".join(usage))
    if block.cost:
        parts.append(cost(block.cost))
    parts.append(speed(block.ttft_seconds, block.tokens_per_second))
    if block.retries:
        parts.append(f"{block.retries} retr{'y' if block.retries == 1 else 'ies'}")
    if block.cut_at_limit:
        parts.append(LIMIT_CUT_MARK)
    if block.status == "running":
        parts.append("thinking…" if not block.text and not block.tools else "working…")
    elif block.status in ("aborted", "error"):
        parts.append(block.status)
    shown = [p for p in parts if p]
    if shown:
        text.append("  ·  " + "  ·  ".join(shown), style="dim")
    if block.retries and block.retry_reason:
        text.append(f"\n↻ {block.retry_reason}", style="italic")
    return text


def cut_text(block: TurnBlock) -> Text:
    """What a cut-off attempt had streamed, struck through under its label."""
    text = Text(f"✂ attempt {block.cut_attempt or 1}, cut\n", style="italic")
    text.append(block.cut_text.strip(), style="dim strike")
    return text


class CutAttemptView(Static):
    def __init__(self, block: TurnBlock) -> None:
        super().__init__(classes="turn-cut")
        self.block = block

    def render(self) -> Text:
        return cut_text(self.block)


class TurnView(Vertical):
    def __init__(self, block: TurnBlock, *, show_model: bool = True) -> None:
        super().__init__(classes="turn")
        self.block = block
        self.header = TurnHeader(block, show_model=show_model)
        self._body: Markdown | Static | None = None
        self._stream: MarkdownStream | None = None
        self._shown = ""  # text already handed to the Markdown widget
        self._pending = ""
        self._flush_timer: Timer | None = None
        self._replacing = 0  # full renders waiting for a stopped stream (_replace_stream)
        self._markdown_lock = asyncio.Lock()  # one writer of the live Markdown at a time
        self._frozen: list[Static] = []  # the reply's older part, rendered once
        self._frozen_text = ""
        self._cards: dict[str, ToolCard] = {}
        self._finished = False
        self._header_signature: tuple[object, ...] = ()
        self._rate_shown: float | None = None  # tokens/s in the header as last drawn
        self._rate_at = 0.0
        self._cut: CutAttemptView | None = None
        self._cut_shown = ""
        self._reasoning: ReasoningView | None = None
        # Events can reach the view before it is mounted (a fast model emits a whole
        # turn at once); until on_mount draws the block as it is then, they wait.
        self._ready = False

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.header

    def on_mount(self) -> None:
        self._ready = True
        for tool in self.block.tools:
            self.add_tool(tool)
        self.sync()  # a turn that ended before it was shown gets its final render here

    # --- updates from the timeline ---------------------------------------------

    def sync(self) -> None:
        if not self._ready:
            return
        block = self.block
        # Streamed deltas only touch the text: leave the header and classes alone
        # then (a restyle or repaint per delta is what a fast stream cannot afford).
        rate = block.tokens_per_second
        if rate != self._rate_shown:
            now = time.monotonic()
            if block.speed.settled or now - self._rate_at >= SPEED_REFRESH_SECONDS:
                self._rate_shown, self._rate_at = rate, now
        signature = (
            block.status,
            block.retries,
            block.cut_at_limit,
            block.input_tokens,
            block.output_tokens,
            block.cost,
            bool(block.text),
            len(block.tools),
            block.ttft_seconds,
            self._rate_shown,
        )
        if block.cut_text is not self._cut_shown:
            self._sync_cut()
        if block.reasoning.strip():
            self._sync_reasoning()
        if signature != self._header_signature:
            self._header_signature = signature
            # Layout too: a longer header (usage, speed) may wrap onto another line.
            self.header.refresh(layout=True)
            self.set_class(block.status == "running", "-running")
            self.set_class(block.status in ("aborted", "error"), "-failed")
        text = block.text
        received = self._shown + self._pending
        if text != received:
            if text.startswith(received):
                self._pending += text[len(received) :]
                self._schedule_flush()
            else:
                self._render_full(text)  # replaced, not appended: render it whole
        if block.finished and not self._finished:
            self._finished = True
            self._finish()

    def _sync_cut(self) -> None:
        self._cut_shown = self.block.cut_text
        if not self._cut_shown:
            if self._cut is not None:
                self._cut.remove()
                self._cut = None
        elif self._cut is None:
            self._cut = CutAttemptView(self.block)
            self.mount(self._cut, after=self.header)
        else:
            self._cut.refresh(layout=True)

    def _sync_reasoning(self) -> None:
        if self._reasoning is None:
            self._reasoning = ReasoningView(self.block)
            self.mount(self._reasoning, after=self._cut or self.header)
        else:
            self._reasoning.sync()

    def add_tool(self, tool: ToolCallBlock) -> None:
        if not self._ready or tool.tool_call_id in self._cards:
            return
        card = ToolCard(tool)
        self._cards[tool.tool_call_id] = card
        self.mount(card)

    def sync_tool(self, tool: ToolCallBlock) -> None:
        card = self._cards.get(tool.tool_call_id)
        if card is None:
            self.add_tool(tool)
        else:
            card.sync()

    @property
    def expanded_tools(self) -> list[str]:
        """Ids of the tool calls whose full output the user opened (and ``REASONING``
        if the reasoning is open), for the digest that takes this view's place."""
        opened = [tool_id for tool_id, card in self._cards.items() if card.expanded]
        if self._reasoning is not None and self._reasoning.expanded:
            opened.append(REASONING)
        return opened

    # --- streaming ---------------------------------------------------------------
    #
    # The live Markdown widget holds only the reply's tail: once it holds more than
    # FREEZE_AT characters, the part before a safe cut (widgets/markdown_split.py) is
    # frozen into a Static with one Rich render, and the widget restarts from the cut.
    # A long reply then costs each frame what its last few blocks cost, not all of them.

    def _ensure_markdown(self) -> Markdown:
        from textual.widgets import Markdown  # not on the way to the first frame

        if not isinstance(self._body, Markdown):
            if self._body is not None:
                self._body.remove()
            self._body = Markdown("", classes="turn-text", parser_factory=shared_parser)
            self.mount(self._body, after=self._frozen[-1] if self._frozen else self.header)
        return self._body

    @property
    def _live_text(self) -> str:
        """What the live Markdown widget shows: the text after the frozen part."""
        return self._shown[len(self._frozen_text) :]

    def _schedule_flush(self) -> None:
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_SECONDS, self._start_flush)

    def _start_flush(self) -> None:
        # A worker, not this view's message pump, awaits the flush: it waits for mounts
        # (the Markdown, its blocks, a frozen head), and a widget mounted once the app
        # has begun to exit never starts, so its mount never completes. Awaited in the
        # pump, that kept the view from closing and the app from exiting; a worker is
        # cancelled with its view.
        self._flush_timer = None
        self.run_worker(self._flush(), exclusive=False)

    async def _flush(self) -> None:
        async with self._markdown_lock:
            if not self._pending:
                return
            markdown = self._ensure_markdown()
            if not markdown.is_mounted:
                await _until_mounted(self, markdown)
                if not self._pending or markdown is not self._body:
                    return  # a full render took over meanwhile
            chunk, self._pending = self._pending, ""
            self._shown += chunk
            live = self._live_text
            cut = freeze_point(live, keep=KEEP_LIVE) if len(live) > FREEZE_AT else None
            if cut is not None:
                await self._restart_after_freeze(markdown, live, cut)
                return
            if self._stream is None:
                self._stream = markdown.get_stream(markdown)
            await self._stream.write(chunk)

    async def _restart_after_freeze(self, markdown: Markdown, live: str, cut: int) -> None:
        """Stop the stream, freeze the live text's head at ``cut`` (found on ``live``),
        render the rest whole."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()
        if markdown is not self._body or not markdown.is_attached:
            return  # the text was replaced meanwhile
        # The text may have changed while the stream stopped: then find the cut again.
        await self._freeze_head(markdown, cut if self._live_text == live else None)
        await markdown.update(self._live_text)

    async def _freeze_head(self, markdown: Markdown, cut: int | None = None) -> None:
        """Move the live text before its last safe cut (``cut``, or found now) into a
        Static above the widget."""
        live = self._live_text
        if cut is None and len(live) > FREEZE_AT:
            cut = freeze_point(live, keep=KEEP_LIVE)
        if cut is None:
            return
        head = live[:cut]
        frozen = Static(rich_markdown(head), classes="turn-text")
        self._frozen.append(frozen)
        self._frozen_text += head
        await self.mount(frozen, before=markdown)

    def _unfreeze_unless_prefix(self, text: str) -> None:
        """Text that no longer starts with the frozen part was replaced: drop it."""
        if self._frozen and not text.startswith(self._frozen_text):
            for frozen in self._frozen:
                frozen.remove()
            self._frozen.clear()
            self._frozen_text = ""

    def _render_full(self, text: str) -> None:
        self._pending = ""
        self._unfreeze_unless_prefix(text)
        self._shown = text
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        stream, self._stream = self._stream, None
        if not self._live_text.strip():
            if stream is not None:
                self.run_worker(stream.stop(), exclusive=False)
            if self._body is not None:
                self._body.remove()
                self._body = None
            return
        markdown = self._ensure_markdown()
        busy = self._replacing or self._markdown_lock.locked()
        short = len(self._live_text) <= FREEZE_AT  # else its head is frozen first
        if stream is None and not busy and short and markdown.is_mounted:
            markdown.update(self._live_text)
            return
        # A stream being stopped still appends the fragments it holds; rendered now, the
        # full text would get them tacked on after it. Render it once the stream is done.
        self._replacing += 1
        self.run_worker(self._replace_stream(markdown, stream), exclusive=False)

    async def _replace_stream(self, markdown: Markdown, stream: MarkdownStream | None) -> None:
        try:
            if stream is not None:
                await stream.stop()
            async with self._markdown_lock:
                if self._stream is not None:  # a flush started a new stream meanwhile
                    await self._stream.stop()
                    self._stream = None
                await _until_mounted(self, markdown)
                if markdown is self._body and markdown.is_attached:
                    # A reply that came whole (or in one late burst) is frozen here.
                    await self._freeze_head(markdown)
                    await markdown.update(self._live_text)  # the latest full text
        finally:
            self._replacing -= 1

    def on_unmount(self) -> None:
        # Removed mid-stream (a replay jump, a new session): end the stream's task, or
        # it stays pending until the app exits.
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        stream, self._stream = self._stream, None
        if stream is not None:
            task = asyncio.get_running_loop().create_task(_end_quietly(stream))
            _ending.add(task)
            task.add_done_callback(_ending.discard)

    def _finish(self) -> None:
        """The message ended: one final full render of the (live part of the) text."""
        text = self.block.text
        streaming = self._stream is not None or self._pending or self._flush_timer is not None
        if streaming or (text.strip() and self._body is None):
            self._render_full(text)


_ending: set[asyncio.Task[None]] = set()  # streams being ended after their view went


async def _end_quietly(stream: MarkdownStream) -> None:
    # Its widget is gone: the fragments it still holds have nowhere to go.
    with contextlib.suppress(Exception):
        await stream.stop()


async def _until_mounted(parent: Widget, markdown: Markdown) -> None:
    """Wait for a new Markdown's mount: on mount it renders its initial (empty) text,
    wiping whatever it was given before, so nothing may be written to it until then."""
    if not markdown.is_mounted:
        await AwaitMount(parent, [markdown])
