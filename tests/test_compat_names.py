"""Taichi names fieldsim lacks: a located `FieldsimAttributeError` (an AttributeError) naming the
Taichi feature, in Python scope and in kernels; `hasattr` keeps working."""
import pytest

import fieldsim as fs
from fieldsim.lang.compat import FieldsimAttributeError


def test_unsupported_taichi_name_says_why_and_where():
    with pytest.raises(FieldsimAttributeError, match="does not support ti.aot: it belongs to ahead-of-time") as info:
        fs.aot.Module(fs.cpu)
    assert "test_compat_names.py" in str(info.value)
    assert isinstance(info.value, AttributeError)
    assert not hasattr(fs, "simt") and getattr(fs, "aot", None) is None


def test_typo_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'feild'"):
        fs.feild(fs.f32, shape=3)


def test_unsupported_name_in_kernel_is_located_at_the_kernel_line():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        for i in x:
            x[i] = fs.simt.warp.active_mask()

    with pytest.raises(fs.FieldsimNameError, match="warp/subgroup intrinsics") as info:
        k()
    assert "fs.simt.warp.active_mask()" in str(info.value)


def test_version_is_fieldsims_string_and_compares_with_tuples_as_taichi_1_7_4():
    """Taichi programs guard on `ti.__version__ < (1, 6, 0)` (Taichi's is a tuple): fieldsim's
    string compares with tuples as the Taichi release whose API it follows."""
    v = fs.__version__
    assert isinstance(v, str) and v == "0.1.0" and f"{v}" == "0.1.0"
    assert v >= (1, 6, 0) and v < (1, 8) and v == (1, 7, 4) and v != (1, 7, 3)
    assert not v < (1, 7, 4) and v > (1, 7) and v <= (1, 7, 4, 0)
    assert {v: 1}["0.1.0"] == 1
    with pytest.raises(TypeError):
        v < 3  # noqa: B015 - neither a string nor a tuple, as for Taichi's tuple


def test_pre_1_0_names_say_what_replaced_them():
    # `def k(a: ti.ext_arr())` is evaluated where the kernel is defined: the message names the
    # replacement and the user's line
    with pytest.raises(FieldsimAttributeError, match=r"removed before Taichi 1.0.*ti.types.ndarray\(\)") as info:
        def k(a: fs.ext_arr()):
            pass
    assert "test_compat_names.py" in str(info.value)
    with pytest.raises(FieldsimAttributeError, match=r"ti.types.sparse_matrix_builder\(\)"):
        fs.linalg.sparse_matrix_builder()
    assert not hasattr(fs.linalg, "sparse_matrix_builder") and hasattr(fs.linalg, "SparseSolver")


def test_pre_1_0_atomic_methods_on_values_name_the_function():
    # course code (a 2021 PCISPH): `offs = cnt[c].atomic_add(1)`, `nb_i.atomic_add(1)`; refused
    # by Taichi 1.7.4 too, here with the function that replaced the method, at the user's line
    from fieldsim.errors import FieldsimTypeError
    fs.init(arch=fs.cpu)
    cnt = fs.field(fs.i32, shape=4)

    @fs.kernel
    def claim():
        for i in range(4):
            cnt[i].atomic_add(1)

    with pytest.raises(FieldsimTypeError, match=r"removed before Taichi 1.0; use "
                                                r"ti.atomic_add\(cnt\[i\], \.\.\.\)") as info:
        claim()
    assert info.value.loc.file == __file__ and "cnt[i].atomic_add(1)" in str(info.value)
