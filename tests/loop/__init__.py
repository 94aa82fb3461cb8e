"""The agent loop: turns, hooks, compaction and the context window, history, the system prompt."""
