"""Shared setup for the reverse-mode AD tests.

Every test starts from a fresh `fs.init(arch=fs.cpu)`: `@pytest.mark.fs_init(fp="f64",
ad_stack_size=8)` gives it other options, and a test parametrised with `fp` ("f32"/"f64")
starts at that `default_fp`. A test may still call `fs.init` again itself.

`FIELDSIM_AS_TAICHI=1` runs the suite against the real Taichi 1.7 (see _env.py). Tests
marked `taichi_crash` are skipped there because they take the whole interpreter down
(Taichi's AD stack overflows into a segfault); corpus entries that Taichi gets wrong
are xfail there (see corpus.Entry.beyond).
"""
import pytest

from ._env import AS_TAICHI, init_fs


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "taichi_crash: segfaults Taichi 1.7; skipped with FIELDSIM_AS_TAICHI=1"
    )
    config.addinivalue_line(
        "markers", "fs_init(fp='f32', **options): options of the test's fresh fs.init"
    )


def pytest_collection_modifyitems(config, items):
    if not AS_TAICHI:
        return
    skip = pytest.mark.skip(reason="crashes the interpreter under Taichi 1.7 (beyond Taichi)")
    for item in items:
        if "taichi_crash" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fresh_fs(request):
    """A fresh runtime per test: `fs.init` options from the closest `fs_init` marker,
    `default_fp` from the test's `fp` parameter when it has one."""
    options = {}
    marker = request.node.get_closest_marker("fs_init")
    if marker is not None:
        options.update(marker.kwargs)
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "fp" in callspec.params:
        options["fp"] = callspec.params["fp"]
    init_fs(**options)
    yield
