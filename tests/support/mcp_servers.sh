#!/usr/bin/env bash
# Installs the real MCP servers the tests in tests/extensions/ talk to, pinned, from
# PyPI and npm, into .cache/mcp-servers/ (or $LOOPDECK_MCP_SERVERS). The tests skip,
# saying why, when a server is not installed. Run: tests/support/mcp_servers.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="${LOOPDECK_MCP_SERVERS:-$root/.cache/mcp-servers}"
mkdir -p "$dest"

# Python servers in their own venv: they pin their own `mcp`, which must not move ours.
python3 -m venv "$dest/venv"
"$dest/venv/bin/pip" install -q 'mcp-server-time==2026.10.19'

# The reference servers from npm (node 18 or newer).
if command -v npm >/dev/null; then
    npm install --prefix "$dest/node" --no-audit --no-fund --silent \
        '@modelcontextprotocol/server-everything@2026.8.31' \
        '@modelcontextprotocol/server-filesystem@2026.8.31'
else
    echo "mcp_servers.sh: npm not found; the tests that need node servers will skip" >&2
fi
echo "MCP test servers installed in $dest"
