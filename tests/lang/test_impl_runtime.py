"""`taichi.lang.impl.get_runtime()`: the defaults and options of the current init and the active
AD block, nothing else."""
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimError
from fieldsim.lang import impl
from support.backends import arch_in_use


@pytest.mark.parametrize("fp, ip", [(fs.f32, fs.i32), (fs.f64, fs.i64)])
def test_get_runtime_reports_the_current_defaults(fp, ip):
    fs.init(arch=fs.cpu, default_fp=fp, default_ip=ip)
    rt = impl.get_runtime()
    assert rt.default_fp == fp and rt.default_ip == ip
    assert fs.field(float, ()).dtype == rt.default_fp  # as libraries use it: the type `float` means
    assert fs.field(int, ()).dtype == rt.default_ip
    assert rt.prog.config().arch == arch_in_use()  # fs.cpu, but where tests are forced onto CUDA


def test_get_runtime_follows_a_new_init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    rt = impl.get_runtime()
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    assert rt.default_fp == fs.f32


def test_get_runtime_refuses_internals_by_name():
    fs.init(arch=fs.cpu)
    with pytest.raises(FieldsimError, match="get_runtime\\(\\).materialize"):
        impl.get_runtime().materialize()
    with pytest.raises(FieldsimError, match="get_num_compiled_functions"):
        impl.get_runtime().get_num_compiled_functions()


def test_get_runtime_reports_the_active_ad_block():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, (), needs_grad=True, needs_dual=True)
    loss = fs.field(fs.f32, (), needs_grad=True, needs_dual=True)
    rt = impl.get_runtime()
    assert rt.target_tape is None and rt.fwd_mode_manager is None
    with fs.ad.Tape(loss=loss) as tape:
        assert rt.target_tape is tape and rt.fwd_mode_manager is None
    assert rt.target_tape is None
    with fs.ad.FwdMode(loss=loss, param=x) as fwd:
        assert rt.fwd_mode_manager is fwd and rt.target_tape is None
    assert rt.fwd_mode_manager is None
    with pytest.raises(ValueError), fs.ad.Tape(loss=loss):  # a block left by an error is gone too
        raise ValueError
    assert rt.target_tape is None
