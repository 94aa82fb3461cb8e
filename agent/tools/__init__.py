"""The built-in tools the model calls: what a tool is (base), the registry, and each tool
(view, glob, grep, create, edit, bash, ask_user, update_todos, exit_plan_mode, ...).

May import: agent.events, agent.sandbox, agent.system. What a tool needs of the
session is a protocol in base.py.
"""
