"""Skills: Copilot's ``SKILL.md`` folders, offered by name and loaded when used.

``definition`` reads one skill's front matter (its body waits until the skill is
used); ``catalog`` finds the folders where Copilot looks and applies its precedence;
``tool`` is the ``skill`` tool the model loads one with.
"""
