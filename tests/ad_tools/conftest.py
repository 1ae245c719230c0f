"""Shared setup for the AD tools tests (gradcheck, jacobian, checkpoint, tape pictures).

Every test starts from a fresh `fs.init(arch=fs.cpu, default_fp=fs.f64)`; a test parametrised
with `fp` ("f32"/"f64") starts at that `default_fp` instead.
"""
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def fresh_fs(request):
    fp = "f64"
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "fp" in callspec.params:
        fp = callspec.params["fp"]
    fs.init(arch=fs.cpu, default_fp=getattr(fs, fp))
    yield
