"""``loopdeck --headless``: the runtime an app written against the Copilot SDK drives.

JSON-RPC 2.0 with ``Content-Length`` framing over stdio or TCP (``main``), the
methods of protocol version 3 (``methods``: the dispatch table; ``methods_*`` by
namespace), and the bridge from an SDK session to a loopdeck
:class:`~agent.session.session.Session` (``bridge``). It may import agent and the
app's setup modules (model, sandbox); only the CLI imports it, when ``--headless``
is given.
"""
