"""The timeline: the session drawn from its transcript, block by block.

Events go into a :class:`Transcript`; each change it reports updates or mounts one
widget. Mounted height is bounded: past ``max_mounted`` top-level blocks the oldest
are unmounted and a "load earlier" row takes their place. Replays and resumes mount
the tail first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from agent.events.schema import AssistantMessageDeltaData, Event
from agent.transcript.blocks import (
    AbortBlock,
    Block,
    Change,
    ErrorBlock,
    InfoRowBlock,
    NoticeBlock,
    PlanBlock,
    RawBlock,
    ShellBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
)
from agent.transcript.fold import Transcript
from widgets.info_row import InfoRowView, ReasoningView
from widgets.message_blocks import (
    AbortView,
    ErrorView,
    NoticeView,
    NudgeView,
    RawView,
    TaskCompleteView,
    UserMessageView,
)
from widgets.plan_view import PlanView
from widgets.shell_view import ShellView
from widgets.tool_card import ToolCard
from widgets.turn_digest import TurnDigest
from widgets.turn_view import TurnView

MAX_MOUNTED = 40  # top-level blocks kept as widgets
LOAD_CHUNK = 40
# The running turn is a live container (header, streamed Markdown, a widget per card);
# once the next turn starts it becomes one TurnDigest. Each live turn kept costs every
# frame ~5 ms of layout and paint (benchmarks/tui.py), whether or not it changes.
LIVE_TURNS = 1


class EarlierSource(Protocol):
    """Blocks from before the first folded event (a resumed long log, read lazily)."""

    def remaining(self) -> int:
        """Turns not folded yet."""
        ...

    def take(self) -> list[Block]:
        """The next older part, folded (finished blocks, oldest first)."""
        ...


class LoadEarlier(Static, can_focus=True):
    """The row standing in for unmounted older blocks."""

    class Pressed(Message):
        pass

    def on_click(self) -> None:
        self.post_message(self.Pressed())

    def key_enter(self) -> None:
        self.post_message(self.Pressed())


CARD_TYPES = (ToolCard, TurnDigest, LoadEarlier, InfoRowView, ReasoningView)
CARD_SELECTOR = ", ".join(kind.__name__ for kind in CARD_TYPES)


class Timeline(VerticalScroll):
    """Focused (Tab), Up/Down or j/k walk its cards (tool cards, finished turns, the
    "load earlier" row), Enter opens the focused one, Tab goes on past the timeline."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "next_card", "Next card", show=False),
        Binding("up,k", "previous_card", "Previous card", show=False),
        Binding("tab", "focus_past", "Leave the timeline", show=False),
    ]

    def __init__(
        self,
        *,
        nudge_cap: int | None = None,
        deferred: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        # Live events are folded at once, but when ``deferred`` the widgets catch up
        # once the burst of events being handled is over: the events of one step of the
        # loop cost one pass. Each pass is kept small on purpose (an earlier 30 ms
        # batch made fewer, heavier frames, and the heavy ones set the input lag).
        self.deferred = deferred
        self._unshown: list[Change] = []
        self._catch_up_due = False
        self.transcript = Transcript()
        self.nudge_cap = nudge_cap
        # What the next abort line says happens now, when the app knows better than
        # "send a message" (a queued message is sent next).
        self.after_abort: str | None = None
        self.max_mounted = MAX_MOUNTED
        self.earlier: EarlierSource | None = None  # older blocks not folded yet
        self._views: dict[int, Widget] = {}  # block_id -> mounted view
        self._first_mounted = 0  # index in transcript.items of the oldest mounted block
        self._load_row = LoadEarlier(classes="load-earlier")
        self._live_turns: list[TurnView] = []
        self._last_model: str | None = None
        self._welcome: Widget | None = None

    def on_mount(self) -> None:
        self.anchor()
        self._load_row.display = False
        self.mount(self._load_row)

    # --- keyboard -------------------------------------------------------------------

    def watch_has_focus(self, has_focus: bool) -> None:
        # Textual restyles the focused widget and every descendant, hundreds here, on
        # each focus change. Only the timeline's own ``:focus`` rule depends on it (no
        # rule styles what is inside by the timeline's focus): restyle the timeline.
        self.app.stylesheet.update_nodes([self], animate=True)

    def cards(self) -> list[Widget]:
        """What the keyboard can reach, top to bottom."""
        return [w for w in self.query(CARD_SELECTOR) if w.focusable]

    def walks(self, focused: Widget | None) -> bool:
        """True when the card keys apply: the timeline or one of its cards has focus
        (not, say, a permission prompt inside it, which has keys of its own)."""
        return focused is self or (isinstance(focused, CARD_TYPES) and self in focused.ancestors)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_card", "previous_card"):
            return self.walks(self.screen.focused)
        return True

    def action_next_card(self) -> None:
        self._step(+1)

    def action_previous_card(self) -> None:
        self._step(-1)

    def _step(self, step: int) -> None:
        cards = self.cards()
        if not cards:
            self.scroll_relative(y=step, animate=False)  # nothing to walk: scroll a line
            return
        focused = self.screen.focused
        if focused in cards:
            index = cards.index(focused) + step
            target = cards[max(0, min(index, len(cards) - 1))]
        else:
            # From the timeline itself: the first card in view going down, the last
            # going up (the newest, when the view is at the end).
            view = self.region
            in_view = [c for c in cards if c.region.bottom > view.y and c.region.y < view.bottom]
            pool = in_view or cards
            target = pool[0] if step > 0 else pool[-1]
        target.focus()

    def action_focus_past(self) -> None:
        """Tab from inside the timeline: on to what follows it (the prompt), not
        through every card."""
        chain = self.screen.focus_chain
        inside = [i for i, w in enumerate(chain) if w is self or self in w.ancestors]
        if not inside:
            return
        after = chain[inside[-1] + 1 :] + chain[: inside[0]]
        if after:
            after[0].focus()

    # --- feeding -------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """One live event: fold it, then touch only the widgets it changed."""
        changes = self.transcript.apply(event)
        if not self.deferred or (not self._unshown and self._into_live_view(event, changes)):
            for change in changes:
                self._show(change)
            return
        self._unshown.extend(changes)
        if not self._catch_up_due and self._unshown:
            self._catch_up_due = True
            self.call_next(self.show_pending)

    def _into_live_view(self, event: Event, changes: list[Change]) -> bool:
        """A streamed delta for a turn drawn live: its view only buffers the text (and
        flushes it on its own timer), so a catch-up pass would cost more than it saves."""
        return isinstance(event.data, AssistantMessageDeltaData) and all(
            isinstance(self._views.get(change.item.block_id), TurnView) for change in changes
        )

    def show_pending(self) -> None:
        """Bring the widgets up to date with everything folded so far."""
        self._catch_up_due = False
        changes, self._unshown = self._unshown, []
        done: set[tuple[int, str]] = set()  # (block, tool call id) brought up to date
        made: set[int] = set()  # blocks whose view this pass mounted, as they are now
        for change in changes:
            item = change.item
            owner = change.parent if change.parent is not None else item
            key = (owner.block_id, item.tool_call_id if isinstance(item, ToolCallBlock) else "")
            if key in done or owner.block_id in made:
                continue  # a view made or synced in this pass already shows it
            had_view = owner.block_id in self._views
            self._show(change)
            done.add(key)
            if not had_view and owner.block_id in self._views:
                made.add(owner.block_id)

    def load(self, events: Iterable[Event], *, finished: bool = False) -> AwaitMount | None:
        """Earlier events (resume, replay): fold all, mount only the tail (awaiting the
        result waits for those widgets to be mounted).

        ``finished``: they are the whole of a file no process writes any more (see
        :meth:`Transcript.finish_replay`)."""
        self.show_pending()
        for event in events:
            self.transcript.apply(event)
        self.transcript.finish_replay(finished=finished)
        items = self.transcript.items
        start = max(0, len(items) - self.max_mounted)
        self._first_mounted = len(items)
        mounted = self._mount_range(start, len(items), at_end=True)
        self._first_mounted = start
        self._update_load_row()
        return mounted

    def finish_file(self) -> None:
        """A replay reached the end of a file no process writes any more: what it left
        open (a turn, a tool call, a permission request) is drawn as interrupted."""
        self.show_pending()
        for change in self.transcript.finish_replay(finished=True):
            self._show(change)

    def reset(self, transcript: Transcript | None = None) -> None:
        """Forget everything shown (replay jumps rebuild from a window of the log)."""
        self._unshown.clear()
        for view in self._views.values():
            view.remove()
        for marker in self.query(".marker"):
            marker.remove()
        if self._welcome is not None:
            self._welcome.remove()
            self._welcome = None
        self._views.clear()
        self._live_turns.clear()
        self._first_mounted = 0
        self._last_model = None  # the first turn drawn after a reset names its model
        self.transcript = transcript or Transcript()
        self.earlier = None
        self._update_load_row()

    def set_earlier(self, earlier: EarlierSource | None) -> None:
        """Where older blocks come from, once known (after the tail was drawn)."""
        self.earlier = earlier
        self._update_load_row()

    def welcome(self, banner: Widget) -> None:
        """The banner of a new session. It belongs above the whole session, also once
        older blocks come back (they mount below the banner and the "load earlier" row)."""
        if self._welcome is not None:
            self._welcome.remove()
        self._welcome = banner
        self.mount(banner, before=self._load_row)

    def mark(self, text: str) -> None:
        """A row that is not part of the session (e.g. a shortened gap in a replay)."""
        self.show_pending()  # the row goes after what came before it
        self.mount(Static(text, classes="marker"))

    # --- widgets -------------------------------------------------------------------

    def _show(self, change: Change) -> None:
        item = change.item
        if change.parent is not None and isinstance(item, ToolCallBlock):
            turn_view = self._views.get(change.parent.block_id)
            if isinstance(turn_view, TurnView | TurnDigest):
                turn_view.sync_tool(item)
            return
        view = self._views.get(item.block_id)
        if view is None:
            if change.kind == "added" or item in self.transcript.items[-1:]:
                self._append(item)
            return
        if isinstance(view, TurnView | TurnDigest | ToolCard | ShellView | InfoRowView):
            view.sync()
        else:
            view.refresh()

    def _append(self, item: Block) -> None:
        # The newest turn is live even if it ended before it was shown: it is what the
        # user reads now, drawn like every reply (history is drawn by TurnDigest).
        live = isinstance(item, TurnBlock) and self.transcript.turns - item.number < LIVE_TURNS
        view = self._make_view(item, live=live)
        self._views[item.block_id] = view
        self.mount(view)
        if isinstance(view, TurnView):
            self._live_turns.append(view)
            # Older live turns become history once they have ended (a turn still
            # running, e.g. the last one of a crashed log, stays live until it does).
            for older in self._live_turns[:-LIVE_TURNS]:
                if older.block.finished:
                    self._live_turns.remove(older)
                    self._to_digest(older)
        self._prune()

    def _to_digest(self, view: TurnView) -> None:
        """A live turn became history: one cheap widget takes its place."""
        block = view.block
        if not block.finished or self._views.get(block.block_id) is not view:
            return
        digest = TurnDigest(block, show_model=view.header.show_model, expanded=view.expanded_tools)
        self._views[block.block_id] = digest
        self.mount(digest, before=view)
        view.remove()

    def _make_view(self, item: Block, *, live: bool = False) -> Widget:
        match item:
            case TurnBlock():
                show_model = item.model_label != self._last_model
                self._last_model = item.model_label
                if item.finished and not live:  # history (resume, replay, earlier turns)
                    return TurnDigest(item, show_model=show_model)
                return TurnView(item, show_model=show_model)
            case UserBlock(is_nudge=True):
                return NudgeView(item, self.nudge_cap)
            case UserBlock():
                return UserMessageView(item)
            case ToolCallBlock():
                return ToolCard(item)  # a call with no turn (foreign logs)
            case ShellBlock():
                return ShellView(item)
            case TaskCompleteBlock():
                return TaskCompleteView(item)
            case ErrorBlock():
                return ErrorView(item)
            case AbortBlock() if self.after_abort is not None:
                next_step, self.after_abort = self.after_abort, None
                return AbortView(item, next_step)
            case AbortBlock():
                return AbortView(item)
            case NoticeBlock():
                return NoticeView(item)
            case PlanBlock():
                return PlanView(item)
            case InfoRowBlock():
                return InfoRowView(item)
            case RawBlock():
                return RawView(item)
        raise TypeError(f"no view for {type(item).__name__}")  # pragma: no cover

    def _prune(self) -> None:
        items = self.transcript.items
        while len(items) - self._first_mounted > self.max_mounted:
            old = items[self._first_mounted]
            view = self._views.pop(old.block_id, None)
            if view is not None:
                if view in self._live_turns:
                    self._live_turns.remove(view)
                view.remove()
            self._first_mounted += 1
        self._update_load_row()

    def _mount_range(self, start: int, stop: int, *, at_end: bool) -> AwaitMount | None:
        items = self.transcript.items
        views = []
        for item in items[start:stop]:
            view = self._make_view(item)
            self._views[item.block_id] = view
            views.append(view)
            if isinstance(view, TurnView):  # a turn still running when the log stops
                self._live_turns.append(view)
        if not views:
            return None
        if at_end:
            return self.mount_all(views)
        return self.mount_all(views, after=self._load_row)

    def on_load_earlier_pressed(self, _: LoadEarlier.Pressed) -> None:
        self.load_earlier()

    def load_earlier(self, count: int = LOAD_CHUNK) -> AwaitMount | None:
        self.show_pending()
        if self._first_mounted == 0 and self.earlier is not None:
            # Every folded block is mounted: fold the part of the log before them.
            older = self.earlier.take()
            self.transcript.items[:0] = older
            self._first_mounted = len(older)
        start = max(0, self._first_mounted - count)
        mounted = self._mount_range(start, self._first_mounted, at_end=False)
        self._first_mounted = start
        self._update_load_row()
        return mounted

    def _update_load_row(self) -> None:
        hidden = self._first_mounted
        unread = self.earlier.remaining() if self.earlier is not None else 0
        self._load_row.display = hidden > 0 or unread > 0
        if hidden:
            self._load_row.update(f"▲ {hidden} earlier blocks — click or press enter to load more")
        elif unread:
            self._load_row.update(
                f"▲ {unread} earlier turns of this session — click or press enter to load more"
            )

    @property
    def hidden_blocks(self) -> int:
        """Folded blocks above the mounted ones, not mounted yet."""
        return self._first_mounted

    @property
    def mounted_blocks(self) -> int:
        return len(self._views)
