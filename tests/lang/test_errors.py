"""Bad kernel code raises FieldsimSyntaxError / FieldsimTypeError (or FieldsimNameError) naming the
file, the line and the offending source text, with no internal traceback.

Each offending line carries a marker comment `# ERR:<tag>`; `_line(tag)` finds its line number in
this file, so the expectations do not depend on the file's layout.
"""
import os

import numpy as np
import pytest

import fieldsim as fs

AS_TAICHI = os.environ.get("FIELDSIM_AS_TAICHI") == "1"
THIS_FILE = os.path.basename(__file__)
with open(__file__, encoding="utf-8") as _f:
    _LINES = _f.read().splitlines()

COMPILE_ERRORS = (fs.FieldsimSyntaxError, fs.FieldsimTypeError)


def _line(tag):
    hits = [i + 1 for i, text in enumerate(_LINES) if text.rstrip().endswith(f"# ERR:{tag}")]
    assert len(hits) == 1, tag
    return hits[0]


def _check(err, tag, fragment):
    """The message names this file, the marked line, and the offending source text; no internals."""
    msg = str(err)
    line = _line(tag)
    assert THIS_FILE in msg, msg
    assert f"line {line}" in msg or f":{line}" in msg, msg
    assert fragment in msg, msg
    assert "fieldsim/lang" not in msg and "fieldsim\\lang" not in msg, msg
    assert "taichi/lang" not in msg, msg
    assert "Traceback" not in msg, msg
    assert err.__cause__ is None


# --------------------------------------------------------------------------- unsupported syntax


def test_lambda_unsupported():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        f = lambda a: a + 1  # ERR:lambda
        x[0] = f(1)

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "lambda", "lambda a: a + 1")


def test_try_unsupported():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        try:  # ERR:try
            x[0] = 1.0
        except Exception:
            pass

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "try", "try:")


def test_with_unsupported():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        with open("nothing") as f:  # ERR:with
            x[0] = f

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "with", 'with open("nothing") as f:')


def test_class_unsupported():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        class A:  # ERR:class
            pass

        x[0] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "class", "class A:")


def test_other_unsupported_statements():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k_import():
        import math  # noqa: F401  # ERR:import

        x[0] = 1.0

    @fs.kernel
    def k_global():
        global _G  # ERR:global
        x[0] = 1.0

    @fs.kernel
    def k_del():
        a = 1.0
        del a  # ERR:del
        x[0] = 1.0

    @fs.kernel
    def k_genexp():
        x[0] = sum(i for i in range(3))  # ERR:genexp

    @fs.kernel
    def k_set():
        a = {1, 2}  # ERR:set
        x[0] = 1.0

    cases = [
        (k_import, "import", "import math"),
        (k_global, "global", "global _G"),
        (k_del, "del", "del a"),
        (k_genexp, "genexp", "i for i in range(3)"),
        (k_set, "set", "{1, 2}"),
    ]
    for k, tag, frag in cases:
        with pytest.raises(fs.FieldsimSyntaxError) as ei:
            k()
        _check(ei.value, tag, frag)


def test_break_in_outermost_parallel_loop():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        for i in x:
            if i > 2:
                break  # ERR:break
            x[i] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "break", "break")
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(4))  # nothing ran


def test_return_without_annotation():
    @fs.kernel
    def k():
        return 1  # ERR:return

    with pytest.raises(fs.FieldsimSyntaxError) as ei:
        k()
    _check(ei.value, "return", "return 1")


# --------------------------------------------------------------------------- names and types


def test_undefined_name():
    # Taichi raises TaichiNameError (a NameError); fieldsim's FieldsimNameError is the match
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        x[0] = undefined_thing + 1  # noqa: F821  # ERR:undef

    with pytest.raises(fs.FieldsimNameError) as ei:
        k()
    assert isinstance(ei.value, NameError)
    _check(ei.value, "undef", "undefined_thing")


def test_wrong_index_count_on_field():
    # Taichi raises TaichiIndexError (an IndexError and a compilation error)
    x = fs.field(fs.f32, shape=4, name="myfield")

    @fs.kernel
    def k():
        for i in x:
            x[i, 0] = 1.0  # ERR:idxcount

    with pytest.raises((fs.FieldsimSyntaxError, fs.FieldsimTypeError, IndexError)) as ei:
        k()
    assert isinstance(ei.value, fs.FieldsimError)
    _check(ei.value, "idxcount", "x[i, 0]")


def test_float_index_on_field():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        x[0.5] = 1.0  # ERR:floatidx

    with pytest.raises(fs.FieldsimTypeError) as ei:
        k()
    _check(ei.value, "floatidx", "x[0.5]")


def test_assign_wrong_shape_matrix_to_matrix_field():
    m = fs.Matrix.field(2, 2, fs.f32, shape=4)

    @fs.kernel
    def k():
        m[0] = fs.Matrix([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])  # ERR:matshape

    with pytest.raises(fs.FieldsimTypeError) as ei:
        k()
    _check(ei.value, "matshape", "m[0] = fs.Matrix(")


def test_vector_add_shape_mismatch():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        a = fs.Vector([1.0, 2.0])
        b = fs.Vector([1.0, 2.0, 3.0])
        x[0] = (a + b)[0]  # ERR:vecadd

    with pytest.raises(fs.FieldsimTypeError) as ei:
        k()
    _check(ei.value, "vecadd", "a + b")


@pytest.mark.fieldsim_specific
def test_matmul_shape_mismatch():
    # fieldsim-specific: Taichi raises a bare TaichiCompilationError quoting its own matrix_ops.py
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        a = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
        b = fs.Vector([1.0, 2.0, 3.0])
        x[0] = (a @ b)[0]  # ERR:matmul

    with pytest.raises(fs.FieldsimTypeError) as ei:
        k()
    _check(ei.value, "matmul", "a @ b")


@pytest.mark.fieldsim_specific
@pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7 aborts the process in LLVM on this")
def test_assign_vector_to_scalar_field():
    # fieldsim-specific: Taichi crashes (LLVM assertion) instead of raising
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        x[0] = fs.Vector([1.0, 2.0])  # ERR:vec2scalar

    with pytest.raises(fs.FieldsimTypeError) as ei:
        k()
    _check(ei.value, "vec2scalar", "x[0] = fs.Vector([1.0, 2.0])")


@pytest.mark.fieldsim_specific
def test_undefined_method_on_vector():
    # fieldsim-specific: Taichi raises a bare TaichiCompilationError carrying an internal traceback
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0])
        x[0] = v.frobnicate()  # ERR:method

    with pytest.raises(COMPILE_ERRORS) as ei:
        k()
    _check(ei.value, "method", "v.frobnicate()")
    assert "frobnicate" in str(ei.value)


@pytest.mark.fieldsim_specific
@pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7 compiles this and reads out of bounds (may segfault)")
def test_static_vector_index_out_of_range():
    # fieldsim-specific: Taichi 1.7 compiles v[5] on a 3-vector without complaint
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0, 3.0])
        x[0] = v[5]  # ERR:vecidx

    with pytest.raises((fs.FieldsimSyntaxError, fs.FieldsimTypeError, IndexError)) as ei:
        k()
    assert isinstance(ei.value, fs.FieldsimError)
    _check(ei.value, "vecidx", "v[5]")


@pytest.mark.fieldsim_specific
def test_rebinding_local_to_a_different_kind():
    # fieldsim-specific message: Taichi raises a bare TaichiCompilationError with internal frames
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        a = 1.0
        a = fs.Vector([1.0, 2.0])  # ERR:rebind
        x[0] = a[0]

    with pytest.raises(COMPILE_ERRORS) as ei:
        k()
    msg = str(ei.value)
    assert THIS_FILE in msg
    # the error may point at the rebinding or at the later use; either is acceptable
    assert f"line {_line('rebind')}" in msg or f"line {_line('rebind') + 1}" in msg, msg
    assert "Traceback" not in msg and "fieldsim/lang" not in msg


# --------------------------------------------------------------------------- kernel signature / call


@pytest.mark.fieldsim_specific
def test_wrong_number_of_kernel_arguments():
    # fieldsim-specific location: Taichi names the parameters but not the file/line
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def add_to(a: fs.f32):  # ERR:argdef
        x[0] = a

    with pytest.raises(COMPILE_ERRORS) as ei:
        add_to(1.0, 2.0)  # ERR:argcall
    msg = str(ei.value)
    assert THIS_FILE in msg, msg
    assert "add_to" in msg, msg
    assert f"line {_line('argdef')}" in msg or f"line {_line('argcall')}" in msg, msg
    assert "Traceback" not in msg and "fieldsim/lang" not in msg
    with pytest.raises(COMPILE_ERRORS):
        add_to()
    assert x[0] == 0.0


def test_wrong_number_of_kernel_arguments_raises_in_taichi_too():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k(a: fs.f32, b: fs.i32):
        x[b] = a

    with pytest.raises(COMPILE_ERRORS):
        k(1.0)
    with pytest.raises(COMPILE_ERRORS):
        k(1.0, 2, 3)
    k(1.0, 2)
    assert x[2] == 1.0


@pytest.mark.fieldsim_specific
def test_missing_argument_annotation():
    # fieldsim-specific location: Taichi raises at decoration time without file/line
    x = fs.field(fs.f32, shape=4)

    with pytest.raises(fs.FieldsimSyntaxError) as ei:

        @fs.kernel
        def k(a):  # ERR:noannot
            x[0] = a

        k(1.0)
    _check(ei.value, "noannot", "def k(a)")


def test_missing_argument_annotation_raises_in_taichi_too():
    with pytest.raises(fs.FieldsimSyntaxError):

        @fs.kernel
        def k(a, b: fs.i32):
            pass

        k(1.0, 2)


def test_wrong_argument_type_at_call():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k(a: fs.f32):
        x[0] = a

    # Taichi raises TaichiRuntimeTypeError (a TypeError); fieldsim raises a TypeError too
    with pytest.raises(TypeError):
        k("abc")
    with pytest.raises(TypeError):
        k(x)
    assert x[0] == 0.0


def test_return_type_annotated_without_return():
    @fs.kernel
    def k() -> fs.i32:  # ERR:noreturn
        a = 1
        a += 1

    with pytest.raises(fs.FieldsimSyntaxError):
        k()


def test_error_does_not_poison_later_kernels():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def bad():
        x[0] = undefined_thing  # noqa: F821

    @fs.kernel
    def good():
        for i in x:
            x[i] = i * 2.0

    with pytest.raises(fs.FieldsimNameError):
        bad()
    good()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(4) * 2.0)


def test_error_classes_subclass_builtins():
    assert issubclass(fs.FieldsimSyntaxError, SyntaxError)
    assert issubclass(fs.FieldsimTypeError, TypeError)
    assert issubclass(fs.FieldsimNameError, NameError)
    assert issubclass(fs.FieldsimSyntaxError, fs.FieldsimCompilationError)
    assert issubclass(fs.FieldsimTypeError, fs.FieldsimCompilationError)


def test_integer_literal_outside_default_ip_is_refused_like_taichi():
    # was wrapped silently (x = 3000000000 printed -1294967296); Taichi 1.7.4 refuses it
    @fs.kernel
    def k() -> fs.i64:
        x = 3000000000
        return x

    with pytest.raises(fs.errors.FieldsimTypeError, match=r"x = 3000000000(.|\n)*Integer literal "
                       r"3000000000 exceeded the range of default_ip: i32"):
        k()

    big = fs.field(fs.u64, shape=())

    @fs.kernel
    def typed() -> fs.i64:
        big[None] = fs.u64(0xFFFFFFFFFFFFFF00)  # a typed constant is fine
        return fs.i64(3000000000) + 2147483647

    assert typed() == 3000000000 + 2147483647 and big[None] == 0xFFFFFFFFFFFFFF00


def test_failed_debug_checks_are_runtime_errors_as_in_taichi():
    # Taichi's TaichiAssertionError is a TaichiRuntimeError: `except RuntimeError:` catches both
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def bad_index(i: fs.i32):
        x[i] = 1

    @fs.kernel
    def bad_value(v: fs.i32):
        assert v > 0, "v = %d" % v  # noqa: UP031 (the form Taichi programs use)

    for launch, text in ((lambda: bad_index(4), "index 4"), (lambda: bad_value(-2), "v = -2")):
        with pytest.raises(RuntimeError, match=text) as info:
            launch()
        assert isinstance(info.value, (fs.TaichiRuntimeError, AssertionError))
        assert isinstance(info.value, AssertionError) and isinstance(info.value, fs.TaichiAssertionError)


@pytest.mark.parametrize("debug", [False, True])
def test_float_assert_condition_is_refused_as_in_taichi(debug):
    fs.init(arch=fs.cpu, debug=debug)

    @fs.kernel
    def k(v: fs.f32):
        assert v

    with pytest.raises(fs.FieldsimTypeError, match=r"`assert` conditions must be an integer; "
                                                   r"found f32.*assert x != 0"):
        k(0.5)
