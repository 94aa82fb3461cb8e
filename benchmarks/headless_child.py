"""The shared prelude of the cold-start child scripts (tail_resume, replay_load, tui).

A child runs as ``python -c SCRIPT PARAMS``: nothing from benchmarks/ is imported in
it, so only the app is timed, and a checkout of another commit can run the same
script (``--code``). So the prelude is text, put before each script's own part.
"""

from __future__ import annotations

# PARAMS (argv[1]) is a JSON object with at least ``variant``, ``argv``, ``size``,
# ``encode`` and ``timeout``; it is ``_p`` in the script. The prelude marks ``code``
# (the script started), and on the first frame displayed ``first_frame``,
# ``litellm_loaded`` and ``modules``. The script then defines ``_on_frame(app, now)``,
# called on every frame displayed, and calls ``_run_app(setup)``: that forces App.run
# headless at ``size``, kills the child if it hangs past ``timeout``, and runs either a
# one-widget Textual app (variant "bare-textual", the floor) or loopdeck with
# ``argv``, after ``setup()`` (where the script wraps what it times, e.g. with
# ``_timed``). After it the script prints ``_marks`` as JSON behind its result mark.
HEADLESS_CHILD = r"""
import json, sys, time
_t_code = time.monotonic()
_p = json.loads(sys.argv[1])
_marks = {"code": _t_code}

# What the child patches, it patches when the app imports it: importing Textual or a
# widget here, before the app's own main, would time a different start-up (the app
# overlaps its imports with reading a log's tail in a thread).
import importlib.util

class _OnImport:  # a meta path finder (importlib.abc costs ~20 ms to import)
    hooks = {}
    def find_spec(self, name, path=None, target=None):
        if name not in self.hooks:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module, then = spec.loader.exec_module, self.hooks.pop(name)
        def patched(module):
            exec_module(module)
            then(module)
        spec.loader.exec_module = patched
        return spec

sys.meta_path.insert(0, _OnImport())

def _cpu():
    # CPU seconds of the child and of the processes it waited for (resume counts a
    # log's turns with ripgrep): what the work cost, however it was spread.
    import resource
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime

def _when_imported(name, then):
    # then(module) once the module is imported (now, if it already is).
    if name in sys.modules:
        then(sys.modules[name])
    else:
        _OnImport.hooks[name] = then

def _display(self, screen, renderable):
    shown = renderable is not None and not self._batch_count
    # Headless Textual does not turn frames into escape codes: with "encode", do it here.
    if shown and _p["encode"] and self.is_headless and isinstance(renderable, CompositorUpdate):
        renderable.render_segments(self.console)
    _orig_display(self, screen, renderable)
    if not shown:
        return
    now = time.monotonic()
    if "first_frame" not in _marks:
        _marks["first_frame"] = now
        _marks["litellm_loaded"] = any(m.split(".")[0] == "litellm" for m in sys.modules)
        _marks["modules"] = len(sys.modules)
    _on_frame(self, now)

def _run(self, *args, **kwargs):
    kwargs["headless"] = True
    kwargs["size"] = tuple(_p["size"])
    return _orig_run(self, *args, **kwargs)

def _timed(owner, name, key):
    # Wrap owner.name (a method or a classmethod) to mark key_start and key_end.
    raw = owner.__dict__[name]
    fn = raw.__func__ if isinstance(raw, classmethod) else raw
    def timed(*args, **kwargs):
        _marks[key + "_start"] = time.monotonic()
        out = fn(*args, **kwargs)
        _marks[key + "_end"] = time.monotonic()
        return out
    setattr(owner, name, classmethod(timed) if isinstance(raw, classmethod) else timed)

def _patch_app(module):
    global App, CompositorUpdate, _orig_display, _orig_run
    App = module.App
    _orig_display, _orig_run = App._display, App.run
    App._display = _display
    App.run = _run
    from textual._compositor import CompositorUpdate

def _run_app(setup):
    import os, threading
    watchdog = threading.Timer(_p["timeout"], lambda: os._exit(3))
    watchdog.daemon = True
    watchdog.start()
    _when_imported("textual.app", _patch_app)
    # With App.run forced headless no terminal is needed: loopdeck's own check stands down.
    import app.cli as cli
    cli.need_terminal = lambda prog, instead: True
    if _p["variant"] == "bare-textual":
        from textual.app import App
        from textual.widgets import Static
        class Bare(App):
            def compose(self):
                yield Static("loopdeck benchmark: bare Textual app")
        Bare().run()
    else:
        setup()
        cli.main(_p["argv"])
    _marks["end"] = time.monotonic()
"""
