"""litellm stays offline and quiet wherever loopdeck reaches it.

One module imports litellm (agent/models/litellm_import.py), after switching it to
its bundled model map and offline mode, and turns off its banners. Imported anywhere
else first, litellm fetched its price map from the internet (four "model cost map
fetch failed" warnings with no network) and printed its red "Provider List" banner
on stdout for a model name it could not place, in the middle of
``--output-format json``. These run ``loopdeck -p`` as its own process without the
test suite's own offline switches, with every https request sent to a proxy that
only records it was asked.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai_server import FakeOpenAIServer, openai_server, text
from tests.support.paths import ROOT

__all__ = ["openai_server"]  # the fixture

OWNER = Path("agent/models/litellm_import.py")  # where import_litellm lives now
TIMEOUT = 240


class FakeProxy:
    """Listens on 127.0.0.1 and counts the connections made to it (none answered)."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-proxy")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._socket.close()


@pytest.fixture
def proxy() -> Iterator[FakeProxy]:
    fake = FakeProxy()
    yield fake
    fake.close()


def loopdeck_p(
    *argv: str, home: Path, cwd: Path, proxy: FakeProxy
) -> subprocess.CompletedProcess[str]:
    env = {
        name: value
        for name, value in os.environ.items()
        # As a user's shell has it: litellm's own defaults, which loopdeck must override.
        if not name.startswith("LITELLM_") and name.upper() not in ("HTTP_PROXY", "NO_PROXY")
    }
    env.update(
        LOOPDECK_HOME=str(home),
        HTTPS_PROXY=proxy.url,
        https_proxy=proxy.url,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        OPENAI_API_KEY="sk-test-key",
    )
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "-p", "hi", "--output-format", "json", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def json_lines(stdout: str) -> list[dict[str, object]]:
    """Every line of stdout as JSON: a line that is not fails the test, with the line."""
    events = []
    for line in stdout.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not JSON on stdout: {line!r}")
    return events


def test_a_model_name_litellm_cannot_place_leaves_stdout_json_only(
    tmp_path: Path, proxy: FakeProxy
) -> None:
    done = loopdeck_p(
        "--model", "no-such-model-xyz", home=tmp_path / "home", cwd=tmp_path, proxy=proxy
    )
    assert done.returncode == 1, done.stderr
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "session.idle"
    errors = [e for e in events if e["type"] == "session.error"]
    assert len(errors) == 1
    assert "Provider List" not in done.stdout + done.stderr
    assert "cost map" not in done.stderr
    assert proxy.connections == 0


def test_a_real_model_run_stays_off_the_network(
    tmp_path: Path, proxy: FakeProxy, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(text("Hello from the server."))
    done = loopdeck_p(
        "--model",
        "openai/gpt-4o",
        "--api-base",
        openai_server.base_url,
        home=tmp_path / "home",
        cwd=tmp_path,
        proxy=proxy,
    )
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "session.idle"
    assert "cost map" not in done.stderr
    assert "LiteLLM" not in done.stderr
    assert len(openai_server.requests) == 1
    assert proxy.connections == 0


def _imports_litellm(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names = [str(node.args[0].value)]
        if any(name == "litellm" or name.startswith("litellm.") for name in names):
            lines.append(node.lineno)
    return lines


def test_only_one_module_imports_litellm() -> None:
    """Any other import could come first and bypass the offline and quiet settings.
    The one module is the one that defines ``import_litellm``, wherever it lives."""
    found: dict[str, list[int]] = {}
    owners = []
    for package in ("agent", "app", "widgets"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            lines = _imports_litellm(tree)
            defines = any(
                isinstance(node, ast.FunctionDef) and node.name == "import_litellm"
                for node in tree.body
            )
            if defines:
                owners.append(path.relative_to(ROOT))
                assert lines, "import_litellm no longer imports litellm"
            elif lines:
                found[str(path.relative_to(ROOT))] = lines
    assert owners == [OWNER]
    assert found == {}


def test_whatever_prints_during_a_run_goes_to_stderr_not_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library's print() (litellm has several) must not land among the JSON lines,
    nor in the middle of a text answer."""
    from agent.models.scripted import ScriptedModel
    from app.cli import main

    stream = ScriptedModel.stream

    def noisy(self: ScriptedModel, *args: Any, **kwargs: Any) -> Any:
        print("\nProvider List: https://example.invalid\n")  # as litellm's banner does
        return stream(self, *args, **kwargs)

    monkeypatch.setattr(ScriptedModel, "stream", noisy)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["-p", "hi", "--output-format", "json", "--model", "scripted:demo"]) == 0
    out, err = capsys.readouterr()
    assert json_lines(out)[-1]["type"] == "session.idle"
    assert "Provider List" in err

    assert main(["-p", "hi", "--model", "scripted:demo"]) == 0
    out, err = capsys.readouterr()
    assert "Provider List" not in out and out.strip()
    assert "Provider List" in err
