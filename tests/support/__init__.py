"""What the tests share: fakes (``Fake*``), harnesses, a fault-injecting OpenAI server,
the llama.cpp harness, helpers. Test modules import from here, never from one another;
tests/README.md lists the modules.
"""
