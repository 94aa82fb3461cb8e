"""One task of ``benchmarks.local_coder`` with the real Qwen2.5-Coder-1.5B: loopdeck
``-p --autopilot`` runs the tool calls the model writes as text and the session ends by
itself. Whether the task is solved is the benchmark's question (the 1.5B model solves it
in one prompt and not in another that differs only in the working directory's path): this
test holds the path from the model's text to a tool that ran.

Runs only where xllamacpp and the joined GGUF are installed
(``python -m benchmarks.local_model 1.5b``); skipped otherwise, with the reason. Minutes
on a CPU: marked slow and real_server.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks import local_coder, local_model
from benchmarks.local_tasks import TASKS_BY_NAME
from tests.support.llama_server import LlamaServer, ServerOptions


def _why_not() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp not installed (pip install -e '.[llama]')"
    return local_model.missing_reason("1.5b")


pytestmark = [
    pytest.mark.slow,
    pytest.mark.real_server,
    pytest.mark.skipif(_why_not() is not None, reason=str(_why_not())),
]

CAP = 900.0  # seconds: a 1.5B model on two loaded cores; a hang still ends


def test_the_1_5b_model_changes_a_constant(tmp_path: Path) -> None:
    gguf = local_model.installed("1.5b")
    assert gguf is not None
    options = ServerOptions(
        gguf=gguf,
        alias=local_coder.ALIAS,
        template=None,
        n_ctx=local_coder.N_CTX,
        n_predict=local_coder.N_PREDICT,
        threads=1,
    )
    with LlamaServer(options, start_timeout=600) as server:
        result = local_coder.run_task(
            TASKS_BY_NAME["edit_constant"],
            server,
            tmp_path / "results",
            CAP,
            [],
            keep=False,
            workspace=tmp_path / "project",
        )
    assert not result.timed_out, result.events
    assert result.exit_code in (0, 3), result.events  # done, or out of autopilot nudges
    assert result.tool_calls_from_text >= 1, (result.tools, result.events)
    assert result.tool_calls_from_text == result.tool_calls, result.tools
