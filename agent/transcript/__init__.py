"""The event stream folded into what a renderer draws: blocks (turns, tool cards,
notices, sub-agent runs), live and replayed alike. Draws nothing itself.

May import: agent.events, agent.log.
"""
