"""`fs.init` options: Taichi's options fieldsim does not need are accepted, unknown keywords are a
TypeError listing the valid ones, and `print_ir=True` prints fieldsim's IR. Also the
`fs.types` names Taichi programs use (`struct`, `primitive_types`, `is_integral`, ...)."""
import pytest

import fieldsim as fs
from fieldsim.lang import runtime


def test_taichi_options_are_accepted():
    with pytest.warns(runtime.IgnoredOptionWarning, match="advanced_optimization"):
        rt = fs.init(arch=fs.cpu, advanced_optimization=False, fast_math=False, log_level="warn",
                     check_out_of_bound=True, real_matrix_scalarize=False, device_memory_GB=1)
    assert "fast_math" not in rt.ignored_options  # an option of fieldsim's own (codegen)
    assert rt.fast_math is False and rt.log_level == "warn" and rt.opt_level == 1  # Taichi's default
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in x:
            x[i] = 2.0

    k()
    assert x[1] == 2.0


def test_unknown_option_is_a_type_error_listing_valid_ones():
    with pytest.raises(TypeError, match="unknown option.*deafult_fp.*default_fp") as info:
        fs.init(arch=fs.cpu, deafult_fp=fs.f64)
    assert isinstance(info.value, fs.FieldsimError) and isinstance(info.value, KeyError)
    assert "test_init_options.py" in str(info.value)  # the user's line


def test_print_ir_prints_fieldsim_ir(capsys):
    fs.init(arch=fs.cpu, print_ir=True)
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def show_me():
        for i in x:
            x[i] = 1.0

    show_me()
    assert "show_me" in capsys.readouterr().out


def test_types_namespace():
    assert fs.types.struct(a=fs.f32).members == {"a": fs.f32}
    assert fs.f32 in fs.types.primitive_types.all_types
    assert fs.types.is_integral(fs.u8) and not fs.types.is_integral(fs.f64)
    assert fs.types.is_real(float) and not fs.types.is_real(fs.i32)
    assert not fs.types.is_signed(fs.u32) and fs.types.is_signed(fs.i8)
