"""Models: litellm's client, model choice and settings, provider errors and faults, a real
llama.cpp server.
"""
