"""Generated Python source imported as modules, from files of their own.

The frontend reads kernel source through `inspect`, so a kernel made from a string must live
in a real file. `import_source(source)` writes `source` to a fresh file in a temporary folder
(removed at exit) and imports it under a name no other call gets.
"""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import shutil
import tempfile

_DIR = tempfile.mkdtemp(prefix="fieldsim_generated_")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_COUNT = itertools.count()


def import_source(source: str, prefix: str = "fieldsim_generated"):
    """The module of `source`, imported from a fresh file."""
    name = f"{prefix}_{os.getpid()}_{next(_COUNT)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
