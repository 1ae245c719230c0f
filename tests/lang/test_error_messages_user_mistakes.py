"""Mistakes Taichi users report (an annotation that retypes a variable, an unsupported
parameter annotation, `@kernel` over `@func`), each run as a file of its own: the error is one
of fieldsim's classes and the class Taichi 1.7.4 raises, located at the mistake's line with at
most one fieldsim frame, and the watched fields keep their values. Also `range(x.shape)` of a
1-D field, which Taichi runs."""
import warnings

import numpy as np
import pytest
from support.wrong_programs import WATCHED_X_HEAD, assert_located_failure, fieldsim_frames, run_marked

import fieldsim as fs

HEAD = WATCHED_X_HEAD

# id -> (body, classes the error must be, words its message must hold)
CASES = {
    # storing 2.5 into the old i32 `d` truncated it to 2, silently
    "annotation_retypes_a_variable": ("""
        @fs.kernel
        def k():
            d: fs.i32 = 2
            d: fs.f32 = 2.5  # BAD
            x[0] = d
        def bad(): k()
        """, (fs.TaichiSyntaxError,), ("variable 'd' is already i32", "annotation f32")),
    "annotation_retypes_an_unannotated_variable": ("""
        @fs.kernel
        def k():
            d = 2
            d: fs.f32 = 2.5  # BAD
            x[0] = d
        def bad(): k()
        """, (fs.TaichiSyntaxError,), ("variable 'd' is already i32",)),
    # the error was a FieldsimTypeError at the call, which `except ti.TaichiSyntaxError` missed
    "list_annotation": ("""
        @fs.kernel
        def k(a: list):  # BAD
            x[0] = a[0]
        def bad(): k([1.0])
        """, (fs.TaichiSyntaxError, TypeError), ("argument 'a'", "unsupported annotation")),
    "numpy_annotation": ("""
        @fs.kernel
        def k(a: np.ndarray):  # BAD
            x[0] = a[0]
        def bad(): k(np.ones(4, dtype=np.float32))
        """, (fs.TaichiSyntaxError,), ("argument 'a'", "numpy.ndarray")),
    "range_of_a_2d_shape": ("""
        g = fs.field(fs.f32, shape=(3, 5))
        @fs.kernel
        def k():
            for i in range(g.shape):  # BAD
                x[i] = 1.0
        def bad(): k()
        """, (TypeError,), ("range() of the tuple (3, 5)", "fs.ndrange(*shape)")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_user_mistake_gets_a_located_error_and_keeps_the_data(tmp_path, name):
    body, classes, words = CASES[name]
    g, path, line = run_marked(tmp_path, f"mistake_{name}", HEAD, body)
    assert_located_failure(g, path, line, classes, words)


def test_same_annotation_twice_is_still_allowed():
    x = fs.field(fs.f32, shape=1)

    @fs.kernel
    def k():
        d: fs.f32 = 1.5
        d: fs.f32 = 2.5
        x[0] = d

    k()
    assert x[0] == 2.5


def test_kernel_over_func_is_refused_at_its_def(tmp_path):
    # `@ti.kernel` over `@ti.func` failed with "no signature found for builtin <Func ...>"
    body = """
        @fs.kernel
        @fs.func
        def k():  # BAD
            x[0] = 1.0
        """
    with pytest.raises(fs.TaichiSyntaxError) as info:
        run_marked(tmp_path, "kernel_over_func", HEAD, body)
    err = info.value
    assert '", line 10' in str(err) and "both @fs.kernel and @fs.func" in str(err), str(err)
    assert len(fieldsim_frames(err)) <= 1


def test_range_of_a_1d_shape_runs_as_in_taichi():
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        for i in range(x.shape):
            x[i] = 10.0 + i

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k()
    np.testing.assert_array_equal(x.to_numpy(), [10.0, 11.0, 12.0, 13.0])
    [warning] = [w for w in caught if "1-tuple (4,)" in str(w.message)]
    # at the user's line, not in fieldsim's frontend
    assert warning.filename == __file__, warning.filename
    with open(__file__) as source:
        assert "for i in range(x.shape)" in source.read().splitlines()[warning.lineno - 1]
