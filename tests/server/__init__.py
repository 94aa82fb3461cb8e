"""The Copilot SDK runtime, driven by the official SDK."""
