"""Tests of agent/extensions/: MCP servers."""
