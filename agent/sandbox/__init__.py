"""The OS sandbox for the bash tool: what a command may write, and whether it may connect
(policy decides; landlock enforces, in the child only), and the secrets kept out of
commands' environment and out of everything recorded.

May import: agent.events.
"""
