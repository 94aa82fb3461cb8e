"""What extends the agent beyond its built-in tools: MCP servers (``mcp/``), and room
for custom agents and skills.

Each subpackage is an adapter onto the loop's own seams: an extension's tool satisfies
``agent.tools.base.Tool`` and its events are ``agent.events`` models. A package here
may import the loop and the layers below it (events, system, sandbox, log, models,
tools, permissions), never ``agent.session`` or the UI; the session imports it.
"""
