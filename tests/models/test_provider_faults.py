"""The fault matrix: ``loopdeck -p`` → litellm → a real HTTP server that misbehaves.

For every fault :class:`~tests.support.fake_openai_server.FakeOpenAIServer` can commit, the
headless CLI (in-process here; in real processes in ``test_provider_faults_cli.py``)
must end with ``session.idle`` exactly once and last, exit with the documented code
within a bounded time, leave a log every line of which the official Copilot SDK
parser accepts, never show or store the API key, and leave a session that a second
run resumes against a healthy server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import WARNING_OUTPUT_TRUNCATED
from agent.loop.history import SUMMARY_PREFIX
from agent.models.litellm_import import import_litellm
from app.exit_codes import EXIT_AUTOPILOT_CAP, EXIT_ERROR, EXIT_OK, EXIT_USAGE
from tests.support.config import write_config
from tests.support.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
    RecordedRequest,
    cut_stream,
    drop_mid_text,
    drop_mid_tool_call,
    empty_body,
    empty_choices,
    hang,
    huge_reply,
    length_cut,
    malformed_tool_call,
    stall,
    status,
    text,
    tool_call,
)
from tests.support.provider_faults import (
    FAST,
    IDLE_TIMEOUT,
    KEY,
    LEAK_MARK,
    MAX_RETRIES,
    MODEL,
    NOTES,
    PLAIN_KEY,
    PROMPT,
    SERVER_MAX_BLOCK,
    SLACK,
    TIMING_OUT,
    Run,
    run_cli,
    wall_time,
)
from tests.support.provider_faults import nothing_left_running as nothing_left_running  # autouse

session_events = pytest.importorskip("copilot.generated.session_events")

# litellm's own use of deprecated pydantic attributes, not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


@pytest.fixture(scope="module", autouse=True)
def litellm_imported() -> None:
    # Paid once, so no case's time bound includes the import.
    import_litellm()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(max_block=SERVER_MAX_BLOCK) as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(NOTES, encoding="utf-8")
    monkeypatch.chdir(ws)
    return ws


def prompt_args(server: FakeOpenAIServer, prompt: str = PROMPT) -> list[str]:
    return ["-p", prompt, "--model", MODEL, "--api-base", server.base_url]


# --- what every run must satisfy ------------------------------------------------------


def assert_idle_once_and_last(run: Run) -> None:
    types = [e["type"] for e in run.events]
    assert types.count("session.idle") == 1, types
    assert types[-1] == "session.idle", types


def assert_log_parses_officially(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "session-state" / session_id / "events.jsonl"
    lines = [line for line in path.read_text("utf-8").splitlines() if line.strip()]
    assert lines
    wire = []
    for line in lines:
        obj = json.loads(line)
        parsed = session_events.session_event_from_dict(obj)
        assert parsed.type != session_events.SessionEventType.UNKNOWN, obj["type"]
        assert parsed.type.value == obj["type"]
        assert str(parsed.id) == obj["id"]
        wire.append(obj)
    assert "session.idle" not in [e["type"] for e in wire]  # ephemeral: never written
    return wire


def assert_key_nowhere(run: Run, home: Path, key: str) -> None:
    for where, content in (("stdout", run.out), ("stderr", run.err)):
        assert key not in content and LEAK_MARK not in content, where
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data and LEAK_MARK.encode() not in data, path


def assert_key_sent(requests: list[RecordedRequest], key: str) -> None:
    for request in requests:
        assert request.header("authorization") == f"Bearer {key}", request.headers


def user_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "user"]


def assert_resumes(
    capfd: pytest.CaptureFixture[str],
    server: FakeOpenAIServer,
    home: Path,
    session_id: str,
    *,
    compacts: bool = False,
) -> Run:
    """A second run on the same session, against a server that now answers well.

    ``compacts``: the history no longer fits the model's window, so a summary is
    asked for first and the reply's request starts from it."""
    if compacts:
        server.script(text("The user asked for a very long reply; it was given."))
    server.script(text("Resumed fine."))
    before = len(server.requests)
    run = run_cli(capfd, *prompt_args(server, "and now?"), "--resume", session_id)
    assert run.code == EXIT_OK, run.err
    assert_idle_once_and_last(run)
    # Only this run's events (the output may or may not repeat the earlier history).
    types = [e["type"] for e in run.events]
    assert "session.resume" in types
    this_run = run.events[len(types) - 1 - types[::-1].index("session.resume") :]
    assert "session.error" not in [e["type"] for e in this_run], this_run
    asked = server.requests[before:]
    if compacts:
        summary_call, asked = asked[0], asked[1:]
        assert "<conversation>" in user_texts(summary_call)[-1]
        done = [e["data"] for e in this_run if e["type"] == "session.compaction_complete"]
        assert [d["success"] for d in done] == [True], done
        assert user_texts(asked[0])[0].startswith(SUMMARY_PREFIX)
        assert len(asked[0].body) < 100_000  # the huge reply stayed behind
    else:
        # The model sees the earlier prompt and the new one: the session continued.
        assert user_texts(asked[0])[0] == PROMPT
    assert [r.behaviour.name for r in asked] == ["text"]  # one call, history accepted
    assert user_texts(asked[0])[-1] == "and now?"
    assert run.of("assistant.message")[-1]["data"]["content"] == "Resumed fine."
    assert_log_parses_officially(home, session_id)
    return run


# --- the matrix -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A fault, the script that plays it, and what loopdeck must make of it."""

    id: str
    script: tuple[Behaviour, ...]
    exit: int
    error_type: str | None = None  # the session.error's errorType, None: no error
    retries: int = 0  # assistant.turn_retry events
    final: str | None = None  # the last assistant.message's content (exit 0)
    config: dict[str, Any] = field(default_factory=lambda: dict(FAST))
    tool_round: bool = False  # the reply asks for a tool: a second call answers

    @property
    def requests(self) -> int:
        return 1 + self.retries + (1 if self.tool_round else 0)

    def worst_case(self) -> float:
        """Longest this case may take: each attempt waiting out the idle timeout if the
        case is one that times out, plus the backoff between attempts (README, "How long
        a dead server can hold a call": the server accepts, then never answers)."""
        cfg = self.config
        waits = self.requests * cfg["idle_timeout"] if cfg is TIMING_OUT else 0.0
        backoff = sum(cfg["retry_base_delay"] * 2**n for n in range(self.retries))
        return waits + backoff


def every(behaviour: Behaviour) -> tuple[Behaviour, ...]:
    """The same fault on the first call and on every retry."""
    return (behaviour,) * (MAX_RETRIES + 1)


CASES = [
    Case(
        "text_with_usage",
        (text("The needle is in notes.txt."),),
        EXIT_OK,
        final="The needle is in notes.txt.",
    ),
    Case(
        "tool_call_in_fragments",
        (tool_call("view", {"path": "notes.txt"}, fragments=7), text("Found it.")),
        EXIT_OK,
        final="Found it.",
        tool_round=True,
    ),
    Case(
        "rate_limit_429_then_ok",
        (status(429), text("Patience.")),
        EXIT_OK,
        retries=1,
        final="Patience.",
    ),
    Case(
        "rate_limit_429_every_time",
        every(status(429)),
        EXIT_ERROR,
        "rate_limit",
        retries=MAX_RETRIES,
    ),
    Case("server_500", every(status(500)), EXIT_ERROR, "server", retries=MAX_RETRIES),
    Case("bad_gateway_502", every(status(502)), EXIT_ERROR, "server", retries=MAX_RETRIES),
    Case("unavailable_503", every(status(503)), EXIT_ERROR, "server", retries=MAX_RETRIES),
    Case(
        "fails_twice_then_ok",
        (status(503), status(502), text("Third time lucky.")),
        EXIT_OK,
        retries=2,
        final="Third time lucky.",
    ),
    Case("unauthorized_401", (status(401, echo_key=True),), EXIT_ERROR, "auth"),
    Case(
        "dropped_mid_text_then_ok",
        (drop_mid_text(), text("Recovered.")),
        EXIT_OK,
        retries=1,
        final="Recovered.",
    ),
    Case(
        "dropped_mid_text_every_time",
        every(drop_mid_text()),
        EXIT_ERROR,
        "connection",
        retries=MAX_RETRIES,
    ),
    Case(
        "dropped_mid_tool_call_every_time",
        every(drop_mid_tool_call()),
        EXIT_ERROR,
        "connection",
        retries=MAX_RETRIES,
    ),
    Case(
        "cut_stream_then_ok",
        (cut_stream(), text("Whole answer.")),
        EXIT_OK,
        retries=1,
        final="Whole answer.",
    ),
    Case(
        "cut_stream_every_time", every(cut_stream()), EXIT_ERROR, "connection", retries=MAX_RETRIES
    ),
    Case(
        "malformed_tool_call_json",
        (malformed_tool_call(), text("My arguments were broken.")),
        EXIT_OK,
        final="My arguments were broken.",
        tool_round=True,
    ),
    Case("empty_choices", (empty_choices(),), EXIT_ERROR, "empty_response"),
    Case("empty_body", (empty_body(),), EXIT_ERROR, "empty_response"),
    Case("reply_of_2_mb", (huge_reply(),), EXIT_OK),
    Case(
        "hang_before_headers", (hang(), hang()), EXIT_ERROR, "timeout", retries=1, config=TIMING_OUT
    ),
    Case(
        "stall_mid_stream", (stall(), stall()), EXIT_ERROR, "timeout", retries=1, config=TIMING_OUT
    ),
    Case(
        "stall_then_ok",
        (stall(), text("Back again.")),
        EXIT_OK,
        retries=1,
        final="Back again.",
        config=TIMING_OUT,
    ),
    Case("finish_reason_length", (length_cut("Cut by the cap"),), EXIT_OK, final="Cut by the cap"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault(
    case: Case,
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, case.config)
    server.script(*case.script)

    run = run_cli(capfd, *prompt_args(server))

    # The documented exit code, and the error (or none) that explains it.
    assert run.code == case.exit, (run.code, run.err, [e["type"] for e in run.events])
    assert_idle_once_and_last(run)
    errors = run.of("session.error")
    if case.error_type is None:
        assert not errors, errors
    else:
        assert [e["data"]["errorType"] for e in errors] == [case.error_type]
        # The HTTP status when there was one; none made up when no answer came.
        last = case.script[-1]
        expected_status = last.status if last.kind == "status" else None
        assert errors[0]["data"].get("statusCode") == expected_status, errors[0]
        if case.error_type != "empty_response":
            # Says which server failed (a model reply that is empty is not the address's fault).
            assert server.base_url in errors[0]["data"]["message"], errors[0]
    assert len(run.of("assistant.turn_retry")) == case.retries

    # What reached the server: every scripted answer used, each with the key.
    requests = server.requests
    assert len(requests) == case.requests, [r.behaviour.name for r in requests]
    assert server.pending == 0
    assert "invalid_request" not in [r.behaviour.name for r in requests]
    assert_key_sent(requests, KEY)

    assert run.seconds < case.worst_case() + SLACK, run.seconds

    if case.final is not None:
        assert run.of("assistant.message")[-1]["data"]["content"] == case.final
    session_id = run.session_id
    log = assert_log_parses_officially(loopdeck_home, session_id)
    assert_key_nowhere(run, loopdeck_home, KEY)
    check_specifics(case, run, log, requests)

    # A 2 MB reply (~500k tokens) no longer fits the model's (assumed 128k) window.
    compacts = case.id == "reply_of_2_mb"
    resumed = assert_resumes(capfd, server, loopdeck_home, session_id, compacts=compacts)
    assert_key_nowhere(resumed, loopdeck_home, KEY)


def check_specifics(
    case: Case, run: Run, log: list[dict[str, Any]], requests: list[RecordedRequest]
) -> None:
    """What one fault in particular must (or must not) leave behind."""
    started = [e["data"]["toolName"] for e in run.of("tool.execution_start")]
    completed = run.of("tool.execution_complete")
    match case.id:
        case "tool_call_in_fragments":
            assert started == ["view"]
            assert [c["data"]["success"] for c in completed] == [True]
            tool_messages = [m for m in requests[1].json["messages"] if m["role"] == "tool"]
            assert "needle" in tool_messages[0]["content"]
        case "malformed_tool_call_json":
            # The broken call reaches the model as a failed result, never as a crash.
            assert [c["data"]["success"] for c in completed] == [False]
            tool_messages = [m for m in requests[1].json["messages"] if m["role"] == "tool"]
            assert len(tool_messages) == 1
        case "dropped_mid_tool_call_every_time":
            assert started == []  # half a tool call never runs
        case "unauthorized_401":
            message = run.of("session.error")[0]["data"]["message"]
            assert "OPENAI_API_KEY" in message, message
        case "reply_of_2_mb":
            [message] = run.of("assistant.message")
            assert len(message["data"]["content"]) == 2 * 1024 * 1024
            logged = next(e for e in log if e["type"] == "assistant.message")
            assert logged["data"]["content"] == message["data"]["content"]
        case "finish_reason_length":
            # Kept, and marked as cut (a schema-valid warning in the log).
            warnings = [e for e in log if e["type"] == "session.warning"]
            assert [w["data"]["warningType"] for w in warnings] == [WARNING_OUTPUT_TRUNCATED]
        case "hang_before_headers" | "stall_mid_stream":
            # The first attempt waited out the idle timeout before the retry (the
            # upper bound is the case's time limit). Measured by the client's own
            # events: when the server thread got to each request varies with load.
            [start] = run.of("assistant.turn_start")
            [retry] = run.of("assistant.turn_retry")
            waited = wall_time(retry) - wall_time(start)
            assert waited >= IDLE_TIMEOUT - 0.01, waited  # stamps are to the millisecond
        case _:
            pass


def test_retry_after_is_honoured(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 429 with Retry-After: 1 waits that second (not the 0.01 s backoff), then succeeds."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, FAST)
    server.script(status(429, retry_after="1"), text("Waited."))
    run = run_cli(capfd, *prompt_args(server))
    assert run.code == EXIT_OK, run.err
    assert_idle_once_and_last(run)
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.95
    assert run.seconds < 1 + SLACK
    [retry] = run.of("assistant.turn_retry")
    assert "1.0s" in retry["data"]["reason"]
    assert_log_parses_officially(loopdeck_home, run.session_id)
    assert_key_nowhere(run, loopdeck_home, KEY)
    assert_resumes(capfd, server, loopdeck_home, run.session_id)


def test_a_key_of_no_known_shape_is_redacted_too(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A local server's key matches no provider pattern; the 401 that quotes it back
    must still not put it on screen or in the log."""
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    write_config(tmp_path, FAST)
    server.script(status(401, echo_key=True))
    run = run_cli(capfd, *prompt_args(server))
    assert run.code == EXIT_ERROR
    assert_idle_once_and_last(run)
    assert [e["data"]["errorType"] for e in run.of("session.error")] == ["auth"]
    assert_key_sent(server.requests, PLAIN_KEY)
    assert_key_nowhere(run, loopdeck_home, PLAIN_KEY)


def test_autopilot_cap_exits_3_and_resumes(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model that never calls task_complete: the first call, one nudge, exit 3."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, FAST)
    run = run_cli(capfd, *prompt_args(server), "--autopilot", "--max-autopilot-continues", "1")
    assert run.code == EXIT_AUTOPILOT_CAP, run.err
    assert_idle_once_and_last(run)
    assert len(server.requests) == 2
    assert_key_sent(server.requests, KEY)
    assert_log_parses_officially(loopdeck_home, run.session_id)
    assert_key_nowhere(run, loopdeck_home, KEY)

    # Resumed in autopilot, it finishes this time.
    server.script(tool_call("task_complete", {"summary": "All done."}))
    again = run_cli(
        capfd, *prompt_args(server, "and now?"), "--resume", run.session_id, "--autopilot"
    )
    assert again.code == EXIT_OK, again.err
    assert_idle_once_and_last(again)
    assert again.of("session.task_complete")[0]["data"]["summary"] == "All done."
    assert user_texts(server.requests[-1])[0] == PROMPT
    assert_log_parses_officially(loopdeck_home, run.session_id)
    assert_key_nowhere(again, loopdeck_home, KEY)


def test_api_base_without_scheme_exits_2_before_any_call(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, FAST)
    bare = f"127.0.0.1:{server.port}"
    run = run_cli(capfd, "-p", PROMPT, "--model", MODEL, "--api-base", bare)
    assert run.code == EXIT_USAGE, run.err
    assert f"http://{bare}" in run.err  # says what to write instead
    assert server.requests == []
    assert LEAK_MARK not in run.out + run.err


def test_credentials_in_the_api_base_are_never_shown(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy's password in the URL is a secret too: the error names the server
    without it. (litellm's HTTP client refuses such a URL next to a bearer key before
    sending anything; whether it does or the server's 503 answers, the run fails.)"""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, FAST)
    server.script(*every(status(503)))
    secret_base = server.base_url.replace("//", "//proxy:pw-DO-NOT-LEAK-0a1b2c@")
    run = run_cli(capfd, "-p", PROMPT, "--model", MODEL, "--api-base", secret_base)
    assert run.code == EXIT_ERROR, run.err
    assert_idle_once_and_last(run)
    [error] = run.of("session.error")
    assert server.base_url in error["data"]["message"], error
    assert_key_nowhere(run, loopdeck_home, KEY)
    assert_log_parses_officially(loopdeck_home, run.session_id)
    server.clear()
    assert_resumes(capfd, server, loopdeck_home, run.session_id)
