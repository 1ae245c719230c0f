"""Taichi's compile-time SyntaxWarnings: Python functions called in kernels, long static unrolls."""
import math
import warnings

import numpy as np
import pytest

import fieldsim as fs


def _helper(a):
    return a * 2


def _poly_if(r):  # a course program's SPH kernel, undecorated (taichiCourse01 PCISPH)
    res = 0.0
    if r < 1.0:
        res = 1.0 - r * r
    return res


def _step_ifexp(r):
    return 7.0 if r < 1.0 else -1.0


def _static_if(r, n):
    return r * 2.0 if n > 1 else r


class _Shape:
    def scaled(self, a):
        return a + 1


def _syntax_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, SyntaxWarning)]


def test_python_functions_called_in_a_kernel_warn_at_their_lines():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 4)
    items = [1, 2, 3]
    shape = _Shape()

    @fs.kernel
    def k():
        n = len(items)
        a = _helper(x[0])
        b = math.sqrt(4.0)
        c = np.float32(1.0)
        d = shape.scaled(x[1])
        x[3] = n + a + b + c + d

    caught = _syntax_warnings(k)
    names = [str(w.message).split('"')[1] for w in caught]
    assert names == ["len", "_helper", "math.sqrt", "np.float32", "shape.scaled"]
    assert all(str(w.message).startswith("Calling non-taichi function") for w in caught)
    lines = [w.lineno for w in caught]
    assert lines == sorted(lines) and len(set(lines)) == 5
    assert all(w.filename == __file__ for w in caught)
    assert x[3] == 3 + 0 + 2 + 1 + 1  # the calls still ran as before


def _plain_outer(k):
    r = k
    if isinstance(k, int):
        r = 1
    return abs(r) + len([1, 2]) + _helper(r)


def test_calls_inside_a_plain_python_helper_do_not_warn():
    # Taichi 1.7.4 runs a plain helper as Python: only the call in the kernel warns
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(n: fs.i32) -> fs.i32:
        return _plain_outer(n)

    caught = _syntax_warnings(lambda: k(3))
    assert [str(w.message).split('"')[1] for w in caught] == ["_plain_outer"]
    assert k(3) == 3 + 2 + 6


def test_a_plain_helper_branching_on_a_kernel_value_warns_at_its_line():
    # Taichi 1.7.4 runs the helper as Python, where a kernel value is always true: it gives
    # 1 - r*r and 7.0 for every r (measured). fieldsim tests each value; the silent difference
    # is named at the branch. A branch on a compile-time value is the same in both: no warning.
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 2)
    out = fs.field(fs.f32, (3, 2))
    x.from_numpy(np.array([0.5, 2.0], np.float32))

    @fs.kernel
    def k():
        for i in x:
            out[0, i] = _poly_if(x[i])
            out[1, i] = _step_ifexp(x[i])
            out[2, i] = _static_if(x[i], 2)

    caught = [w for w in _syntax_warnings(k) if "plain Python function" in str(w.message)]
    lines = {w.lineno for w in caught}
    assert lines == {_poly_if.__code__.co_firstlineno + 2, _step_ifexp.__code__.co_firstlineno + 1}
    assert all(w.filename == __file__ and "always true" in str(w.message) for w in caught)
    assert '"_poly_if"' in " ".join(str(w.message) for w in caught)
    np.testing.assert_allclose(out.to_numpy(), [[0.75, 0.0], [7.0, -1.0], [1.0, 4.0]])


def test_fieldsim_functions_mapped_builtins_and_static_calls_do_not_warn():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 8)
    v = fs.Vector.field(3, fs.f32, 2)

    @fs.func
    def twice(a):
        return a * 2

    @fs.kernel
    def k():
        for i in range(2):  # the loop's range is the loop's own
            w = v[i]
            x[i] = min(abs(x[i]), 1.0) + max(int(w.x), 0) + float(len(w)) + pow(2.0, 2)
            x[i] += w.norm() + fs.sqrt(4.0) + twice(1.0) + fs.math.vec2(1.0).sum()
        x[2] = fs.static(_helper(3))  # evaluated in Python on purpose
        for j in fs.static(range(len([1, 2]))):
            x[3 + j] = j
        squares = [q * q for q in range(3) if abs(q) != len([0])]  # compile-time, as in Taichi
        x[5] = squares[1]
        print("{} items".format(2))

    assert _syntax_warnings(k) == []


def test_a_static_loop_past_the_unrolling_limit_warns_once():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, 64)

    @fs.kernel
    def k():
        for i in fs.static(range(33)):
            x[i] = i
        for j in fs.static(range(32)):
            x[j] += 1

    caught = _syntax_warnings(k)
    assert len(caught) == 1
    assert "unrolling more than 32 iterations" in str(caught[0].message)
    assert x[32] == 32 and x[31] == 32


@pytest.mark.parametrize("limit, n, warns", [(0, 100, False), (4, 5, True), (4, 4, False)])
def test_unrolling_limit_option(limit, n, warns):
    fs.init(arch=fs.cpu, unrolling_limit=limit)
    x = fs.field(fs.i32, 128)

    @fs.kernel
    def k():
        for i in fs.static(range(n)):
            x[i] = i

    caught = _syntax_warnings(k)
    assert bool(caught) == warns
    assert x[n - 1] == n - 1


def test_a_static_loop_that_breaks_before_the_limit_does_not_warn():
    fs.init(arch=fs.cpu, unrolling_limit=4)
    x = fs.field(fs.i32, 16)

    @fs.kernel
    def k():
        for i in fs.static(range(10)):
            if fs.static(i == 3):
                break
            x[i] = 1

    assert _syntax_warnings(k) == []
    assert x.to_numpy().sum() == 3


def test_static_assert_arguments_do_not_warn_but_static_print_arguments_do():
    # as measured in Taichi 1.7.4: static_assert's condition is built in static scope,
    # static_print's arguments are not
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 3)

    @fs.kernel
    def k():
        fs.static_assert(len(x.shape) == 1 and isinstance(x.shape, tuple), "1-D")
        fs.static_print(len(x.shape))

    caught = _syntax_warnings(k)
    assert [str(w.message).split('"')[1] for w in caught] == ["len"]
