"""Wrong programs made by mutating correct ones (an index added, an argument's kind changed, a
module missing, ...), each run as a file of its own: the error is one of fieldsim's classes and
the class Taichi 1.7.4 raises for it, its message names the user's file and line and what was
wrong, at most one fieldsim frame is left in the traceback, and the watched fields keep their
values."""
import sys

import pytest
from support.wrong_programs import WATCHED_X_HEAD, assert_located_failure, run_marked

import fieldsim as fs

HEAD = WATCHED_X_HEAD

# id -> (body, classes the error must be, words its message must hold, modules hidden).
# Each body marks the line the error must name with `# BAD` and defines bad(), the failing call.
CASES = {
    "to_torch_without_torch": ("""
        def bad(): return x.to_torch()  # BAD
        """, (ModuleNotFoundError,), ("'x'.to_torch()", "PyTorch"), ("torch",)),
    "from_torch_without_torch": ("""
        def bad(): x.from_torch(None)  # BAD
        """, (ImportError,), ("'x'.from_torch()", "PyTorch"), ("torch",)),
    # Python-scope entries of a vector or matrix (Taichi: a bare IndexError from its internals)
    "field_element_entry_past_end": ("""
        v = fs.Vector.field(2, fs.f32, shape=4)
        v.fill(1.0)
        WATCH.append(v)
        def bad(): v[1][2] = 5.0  # BAD
        """, (IndexError,), ("index 2", "field 'v' element (1,)", "(2,)"), ()),
    "vector_entry_read_past_end": ("""
        w = fs.Vector([1.0, 2.0])
        def bad(): return w[5]  # BAD
        """, (IndexError,), ("index 5", "vector of shape (2,)"), ()),
    "matrix_entry_read_past_end": ("""
        m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
        def bad(): return m[0, 3]  # BAD
        """, (IndexError,), ("index (0, 3)", "matrix of shape (2, 2)"), ()),
    "vector_entry_of_a_string_index": ("""
        w = fs.Vector([1.0, 2.0])
        def bad(): return w['a']  # BAD
        """, (IndexError,), ("bad index 'a'", "vector of shape (2,)"), ()),
    # struct values (Taichi: silently drops the unknown member, or keeps two of three entries)
    "struct_value_unknown_member": ("""
        S = fs.types.struct(a=fs.f32, b=fs.math.vec2)
        def bad(): return S(a=1.0, c=2.0, b=fs.Vector([2.0, 3.0]))  # BAD
        """, (TypeError,), ("no member(s) c", "a, b"), ()),
    "struct_value_member_too_long": ("""
        S = fs.types.struct(a=fs.f32, b=fs.math.vec2)
        def bad(): return S(a=1.0, b=fs.Vector([2.0, 3.0, 4.0]))  # BAD
        """, (TypeError,), ("member 'b'", "shape (3,)"), ()),
    # a number for a struct argument filled its first member and zeroed the rest
    "struct_argument_given_a_number": ("""
        S = fs.types.struct(a=fs.f32, b=fs.math.vec2)
        @fs.kernel
        def k(s: S):
            x[0] = s.a + s.b[1]
        def bad(): k(1.0)  # BAD
        """, (fs.TaichiRuntimeTypeError, TypeError), ("argument 's'", "float 1.0"), ()),
    # the dict's values were shown as fieldsim's IR statements (`{'a': <Stmt const f32>}`)
    "dict_in_vector_arithmetic": ("""
        v = fs.Vector.field(3, fs.f32, shape=4)
        WATCH.append(v)
        @fs.kernel
        def k():
            for i in v:
                w = {'a': 1.0}
                v[i] = v[i] + w  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,), ("a Python dict (keys 'a'",), ()),
    # the reason a field has no storage (Taichi reads freed memory for a destroyed tree, and
    # aborts the process for a field of an earlier ti.init)
    "field_of_destroyed_tree": ("""
        fb = fs.FieldsBuilder()
        y = fs.field(fs.f32)
        fb.dense(fs.i, 4).place(y)
        tree = fb.finalize()
        @fs.kernel
        def k():
            for i in range(4):
                x[i] = y[i] + 1.0
        def bad():
            tree.destroy()
            k()  # BAD
        """, (RuntimeError,), ("kernel 'k' uses field 'y'", "SNodeTree was destroyed"), ()),
    "field_of_earlier_init": ("""
        @fs.kernel
        def k():
            for i in x:
                x[i] += 1.0
        WATCH.clear()
        def bad():
            fs.init(arch=fs.cpu)
            k()  # BAD
        """, (RuntimeError,), ("kernel 'k' uses field 'x'", "earlier fs.init()"), ()),
    # an ndarray argument was called a field in these messages
    "ndarray_argument_index_count": ("""
        @fs.kernel
        def k(a: fs.types.ndarray(dtype=fs.f32, ndim=2)):
            for i, j in a:
                x[0] += a[i]  # BAD
        def bad(): k(np.ones((3, 4), dtype=np.float32))
        """, (fs.TaichiIndexError,), ("ndarray argument 'a' has 2 dimension(s)",), ()),
    "ndarray_argument_float_index": ("""
        @fs.kernel
        def k(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
            for i in range(4):
                x[i] = a[i * 0.5]  # BAD
        def bad(): k(np.ones(4, dtype=np.float32))
        """, (fs.TaichiTypeError,), ("ndarray argument 'a' index must be an integer",), ()),
    "python_scope_ndarray_index_past_end": ("""
        arr = fs.ndarray(fs.f32, shape=(4,))
        arr.fill(1.0)
        WATCH.append(arr)
        def bad(): arr[4] = 2.0  # BAD
        """, (IndexError,), ("ndarray 'arr'", "index 4"), ()),
    "python_scope_ndarray_from_numpy_shape": ("""
        arr = fs.ndarray(fs.f32, shape=(4,))
        WATCH.append(arr)
        def bad(): arr.from_numpy(np.ones(5, dtype=np.float32))  # BAD
        """, (ValueError,), ("ndarray 'arr'.from_numpy", "(5,)"), ()),
    # Python's "'Field' object cannot be interpreted as an integer", as a syntax error
    "range_of_a_field": ("""
        @fs.kernel
        def k():
            for i in range(x):  # BAD
                x[i] = 1.0
        def bad(): k()
        """, (fs.TaichiTypeError,), ("range() of field 'x'", "for i in x"), ()),
    # funcs and builtins called with the wrong arguments
    "func_keyword_repeats_a_positional": ("""
        @fs.func
        def f(a, b=1.0):
            return a + b
        @fs.kernel
        def k():
            for i in x:
                x[i] = f(x[i], 2.0, b=3.0)  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError,), ("func 'f': Multiple values for argument 'b'",), ()),
    "func_unknown_keyword": ("""
        @fs.func
        def f(a, b=1.0):
            return a + b
        @fs.kernel
        def k():
            for i in x:
                x[i] = f(x[i], c=3.0)  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError,), ("func 'f': Unexpected argument 'c'",), ()),
    "builtin_missing_argument": ("""
        @fs.kernel
        def k():
            for i in x:
                x[i] = fs.atan2(x[i])  # BAD
        def bad(): k()
        """, (fs.TaichiSyntaxError,), ("fs.atan2()", "missing a required argument: 'x'"), ()),
    # a struct met in arithmetic: a Python TypeError naming fieldsim's class, as a syntax error
    "struct_element_plus_a_number": ("""
        P = fs.types.struct(pos=fs.math.vec2, mass=fs.f32)
        p = P.field(shape=4)
        @fs.kernel
        def k():
            for i in p:
                x[i] = p[i] + 1.0  # BAD
        def bad(): k()
        """, (fs.TaichiTypeError,), ("+: an element of struct field 'p' and float 1.0",), ()),
    # the count error named the struct's first member field ('p.pos')
    "struct_field_index_count": ("""
        P = fs.types.struct(pos=fs.math.vec2, mass=fs.f32)
        p = P.field(shape=4)
        @fs.kernel
        def k():
            for i in p:
                x[i] = p[i, 0].mass  # BAD
        def bad(): k()
        """, (fs.TaichiIndexError,), ("struct field 'p' has 1 dimension(s)",), ()),
    # a bare FieldsimError without the user's line, which `except RuntimeError` (Taichi's class
    # for it) missed
    "nested_tape": ("""
        y = fs.field(fs.f32, shape=4, needs_grad=True)
        loss = fs.field(fs.f32, shape=(), needs_grad=True)
        @fs.kernel
        def k():
            for i in y:
                loss[None] += y[i] * y[i]
        def bad():
            with fs.ad.Tape(loss=loss):
                with fs.ad.Tape(loss=loss):  # BAD
                    k()
        """, (RuntimeError,), ("Tapes cannot be nested", "entered at"), ()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_mutant_gets_a_located_error_and_keeps_the_data(tmp_path, monkeypatch, name):
    body, classes, words, hidden = CASES[name]
    for module in hidden:  # None in sys.modules: `import module` raises ModuleNotFoundError
        monkeypatch.setitem(sys.modules, module, None)
    g, path, line = run_marked(tmp_path, f"mutant_{name}", HEAD, body)
    assert_located_failure(g, path, line, classes, words)
