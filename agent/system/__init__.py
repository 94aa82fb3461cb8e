"""What loopdeck finds on the machine it runs on: the ripgrep binary.

Imports nothing of agent/.
"""
