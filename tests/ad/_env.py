"""Which implementation the AD tests run against, and how they start it.

With `FIELDSIM_AS_TAICHI=1` the suite runs against the real Taichi (1.7) instead of
fieldsim: `import fieldsim` then yields the `taichi` module. That is how the expected
numbers in these tests were validated. This module must be imported before anything
imports `fieldsim` (conftest.py does so first).
"""
import os
import sys

AS_TAICHI = os.environ.get("FIELDSIM_AS_TAICHI") == "1"

if AS_TAICHI:
    import taichi

    sys.modules["fieldsim"] = taichi
    # Names fieldsim adds; Taichi's nearest equivalents so that collection works.
    if not hasattr(taichi, "AccessRuleError"):
        taichi.AccessRuleError = taichi.TaichiRuntimeError
    if not hasattr(taichi, "FieldsimRuntimeError"):
        taichi.FieldsimRuntimeError = taichi.TaichiRuntimeError

import fieldsim as fs


def init_fs(fp="f32", **options):
    """`fs.init` on the CPU with `default_fp` given by name ("f32" or "f64")."""
    fs.init(arch=fs.cpu, default_fp=getattr(fs, fp), **options)
