"""The agent loop: turns, the model call with its retries, a reply's tool calls, the
model's history and system prompt, the context window kept by compaction, hooks.

May import: agent.events, agent.system, agent.sandbox, agent.log, agent.models,
agent.tools, agent.permissions.
"""
