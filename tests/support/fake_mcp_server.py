"""FakeMcpServer: a misbehaving MCP server (stdio) for the faults no real server
produces on demand. Built on the ``mcp`` SDK's own server.

    python -m tests.support.fake_mcp_server [--exit-at-start|--hang-at-start] [--http PORT]
        [--noisy|--garbage-handshake]

Tools: ``ok`` (answers), ``getenv`` (a variable's value), ``grow`` (adds
the tool ``sprout`` and says the list changed), ``crash`` (the process
exits mid-call), ``hang`` (never answers). ``--exit-at-start`` writes to stderr and
exits before the handshake; ``--hang-at-start`` never answers it.
``--noisy`` writes lines that are not JSON-RPC on stdout (a banner, and more from the
tool ``babble``) around its real messages; ``--garbage-handshake`` answers every
line it reads with 200 lines of text and never with JSON-RPC.
``--http PORT`` serves streamable HTTP on 127.0.0.1:PORT (path ``/mcp``) instead of
stdio. It writes its pid to $FAKE_MCP_PIDFILE when set, so a test can see it has gone.
"""

from __future__ import annotations

import os
import sys
import time

# At the top: the SDK reads the tools' annotations from this module's globals.
from mcp.server.mcpserver import Context


def main() -> None:
    pidfile = os.environ.get("FAKE_MCP_PIDFILE")
    if pidfile:
        with open(pidfile, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    if "--hang-at-start" in sys.argv:
        while True:  # never answers the handshake
            time.sleep(3600)
    if "--garbage-handshake" in sys.argv:
        for _line in sys.stdin:
            sys.stdout.write("Welcome to a program that is not an MCP server\n" * 200)
            sys.stdout.flush()
        return
    if "--noisy" in sys.argv:
        os.write(1, b"FakeMcpServer starting (a banner on stdout)\n{not json either\n")
    if "--exit-at-start" in sys.argv:
        sys.stderr.write("FakeMcpServer: refusing to start\n")
        sys.exit(3)

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("fake")

    @server.tool()
    def ok(word: str = "fine") -> str:
        """Answers at once."""
        return f"ok: {word}"

    @server.tool()
    def getenv(name: str) -> str:
        """The value of one of the server's environment variables."""
        return os.environ.get(name, "(unset)")

    @server.tool()
    async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
        """Adds the tool ``sprout`` and tells the client its tools changed."""

        def sprout() -> str:
            """A tool that was not there at the start."""
            return "sprouted"

        server.add_tool(sprout)
        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    def babble() -> str:
        """Writes lines that are not JSON-RPC on stdout, then answers."""
        os.write(1, b"babbling on stdout\n" * 3)
        return "said"

    @server.tool()
    def crash() -> str:
        """The server process dies while answering."""
        os._exit(1)

    @server.tool()
    def hang() -> str:
        """Never answers."""
        while True:
            time.sleep(3600)

    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
