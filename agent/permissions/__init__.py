"""Who may run what: the permission rules, the gate every tool call passes, autopilot's
permission level, and the shell parser the rules read commands with.

May import: agent.events, agent.sandbox, agent.tools.
"""
