"""Models: the client interface the loop calls, litellm's client for real providers, the
scripted model for offline sessions, the choice of model and its settings, the context
window's size and token counts, provider errors.

May import: agent.events, agent.sandbox.
"""
