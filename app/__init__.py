"""The loopdeck command (CLI, terminal app, viewer, SDK runtime): imports agent and widgets.

Neither agent nor widgets ever imports app.
"""
