"""Shared setup for the example tests: load a script from examples/simulation/ as a fresh module.

`load_example(name)` imports `examples/simulation/<name>.py` under a new module name each call,
so module-level state (fields, sizes) set by one test never leaks into another. The scripts
call `ti.init` themselves in `main` and `fd_check`; tests that drive the kernels directly call
`fs.init` first.
"""
import importlib.util
import itertools
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "simulation"
_counter = itertools.count()


def _load(name):
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fieldsim_example_{name}_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def load_example():
    return _load
