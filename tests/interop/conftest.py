"""Setup for the interop tests (torch, JAX, DLPack): each test starts from a fresh
`fs.init(arch=fs.cpu, default_fp=fs.f64)`. torch and JAX are the `torch`/`jax` extras, which
scripts/test.sh installs."""
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def fresh_fs():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    yield
