"""Small wrong programs of the kinds users write by mistake, each run as a file of its own: the
error is one of fieldsim's classes (and the Taichi 1.7.4 class a program would catch for it),
its message names the user's file and line, at most one fieldsim frame is left in the
traceback, and the fields the program watches hold what they held before the failed call."""

import pytest
from support.wrong_programs import assert_located_failure, run_marked

import fieldsim as fs

HEAD = """\
import numpy as np
import fieldsim as fs
fs.init(arch=fs.cpu, debug=DEBUG)
x = fs.field(fs.f32, shape=4)
x.from_numpy(np.arange(4, dtype=np.float32))
WATCH = [x]
"""

# id -> (body, classes the error must be). Each body marks the line the error must name with
# `# BAD` and defines bad(), the failing call.
CASES = {
    # types inside kernels
    "matmul_shape": ("""
        @fs.kernel
        def k():
            a = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
            b = fs.Vector([1.0, 2.0, 3.0])
            c = a @ b  # BAD
            x[0] = c[0]
        def bad(): k()
        """, (fs.TaichiCompilationError, TypeError)),
    "vector_add_shape": ("""
        @fs.kernel
        def k():
            a = fs.Vector([1.0, 2.0])
            b = fs.Vector([1.0, 2.0, 3.0])
            x[0] = (a + b)[0]  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,)),
    "vector_rebound_longer": ("""
        @fs.kernel
        def k():
            v = fs.Vector([1.0, 2.0])
            v = fs.Vector([1.0, 2.0, 3.0])  # BAD
            x[0] = v[0]
        def bad(): k()
        """, (fs.TaichiTypeError,)),
    "vector_into_scalar_field": ("""
        @fs.kernel
        def k():
            for i in x:
                x[i] = fs.Vector([1.0, 2.0])  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,)),
    "matrix_field_matmul_vec3": ("""
        m = fs.Matrix.field(2, 2, fs.f32, shape=4)
        @fs.kernel
        def k():
            for i in m:
                v = fs.Vector([1.0, 2.0, 3.0])
                x[i] = (m[i] @ v)[0]  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "swizzle_past_end": ("""
        @fs.kernel
        def k():
            v = fs.Vector([1.0, 2.0, 3.0])
            x[0] = v.w  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "determinant_not_square": ("""
        @fs.kernel
        def k():
            m = fs.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
            x[0] = m.determinant()  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "func_return_annotation_mismatch": ("""
        @fs.func
        def f(a) -> fs.math.vec2:
            return a  # BAD
        @fs.kernel
        def k():
            x[0] = f(1.0)[0]
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "kernel_returns_vector_as_scalar": ("""
        @fs.kernel
        def k() -> fs.f32:
            return fs.Vector([1.0, 2.0])  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "return_without_annotation": ("""
        @fs.kernel
        def k():
            return x[0]  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError,)),
    "math_sin_of_kernel_value": ("""
        import math
        @fs.kernel
        def k():
            for i in x:
                x[i] = math.sin(x[i])  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError, fs.TaichiSyntaxError)),
    "static_range_of_runtime_bound": ("""
        @fs.kernel
        def k(n: fs.i32):
            for i in fs.static(range(n)):  # BAD
                x[i] = 1.0
        def bad(): k(2)
        """, (fs.TaichiTypeError,)),
    # calls
    "func_called_from_python": ("""
        @fs.func
        def f(a):
            return a * 2
        def bad(): return f(3)  # BAD
        """, (fs.TaichiSyntaxError,)),
    "kernel_too_many_args": ("""
        @fs.kernel
        def k(a: fs.f32):
            x[0] = a
        def bad(): k(1.0, 2.0)  # BAD
        """, (fs.TaichiSyntaxError, TypeError)),
    "kernel_missing_arg": ("""
        @fs.kernel
        def k(a: fs.f32, b: fs.i32):
            x[0] = a + b
        def bad(): k(1.0)  # BAD
        """, (fs.TaichiSyntaxError, TypeError)),
    "kernel_grad_missing_arg": ("""
        @fs.kernel
        def k(a: fs.f32):
            for i in x:
                x[i] = x[i] * a
        def bad(): k.grad()  # BAD
        """, (fs.TaichiSyntaxError,)),
    "func_missing_arg": ("""
        @fs.func
        def f(a, b):
            return a + b
        @fs.kernel
        def k():
            x[0] = f(1.0)  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError, TypeError)),
    "kernel_string_arg": ("""
        @fs.kernel
        def k(a: fs.f32):
            x[0] = a
        def bad(): k("hello")  # BAD
        """, (fs.TaichiRuntimeTypeError, TypeError)),
    "kernel_float_for_int_arg": ("""
        @fs.kernel
        def k(n: fs.i32):
            x[0] = n
        def bad(): k(2.7)  # BAD
        """, (fs.TaichiRuntimeTypeError,)),
    "field_for_scalar_arg": ("""
        @fs.kernel
        def k(a: fs.f32):
            x[0] = a
        def bad(): k(x)  # BAD
        """, (fs.TaichiRuntimeTypeError,)),
    "kernel_calls_kernel": ("""
        @fs.kernel
        def inner():
            x[0] = 1.0
        @fs.kernel
        def k():
            inner()  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError,)),
    "ndarray_wrong_dtype": ("""
        @fs.kernel
        def k(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
            for i in a:
                x[i] = a[i]
        def bad(): k(np.ones(4, dtype=np.float64))  # BAD
        """, (ValueError, fs.TaichiRuntimeTypeError)),
    "ndarray_wrong_element_shape": ("""
        @fs.kernel
        def k(a: fs.types.ndarray(dtype=fs.math.vec3, ndim=1)):
            for i in a:
                x[i] = a[i][2]
        def bad(): k(np.ones((4, 2), dtype=np.float32))  # BAD
        """, (ValueError,)),
    "ndarray_given_a_list": ("""
        @fs.kernel
        def k(a: fs.types.ndarray()):
            for i in a:
                x[i] = a[i]
        def bad(): k([1.0, 2.0, 3.0, 4.0])  # BAD
        """, (fs.TaichiRuntimeTypeError,)),
    "ndarray_given_a_vector_field": ("""
        p = fs.Vector.field(n=2, dtype=fs.f32, shape=(2, 2))
        @fs.kernel
        def k(arr: fs.types.ndarray(dtype=fs.math.vec2, ndim=2)):
            arr[0, 0][0] = 1.0
        def bad(): k(p)  # BAD
        """, (TypeError,)),
    # scopes
    "variable_defined_in_if": ("""
        @fs.kernel
        def k():
            if x[0] > 0:
                y = 1.0
            x[1] = y  # BAD
        def bad(): k()
        """, (fs.TaichiNameError,)),
    "break_in_parallel_loop": ("""
        @fs.kernel
        def k():
            for i in x:
                if i == 2:
                    break  # BAD
                x[i] = 1.0
        def bad(): k()
        """, (fs.TaichiSyntaxError,)),
    "return_inside_loop": ("""
        @fs.kernel
        def k() -> fs.f32:
            for i in range(4):
                if x[i] > 1:
                    return x[i]  # BAD
            return 0.0
        def bad(): k()
        """, (fs.TaichiSyntaxError,)),
    "global_statement": ("""
        counter = 0
        @fs.kernel
        def k():
            global counter  # BAD
            counter = 1
        def bad(): k()
        """, (fs.TaichiSyntaxError,)),
    "static_if_on_runtime_value": ("""
        @fs.kernel
        def k():
            if fs.static(x[0] > 0):  # BAD
                x[1] = 1.0
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "python_list_runtime_index": ("""
        lst = [1.0, 2.0, 3.0, 4.0]
        @fs.kernel
        def k():
            for i in x:
                x[i] = lst[i]  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "method_kernel_without_data_oriented": ("""
        class Sim:
            @fs.kernel
            def step(self):  # BAD
                x[0] = 1.0
        def bad(): Sim().step()
        """, (fs.TaichiSyntaxError,)),
    # indexing
    "wrong_index_count": ("""
        @fs.kernel
        def k():
            x[0, 1] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiIndexError, fs.TaichiSyntaxError)),
    "none_index_on_1d_field": ("""
        @fs.kernel
        def k():
            x[None] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiIndexError,)),
    "vector_index_of_wrong_length": ("""
        @fs.kernel
        def k():
            for i in x:
                x[fs.Vector([i, 0])] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiIndexError,)),
    "negative_index_debug": ("""
        @fs.kernel
        def k():
            j = -1
            x[j] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiAssertionError, IndexError)),
    "float_index": ("""
        @fs.kernel
        def k():
            x[1.5] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,)),
    "field_as_index": ("""
        y = fs.field(fs.i32, shape=4)
        @fs.kernel
        def k():
            x[y] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,)),
    "field_without_shape_in_kernel": ("""
        y = fs.field(fs.f32)
        @fs.kernel
        def k():
            y[0] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "field_of_destroyed_tree": ("""
        fb = fs.FieldsBuilder()
        y = fs.field(fs.f32)
        fb.dense(fs.i, 4).place(y)
        tree = fb.finalize()
        @fs.kernel
        def k():
            for i in x:
                x[i] = y[i]
        def bad():
            tree.destroy()
            k()  # BAD
        """, (fs.TaichiRuntimeError,)),
    "python_scope_out_of_range": ("""
        def bad(): x[4] = 1.0  # BAD
        """, (IndexError,)),
    "python_scope_wrong_index_count": ("""
        def bad(): return x[1, 2]  # BAD
        """, (IndexError, AssertionError)),
    "shape_zero": ("""
        def bad(): fs.field(fs.f32, shape=0)  # BAD
        """, (ValueError,)),
    # data
    "from_numpy_wrong_shape": ("""
        def bad(): x.from_numpy(np.ones(5, dtype=np.float32))  # BAD
        """, (ValueError,)),
    "vector_from_numpy_wrong_shape": ("""
        v = fs.Vector.field(3, fs.f32, shape=4)
        WATCH.append(v)
        def bad(): v.from_numpy(np.zeros((4, 2), dtype=np.float32))  # BAD
        """, (ValueError,)),
    "to_numpy_without_shape": ("""
        y = fs.field(fs.f32)
        def bad(): return y.to_numpy()  # BAD
        """, (RuntimeError,)),
    "fill_with_string": ("""
        def bad(): x.fill("abc")  # BAD
        """, (TypeError,)),
    "vector_fill_wrong_length": ("""
        v = fs.Vector.field(3, fs.f32, shape=4)
        WATCH.append(v)
        def bad(): v.fill([1.0, 2.0])  # BAD
        """, (ValueError,)),
    "matrix_element_set_flat": ("""
        m = fs.Matrix.field(2, 2, fs.f32, shape=4)
        m.fill(1.0)
        WATCH.append(m)
        def bad(): m[0] = [1.0, 2.0, 3.0, 4.0]  # BAD
        """, (ValueError,)),
    "copy_from_other_shape": ("""
        y = fs.field(fs.f32, shape=5)
        def bad(): x.copy_from(y)  # BAD
        """, (ValueError,)),
    # autodiff
    "tape_loss_without_grad": ("""
        loss = fs.field(fs.f32, shape=())
        def bad():
            with fs.ad.Tape(loss=loss):  # BAD
                pass
        """, (RuntimeError,)),
    "tape_loss_not_scalar": ("""
        loss = fs.field(fs.f32, shape=3, needs_grad=True)
        def bad():
            with fs.ad.Tape(loss=loss):  # BAD
                pass
        """, (RuntimeError,)),
    "grad_of_field_without_needs_grad": ("""
        def bad(): return x.grad.to_numpy()  # BAD
        """, (RuntimeError,)),
    "grad_in_kernel_without_needs_grad": ("""
        @fs.kernel
        def k():
            for i in x:
                x.grad[i] = 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiCompilationError,)),
    "int_field_needs_grad": ("""
        def bad(): fs.field(fs.i32, shape=4, needs_grad=True)  # BAD
        """, (RuntimeError,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_program_gets_a_located_error_and_keeps_the_data(tmp_path, name):
    body, classes = CASES[name]
    g, path, line = run_marked(tmp_path, f"case_{name}", HEAD.replace("DEBUG", "True"), body)
    assert_located_failure(g, path, line, classes)
