"""Model Context Protocol servers, configured the way Copilot CLI configures them.

``config`` reads the ``mcpServers`` files and flags; ``connection`` runs one server
(stdio or streamable HTTP) through the official ``mcp`` SDK in a task of its own;
``servers`` starts them all in the background and keeps their status; ``tool`` offers
each server tool to the model as a ``Tool``; ``naming`` joins server and tool names.
The SDK is imported only when a server starts: never on the way to the first frame.
"""
