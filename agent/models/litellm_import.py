"""The one place litellm is imported: lazily, offline, quiet.

Importing litellm takes seconds, so nothing on the way to the app's first frame
may do it; callers reach it through :func:`import_litellm` at the moment they
actually talk to a model. By default litellm also fetches its model price map
from the internet at import time and prints "give feedback" banners on errors;
the environment switches below keep it on its bundled map and off the network.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType
from typing import Any


@functools.cache
def import_litellm() -> ModuleType:
    """Import litellm once, configured to stay offline and quiet, and return it."""
    # setdefault, not assignment: a user who deliberately points litellm at a
    # remote cost map keeps that choice.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    litellm = importlib.import_module("litellm")
    # Any: litellm has no type information, so its settings are untyped.
    settings: Any = litellm
    settings.suppress_debug_info = True
    return litellm
