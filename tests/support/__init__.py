"""What the tests share: fakes (``Fake*``), a fault-injecting OpenAI server, the llama.cpp
harness, helpers.
"""
