"""Custom agents: Copilot's ``*.agent.md`` files (and an SDK app's ``customAgents``).

``definition`` reads one agent (front matter and prompt) and says which field is
wrong; ``catalog`` finds the files where Copilot looks, applies its precedence and
answers "which agents, and this one by name"; ``tool_filter`` turns an agent's
``tools`` list (Copilot's aliases, MCP ``server/tool`` names) into the tools it keeps.
"""
