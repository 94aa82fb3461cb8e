"""The log's vocabulary: every event (pydantic models in Copilot's schema), the reading
of one line, and what loopdeck's and Copilot's payloads mean (usage totals, turn notes,
todo rows, attachments, autopilot's permission levels, the -p result line).

The bottom layer: imports nothing of agent/.
"""
