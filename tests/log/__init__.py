"""The log on disk: durable writes, a full disk, one writer, the index, listings, resume
from the store.
"""
