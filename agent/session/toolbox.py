"""What the model is offered in each mode: the tools and the system prompt.

Each is built once per mode and kept until something it depends on changes: the
model or the writable folders (the prompt names them), or the tools themselves (an
SDK app's resume with other ``tools``). Plan mode offers the read-only tools and
``exit_plan_mode``, whatever the factory gives; the other modes add ``task``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agent.events.schema import Mode
from agent.session.plan_mode import plan_registry
from agent.tools.base import Tool
from agent.tools.registry import ToolRegistry

RegistryFactory = Callable[[Mode], ToolRegistry]
# Builds a mode's system prompt from the names of the tools offered in it.
PromptBuilder = Callable[[Mode, list[str]], str]


class ModeToolbox:
    def __init__(
        self,
        factory: RegistryFactory,
        exit_plan: Tool,
        build_prompt: PromptBuilder,
        delegate: Tool | None = None,
    ) -> None:
        self._factory = factory
        self._exit_plan = exit_plan
        # ``task`` (sub-agents): offered in every mode but plan, whatever the factory gives.
        self._delegate = delegate
        self._build_prompt = build_prompt
        self._registries: dict[Mode, ToolRegistry] = {}
        self._prompts: dict[Mode, str] = {}
        # Tools that join and leave while the session runs (MCP servers', the skill
        # tool): asked anew on each refresh, added after the factory's, whose names win.
        self._joining: list[Callable[[], Sequence[Tool]]] = []
        self._gone: list[Callable[[], Mapping[str, str]]] = []  # joined, then left: why
        # What the selected custom agent keeps of them (agent/session/extensions.py).
        self.narrow: Callable[[ToolRegistry], ToolRegistry] = lambda registry: registry
        # The compact prompt and tools' definitions, for small windows (set_compact).
        self.compact = False

    def registry(self, mode: Mode) -> ToolRegistry:
        registry = self._registries.get(mode)
        if registry is None:
            registry = self._factory(mode)
            for joining in self._joining:
                for tool in joining():
                    if tool.name not in registry:
                        registry.register(tool)
            delegate = self._delegate
            if mode != "plan" and delegate is not None and delegate.name not in registry:
                registry.register(delegate)
            # A selected custom agent's tools list decides about task too.
            registry = self.narrow(registry)
            if mode == "plan":  # read-only, whatever the factory offers
                registry = plan_registry(registry, self._exit_plan)
            for gone in self._gone:
                for name, why in gone().items():
                    if name not in registry:
                        registry.mark_gone(name, why)
            registry.compact = self.compact
            self._registries[mode] = registry
        return registry

    def system_prompt(self, mode: Mode) -> str:
        prompt = self._prompts.get(mode)
        if prompt is None:
            prompt = self._prompts[mode] = self._build_prompt(mode, self.registry(mode).names())
        return prompt

    def set_compact(self, compact: bool) -> None:
        """Offer the compact prompt and tools' definitions (or the full ones) from the
        next model call on."""
        if compact != self.compact:
            self.compact = compact
            for registry in self._registries.values():
                registry.compact = compact
            self._prompts.clear()

    def forget_prompts(self) -> None:
        """What the prompt says changed (the model, the writable folders)."""
        self._prompts.clear()

    def refresh(self) -> None:
        """Build the tools and the prompts again on next use."""
        self._registries.clear()
        self._prompts.clear()

    def add_joining(
        self,
        tools: Callable[[], Sequence[Tool]],
        gone: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """Offer ``tools()`` too, asked again at each :meth:`refresh`; a call to one of
        ``gone()`` (offered before, not now) fails with the reason it gives."""
        self._joining.append(tools)
        if gone is not None:
            self._gone.append(gone)
        self.refresh()

    def use_factory(self, factory: RegistryFactory) -> None:
        """Offer other tools from the next model call on."""
        self._factory = factory
        self.refresh()
