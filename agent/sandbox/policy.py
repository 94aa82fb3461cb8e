"""What the sandbox allows a shell command, and what the model and the user are told.

Modes (as Codex CLI names them): ``workspace-write`` (the default: read anything,
write only in the workspace, the ``--add-dir`` directories and a private temp
directory), ``read-only`` (write nowhere), ``off``. Plan mode always runs commands
read-only. Network: on in interactive mode, off in autopilot unless the setting
says otherwise (see README, "What is enforced, and by whom").

Hidden paths (:func:`default_hidden`, configurable): credential stores and the
config and state of loopdeck and Copilot. No command may read a file beneath them,
where Landlock can say so (see :func:`agent.sandbox.landlock.read_roots`); the file
tools refuse them always (:mod:`agent.tools.paths`).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.events.tools import SANDBOX_NOTE_PREFIX
from agent.sandbox import landlock

SandboxMode = Literal["read-only", "workspace-write", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "off")

# What a command prints when the kernel refused it: a write (Landlock answers EACCES,
# tools say EPERM) or, with network off, a connection. "Read-only file system" (EROFS)
# is the file system's own answer, never Landlock's: it does not blame the sandbox.
_REFUSED = re.compile(r"permission denied|operation not permitted", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """What the user asked for (flags over config.toml over these defaults)."""

    mode: SandboxMode = "workspace-write"
    # None: on in interactive mode (someone approves each command), off in autopilot.
    network: bool | None = None
    # Paths no command may read (``~`` allowed); None: :func:`default_hidden`.
    hidden: tuple[str, ...] | None = None


def default_hidden(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The paths hidden by default: credential stores, and the config and state of
    loopdeck and Copilot (where they hold tokens and every session's log)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    xdg = env.get("XDG_CONFIG_HOME", "")
    config = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
    loopdeck_home = env.get("LOOPDECK_HOME")
    copilot_home = env.get("COPILOT_HOME")
    paths = [
        home / ".ssh",
        home / ".aws",
        config / "gh",
        home / ".netrc",
        home / ".docker" / "config.json",
        Path(loopdeck_home) if loopdeck_home else home / ".loopdeck",
        config / "loopdeck",
        Path(copilot_home) if copilot_home else home / ".copilot",
        config / "github-copilot",
    ]
    return tuple(str(p) for p in paths)


def server_caches(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """What a sandboxed MCP server may write beyond the workspace: npm's cache
    (``~/.npm``, where ``npx`` unpacks packages) and the user's cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache``: uv's, pip's, node-gyp's)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    xdg = env.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache"
    return (home / ".npm", cache)


@dataclass(frozen=True, slots=True)
class Support:
    """What this kernel offers: Landlock's ABI version, or 0 and why not."""

    abi: int
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.abi > 0


@functools.cache
def probe() -> Support:
    """Asked once per process: the kernel does not change under us."""
    if platform.system() != "Linux":
        return Support(0, f"the OS sandbox is built for Linux only (this is {platform.system()})")
    try:
        return Support(landlock.abi_version())
    except landlock.LandlockError as exc:
        return Support(0, exc.strerror or str(exc))


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one command runs: the wrapper in front of it, its environment, its refusals."""

    mode: Literal["read-only", "workspace-write"]
    writable: tuple[Path, ...]
    network: bool
    tmpdir: Path | None
    hidden: tuple[Path, ...] = ()

    def wrap(self, argv: list[str]) -> list[str]:
        # -I -S: no user site, no PYTHON* variables, no site-packages; the wrapper
        # needs only the standard library and starts in a few milliseconds.
        args = landlock.wrapper_args(
            self.mode,
            [str(p) for p in self.writable],
            self.network,
            [str(p) for p in self.hidden],
        )
        return [sys.executable, "-I", "-S", landlock.__file__, *args, "--", *argv]

    def env(self) -> dict[str, str]:
        if self.tmpdir is None:
            return {}
        tmp = str(self.tmpdir)
        return {"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}

    def refusal_note(self, output: str, *, for_user: bool = False) -> str | None:
        """A note for a command whose output looks like the sandbox said no: for the
        model (which must not work around it), or for the user who ran ``!command``
        (what was refused, and the flag or command that would allow it)."""
        if not _REFUSED.search(output):
            return None
        if self.mode == "read-only":
            where = "commands may not write anywhere (read-only)"
        else:
            dirs = ", ".join(str(p) for p in self.writable)
            where = f"commands may write only inside {dirs} (workspace-write)"
        net = "" if self.network else "; network connections are refused too"
        if for_user:
            return (
                f"{SANDBOX_NOTE_PREFIX}this may have been refused by loopdeck's sandbox: {where}"
                f"{net}. To let commands write in another folder, use /add-dir PATH (or "
                "start loopdeck with --add-dir PATH); to run commands without the sandbox, "
                "start loopdeck with --sandbox off."
                + ("" if self.network else " To let them connect: --sandbox-network on.")
            )
        return (
            f"<the sandbox may have refused this: {where}{net}. Do not work around it; "
            "if the command needs more, tell the user, who can allow a directory with "
            "--add-dir or loosen the sandbox with --sandbox>"
        )


class Sandbox:
    """One session's sandbox: the settings, the kernel's support, the private temp dir."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        cwd: Path | None = None,
        add_dirs: list[Path] | None = None,
        support: Support | None = None,
    ) -> None:
        self.settings = settings
        # The workspace; the session sets it to its own (a resumed one's is in its log).
        self.cwd = (cwd or Path.cwd()).resolve()
        self.add_dirs = [d.resolve() for d in add_dirs or []]
        self.support = (
            support
            if support is not None
            else (probe() if settings.mode != "off" else Support(0, ""))
        )
        self._tmpdir: Path | None = None
        self._hidden: tuple[tuple[Path, ...], tuple[Path, ...]] | None = None

    @property
    def mode(self) -> SandboxMode:
        return self.settings.mode

    @property
    def active(self) -> bool:
        return self.mode != "off" and self.support.available

    @property
    def unavailable(self) -> bool:
        """Asked for, but the kernel cannot: commands fall back to the rules alone."""
        return self.mode != "off" and not self.support.available

    def hidden(self) -> tuple[Path, ...]:
        """The hidden paths, resolved; not one that holds the workspace or an added
        directory (that would hide the work itself)."""
        roots = (self.cwd, *self.add_dirs)
        if self._hidden is not None and self._hidden[0] == roots:
            return self._hidden[1]  # asked for every tool call: resolved once
        asked = self.settings.hidden if self.settings.hidden is not None else default_hidden()
        out: list[Path] = []
        for text in asked:
            try:
                path = Path(text).expanduser().resolve()
            except (OSError, RuntimeError, ValueError):
                continue
            if path != Path("/") and not any(r.is_relative_to(path) for r in roots):
                out.append(path)
        hidden = tuple(dict.fromkeys(out))
        self._hidden = (roots, hidden)
        return hidden

    def network_for(self, agent_mode: str) -> bool:
        if self.settings.network is not None:
            return self.settings.network
        return agent_mode != "autopilot"

    def mode_for(self, agent_mode: str) -> Literal["read-only", "workspace-write"] | None:
        if not self.active:
            return None
        return (
            "read-only" if agent_mode == "plan" or self.mode == "read-only" else "workspace-write"
        )

    def confinement(self, agent_mode: str) -> Confinement | None:
        """How a command runs in ``agent_mode``; None when it runs unconfined."""
        mode = self.mode_for(agent_mode)
        if mode is None:
            return None
        tmpdir = self.tmpdir() if mode == "workspace-write" else None
        writable = (self.cwd, *self.add_dirs, *([tmpdir] if tmpdir else []))
        return Confinement(
            mode,
            writable if mode == "workspace-write" else (),
            self.network_for(agent_mode),
            tmpdir,
            self.hidden(),
        )

    def server_confinement(self) -> Confinement | None:
        """How a local MCP server runs; None when unconfined (sandbox off or not
        available). Whatever the agent's mode (a server outlives mode switches): it may
        write in the workspace, the added directories (none in read-only mode), the
        private temp directory, and the package caches ``npx`` and ``uvx`` fill
        (:func:`server_caches`); it may connect (servers fetch, and npx downloads)."""
        if not self.active:
            return None
        tmpdir = self.tmpdir()
        caches = server_caches()
        for cache in caches:
            cache.mkdir(parents=True, exist_ok=True)  # Landlock allows only what exists
        work = () if self.mode == "read-only" else (self.cwd, *self.add_dirs)
        return Confinement("workspace-write", (*work, tmpdir, *caches), True, tmpdir, self.hidden())

    def tmpdir(self) -> Path:
        if self._tmpdir is None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="loopdeck-tmp-")).resolve()
        return self._tmpdir

    def close(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def label(self, agent_mode: str) -> str:
        """For the status bar: ``sandbox workspace-write`` (· net off), or why there is none."""
        if self.mode == "off":
            return "sandbox off"
        if self.unavailable:
            return "no sandbox (rules only)"
        net = "" if self.network_for(agent_mode) else " · net off"
        return f"sandbox {self.mode_for(agent_mode)}{net}"

    def notice(self) -> str | None:
        """Said once per session when the sandbox was asked for and the kernel cannot."""
        if not self.unavailable:
            return None
        return (
            f"The OS sandbox is not available: {self.support.reason}. Shell commands run "
            "unconfined; only the permission rules decide what runs."
        )

    def prompt_section(self, agent_mode: str) -> str:
        """What the model is told it may not do."""
        head = "# Sandbox\n"
        if self.mode == "off":
            return head + (
                "Shell commands run without an OS sandbox: they can change any file you "
                "can. Stay inside the working directory unless the user asks otherwise."
            )
        if self.unavailable:
            return head + (
                "The OS sandbox is not available on this machine; shell commands run "
                "unconfined. Stay inside the working directory unless the user asks otherwise."
            )
        mode = self.mode_for(agent_mode)
        if mode == "read-only":
            what = "they may read files but not write any, anywhere"
        else:
            dirs = ", ".join(str(p) for p in (self.cwd, *self.add_dirs))
            what = (
                f"they may read any file but write only inside {dirs} and the private "
                "temporary directory in $TMPDIR"
            )
        net = (
            "Network access is on."
            if self.network_for(agent_mode)
            else "Network access is off: TCP connections are refused."
        )
        hidden = self.hidden()
        hide = (
            " These paths are hidden: no command and no tool may read them: "
            + ", ".join(str(p) for p in hidden)
            + "."
            if hidden
            else ""
        )
        return head + (
            f"Shell commands run in an OS sandbox ({mode}): {what}. {net}{hide} A refused "
            'write or read fails with "Permission denied". Do not try to get around the '
            "sandbox (other paths, copies, symlinks); if a task needs more, say so and the "
            "user can allow it. API keys and other secrets are removed from the shell's "
            "environment."
        )
