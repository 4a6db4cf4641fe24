"""The one loader of the supervisor's scripts: ``sibling("wire")`` is this folder's ``_wire.py``, loaded by path as
the module ``_humaneval_wire``, once (every script that asks for it gets that same module).

The supervisor (``python -I _supervisor.py``), the page holder (``_pin.py``), HumanEval+'s expected outputs
(``_expected.py``) and ``_contain.py release-keyrings`` run in interpreters of their own, with this folder not on
sys.path and nothing of the package to come in: each of them loads this file by path (the same few lines near its
top, the one load not made here), then every sibling through it; a script loaded so finds this one in sys.modules.
Imported as part of the package (the harness's process), the scripts import each other relatively and this file is
not used. Standard library only, no package import.
"""

import importlib.util
import os
import sys

FOLDER = os.path.dirname(os.path.abspath(__file__))


def sibling(name):
    """The module of ``_NAME.py`` in this folder, ``_humaneval_NAME``: loaded by path the first time (registered
    before it runs, so siblings that load each other get the same module), then the same one."""
    key = f"_humaneval_{name}"
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(key, os.path.join(FOLDER, f"_{name}.py"))
        # a path that ends in .py always gets a spec, with a source loader
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[key] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def siblings(*names):
    """``sibling(name)`` for each of ``names``, in that order."""
    return tuple(sibling(name) for name in names)
