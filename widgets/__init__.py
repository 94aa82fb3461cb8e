"""The terminal app's widgets: the timeline and its cards, the prompt, the status bar,
the inline questions. They draw the transcript (agent.transcript) and never reach into
the loop.

May import: agent. Never imports app.
"""
