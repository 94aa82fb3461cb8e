"""From command-line flags to a model client, and to a new or resumed session."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TypeVar

from agent.events.schema import Mode
from agent.log.lock import SessionInUse
from agent.log.places import loopdeck_home
from agent.log.store import ForeignSession, SessionStore
from agent.log.writer import LogWriteError
from agent.loop.compaction_settings import CompactionSettings, settings_from
from agent.loop.turn_loop import DEFAULT_MAX_CONTINUES
from agent.models.base import ModelClient, RetryPolicy
from agent.models.scripted import SCRIPTED_PREFIX, ScriptedModel
from agent.models.select import ConfigError, choose_model, read_config, user_config_dir
from agent.models.settings import ProviderSettings
from agent.permissions.rules import PermissionPolicy, RuleError
from agent.session.session import Session
from app.locate import ResumeTarget, target_of_args

_T = TypeVar("_T")


class SetupError(Exception):
    """Something the user must fix before a session can start; the message says what."""


def make_model(
    model: str, api_base: str | None = None, settings: ProviderSettings | None = None
) -> ModelClient:
    """The client for ``model``; ``settings`` (timeouts, retries) apply to real
    models, and their ``api_base`` is used when ``api_base`` is not given."""
    if model.startswith(SCRIPTED_PREFIX):
        return ScriptedModel.from_spec(model)
    from agent.models.litellm_client import LiteLLMModel

    settings = settings or ProviderSettings()
    return LiteLLMModel(
        model,
        api_base=api_base or settings.api_base,
        connect_timeout=settings.connect_timeout,
        idle_timeout=settings.idle_timeout,
        retry_policy=settings.retry_policy,
    )


def provider_settings(args: argparse.Namespace | None) -> ProviderSettings:
    """Timeouts and retries: the flags, over config.toml, over the defaults.

    ``api_base`` here is only the flag's; config's goes with config's model
    (see :func:`pick_model`). Raises SetupError for a broken config file.
    """
    env = os.environ
    try:
        config = read_config(user_config_dir(env))
    except ConfigError as exc:
        raise SetupError(str(exc)) from exc
    defaults = ProviderSettings()
    policy = RetryPolicy(
        max_retries=_first(config.max_retries, defaults.retry_policy.max_retries),
        base_delay=_first(config.retry_base_delay, defaults.retry_policy.base_delay),
    )
    return ProviderSettings(
        api_base=getattr(args, "api_base", None),
        connect_timeout=_first(
            getattr(args, "connect_timeout", None), config.connect_timeout, defaults.connect_timeout
        ),
        idle_timeout=_first(
            getattr(args, "idle_timeout", None), config.idle_timeout, defaults.idle_timeout
        ),
        retry_policy=policy,
    )


def _first(*values: _T | None) -> _T:
    return next(v for v in values if v is not None)


def pick_model(cli_model: str | None, recorded: str | None = None) -> tuple[str, str | None] | None:
    """(model, api_base from config): --model > LOOPDECK_MODEL > the resumed
    session's model > config file > a provider's API key in the environment."""
    env = os.environ
    if cli_model:
        return cli_model, None
    if env.get("LOOPDECK_MODEL"):
        return env["LOOPDECK_MODEL"], None
    if recorded:
        return recorded, None
    try:
        choice = choose_model(None, env, user_config_dir(env))
    except ConfigError as exc:
        raise SetupError(str(exc)) from exc
    return (choice.model, choice.api_base) if choice else None


def resume_target(args: argparse.Namespace, store: SessionStore, cwd: Path) -> ResumeTarget | None:
    """What to resume (in place) or fork, or None for a new session."""
    return target_of_args(args, store, cwd)


def start_mode(args: argparse.Namespace) -> Mode:
    """The mode the flags ask for: --mode, else --autopilot, else interactive."""
    mode = getattr(args, "mode", None)
    if mode in ("interactive", "plan", "autopilot"):
        return mode  # type: ignore[no-any-return]
    return "autopilot" if getattr(args, "autopilot", False) else "interactive"


async def open_session(
    args: argparse.Namespace, cwd: Path, *, model_string: str | None = None
) -> Session:
    """Create or resume the session the flags describe. Raises SetupError."""
    from agent.log.store import SessionNotFound
    from agent.models.scripted import ScriptError
    from app.mcp_setup import mcp_config
    from app.sandbox_setup import SandboxSetupError, sandbox_setup

    store = SessionStore(loopdeck_home())
    mcp = mcp_config(args, cwd)
    policy, extra_dirs = permission_setup(args, mcp.configured)
    try:
        sandbox, env_filter = sandbox_setup(args)
    except SandboxSetupError as exc:
        raise SetupError(str(exc)) from exc
    cap = args.max_autopilot_continues
    cap = DEFAULT_MAX_CONTINUES if cap is None else cap
    try:
        target = resume_target(args, store, cwd)
    except SessionNotFound as exc:
        raise SetupError(str(exc)) from exc
    resume_id = target.session_id if target is not None else None
    # A fork's origin names its model in its own terms (Copilot's "auto"): not ours.
    recorded = store.read_meta(resume_id).get("model") if resume_id else None
    picked = pick_model(model_string or args.model, recorded if isinstance(recorded, str) else None)
    if picked is None:
        from agent.models.select import NO_MODEL_HELP

        raise SetupError(NO_MODEL_HELP)
    spec, config_api_base = picked
    settings = None if spec.startswith(SCRIPTED_PREFIX) else provider_settings(args)
    try:
        model = make_model(spec, args.api_base or config_api_base, settings)
    except ScriptError as exc:
        raise SetupError(str(exc)) from exc
    context_window, max_output, compaction = context_settings(args)
    api_base = getattr(model, "api_base", None)
    if not background_compaction(args, api_base):
        compaction = dataclasses.replace(compaction or CompactionSettings(), background=False)
    local = local_model_settings(args, api_base)
    discard_unused = False
    if target is not None and target.fork_from is not None:
        resume_id = _fork(store, target.fork_from, model.name, cwd if args.cwd else None, cwd)
        discard_unused = True
    if resume_id is not None:
        with _open_errors_as_setup_error():
            session = await Session.resume(
                store=store,
                session_id=resume_id,
                model=model,
                cwd=cwd if args.cwd else None,
                max_autopilot_continues=cap,
                policy=policy,
                sandbox=sandbox,
                env_filter=env_filter,
                extra_dirs=extra_dirs,
            )
        local.apply(session)
        session.configure_context(window=context_window, settings=compaction, max_output=max_output)
        session.discard_unused = discard_unused
        # Autopilot only when asked again: a resumed run never works unattended by itself.
        session.set_mode(start_mode(args))
        session.start_mcp(mcp)
        _subagent_models(session, spec, args.api_base or config_api_base, settings)
        return session
    mode = start_mode(args)
    with _open_errors_as_setup_error():
        created = await Session.create(
            model=model,
            cwd=cwd,
            mode=mode,
            store=store,
            max_autopilot_continues=cap,
            policy=policy,
            extra_dirs=extra_dirs,
            sandbox=sandbox,
            env_filter=env_filter,
        )
    local.apply(created)
    created.configure_context(window=context_window, settings=compaction, max_output=max_output)
    created.start_mcp(mcp)
    _subagent_models(created, spec, args.api_base or config_api_base, settings)
    return created


def _subagent_models(
    session: Session, spec: str, api_base: str | None, settings: ProviderSettings | None
) -> None:
    """A sub-agent whose custom agent (or ``task`` call) names another model talks to
    it through the same provider settings; a scripted session scripts its sub-agents."""
    if not spec.startswith(SCRIPTED_PREFIX):
        session.subagents.model_factory = lambda name: make_model(name, api_base, settings)


def context_settings(
    args: argparse.Namespace,
) -> tuple[int | None, int | None, CompactionSettings | None]:
    """The context window and the reply's room (flags over config.toml) and the
    compaction settings."""
    try:
        config = read_config(user_config_dir(os.environ))
        compaction = settings_from(config.infinite_sessions) if config.infinite_sessions else None
    except (ConfigError, ValueError) as exc:
        raise SetupError(str(exc)) from exc
    window = getattr(args, "context_window", None) or config.context_window
    output = getattr(args, "max_output_tokens", None) or config.max_output_tokens
    return window, output, compaction


def background_compaction(args: argparse.Namespace, api_base: str | None) -> bool:
    """Whether summaries run while the turn goes on: the flag, over config.toml, over
    "auto" — off for a server of one's own (``api_base``): local servers often serve one
    request at a time, and a summary in the background would hold up the turn."""
    try:
        config = read_config(user_config_dir(os.environ))
    except ConfigError as exc:
        raise SetupError(str(exc)) from exc
    choice = getattr(args, "background_compaction", None) or config.background_compaction
    if choice in ("on", "off"):
        return choice == "on"
    return api_base is None


@dataclasses.dataclass(frozen=True, slots=True)
class LocalModelSettings:
    """What helps small local models: tool calls read from text, the compact prompt."""

    text_tool_calls: bool
    system_prompt: str  # "auto" | "compact" | "full"

    def apply(self, session: Session) -> None:
        session.text_tool_calls = self.text_tool_calls
        session.use_system_prompt(self.system_prompt)


def local_model_settings(args: argparse.Namespace, api_base: str | None) -> LocalModelSettings:
    """The flags over config.toml over "auto". Tool calls written as text are read by
    default from a server of one's own (``api_base``): small local models often write
    their calls as text, hosted providers return them structured."""
    try:
        config = read_config(user_config_dir(os.environ))
    except ConfigError as exc:
        raise SetupError(str(exc)) from exc
    text_calls = getattr(args, "text_tool_calls", None) or config.text_tool_calls
    prompt = getattr(args, "system_prompt", None) or config.system_prompt or "auto"
    read = text_calls == "on" if text_calls in ("on", "off") else api_base is not None
    return LocalModelSettings(text_tool_calls=read, system_prompt=prompt)


def _fork(store: SessionStore, source: Path, model: str, chosen: Path | None, here: Path) -> str:
    """A new session of ``store`` continuing the log at ``source`` (read, never written).
    It works in ``chosen`` (--cwd), else where the origin worked if that exists here."""
    from agent.log.fork import fork_cwd, fork_session, origin_of

    try:
        workspace = chosen or fork_cwd(origin_of(source), here)
        return fork_session(store, source, model=model, cwd=workspace).session_id
    except OSError as exc:
        raise SetupError(f"cannot fork {source}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def _open_errors_as_setup_error() -> Iterator[None]:
    """A log that cannot be written at start-up (a full disk), or a session another
    process writes, is one line."""
    try:
        yield
    except (LogWriteError, SessionInUse, ForeignSession) as exc:
        raise SetupError(str(exc)) from exc


def permission_setup(
    args: argparse.Namespace, mcp_servers: Collection[str] = ()
) -> tuple[PermissionPolicy, list[Path]]:
    """The policy and extra directories the permission flags describe; rules may name
    the configured ``mcp_servers``."""
    try:
        from agent.tools.registry import rule_tool_names

        policy = PermissionPolicy.from_flags(
            args.allow_tool,
            args.deny_tool,
            allow_all=args.allow_all_tools or args.yolo,
            tools=rule_tool_names(),
            servers=mcp_servers,
        )
    except RuleError as exc:
        raise SetupError(str(exc)) from exc
    extra_dirs: list[Path] = []
    for directory in args.add_dir:
        path = directory.expanduser().resolve()
        if not path.is_dir():
            raise SetupError(f"--add-dir {directory}: not a directory")
        extra_dirs.append(path)
    if args.yolo:
        extra_dirs.append(Path("/"))
    return policy, extra_dirs
