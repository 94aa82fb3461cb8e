"""The event schema and reading logs: ids, conformance with the SDK's parser, damaged and
fuzzed input.
"""
