"""The loopdeck engine: events, the agent loop, models, tools, the session log.

Nothing here imports the UI.
"""

__version__ = "0.1.0"
