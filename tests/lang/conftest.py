"""Shared setup for the language-core tests.

With FIELDSIM_AS_TAICHI=1 the whole suite runs against Taichi 1.7 instead of fieldsim (Taichi is
the reference for semantics): `fieldsim` is aliased to the `taichi` module and fieldsim's error
classes are mapped onto Taichi's nearest equivalents.

Tests marked `fieldsim_specific` check behaviour Taichi 1.7 lacks (field names in Python-scope
error messages, bounds checks, source locations on every error, reproducible parallel random
numbers); under Taichi deselect them with `-m "not fieldsim_specific"` (a few that would crash
the Taichi process are skipped there anyway).
"""
import os
import sys

import pytest

AS_TAICHI = os.environ.get("FIELDSIM_AS_TAICHI") == "1"

if AS_TAICHI:
    import taichi

    taichi.FieldsimSyntaxError = taichi.TaichiSyntaxError
    taichi.FieldsimTypeError = taichi.TaichiTypeError
    taichi.FieldsimNameError = taichi.TaichiNameError
    taichi.FieldsimCompilationError = taichi.TaichiCompilationError
    taichi.FieldsimError = taichi.TaichiCompilationError
    sys.modules["fieldsim"] = taichi

import fieldsim as fs


def pytest_configure(config):
    config.addinivalue_line("markers", "fieldsim_specific: behaviour Taichi 1.7 does not share")


@pytest.fixture(autouse=True)
def fresh_runtime():
    """Every test starts from a fresh runtime: CPU, f32/i32 defaults, seed 0."""
    fs.init(arch=fs.cpu, default_fp=fs.f32, default_ip=fs.i32)
    yield
