"""Shared setup for the reverse-mode AD tests.

Every test starts from a fresh `fs.init(arch=fs.cpu)`; a test parametrised with `fp`
("f32"/"f64") starts at that `default_fp` instead, and any test may call `fs.init` again
with its own options (the last call wins).

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


def pytest_collection_modifyitems(config, items):
    if not AS_TAICHI:
        return
    skip = pytest.mark.skip(reason="crashes the interpreter under Taichi 1.7 (beyond Taichi)")
    for item in items:
        if "taichi_crash" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fresh_fs(request):
    """A fresh runtime per test, at the test's `fp` parameter when it has one."""
    callspec = getattr(request.node, "callspec", None)
    fp = callspec.params.get("fp", "f32") if callspec is not None else "f32"
    init_fs(fp)
    yield
