"""The session log on disk: the store and its folders, the one writer and its lock,
reading lines back (index, scan, tail), listings and their cache, forks.

May import: agent.events, agent.system.
"""
