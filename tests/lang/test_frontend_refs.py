"""The frontend's name bindings are reference objects (fieldsim/lang/frontend_refs.py): what a
name loads, what assigning it does, and which variables a func's template parameter aliases,
for each kind of binding; and one dispatch table per node kind covers every visitor."""
import ast
import os

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang import frontend

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


SCALE = 3  # a Python global: a static binding


def test_each_binding_kind_loads_and_stores():
    out = fs.field(fs.f32, shape=6)

    @fs.kernel
    def k(a: fs.f32):
        top = a * 2.0  # kernel top level: a hidden 0-D field
        for i in range(1):  # noqa: B007 - a loop index binding
            local = a + 1.0  # a local scalar
            vec = fs.Vector([a, 2.0 * a])  # a local vector
            local += 1.0
            vec[1] = vec[0] + local
            out[0] = local
            out[1] = vec[1]
            out[2] = i + SCALE
        top += 1.0
        out[3] = top
        s = fs.Struct(p=a, q=fs.Vector([1.0, 2.0]))  # a struct local
        s.q[1] = s.p * 4.0
        out[4] = s.q[1]
        n = SCALE  # a static name reassigned in the kernel becomes a variable
        n = n + 1
        out[5] = n

    k(2.0)
    np.testing.assert_allclose(out.to_numpy(), [4.0, 6.0, 3.0, 5.0, 8.0, 4.0])


def test_a_template_parameter_aliases_each_kind_of_variable():
    out = fs.field(fs.f32, shape=3)

    @fs.func
    def bump(x: fs.template()):
        x += 1

    @fs.kernel
    def k():
        top = 1.0
        bump(top)
        for _ in range(1):
            s = 10.0
            v = fs.Vector([1.0, 2.0])
            bump(s)
            bump(v)
            out[1] = s
            out[2] = v[0] + v[1]
        out[0] = top

    k()
    np.testing.assert_allclose(out.to_numpy(), [2.0, 11.0, 5.0])


def _raises(kernel, err_type, fragment):
    with pytest.raises(err_type) as info:
        kernel()
    msg = str(info.value)
    assert fragment in msg, msg
    assert THIS_FILE in msg, msg


def test_a_struct_local_takes_only_structs():
    @fs.kernel
    def k():
        s = fs.Struct(p=1.0)
        s = 2.0  # noqa: F841
    _raises(k, fs.FieldsimTypeError, "")


def test_a_variable_does_not_take_a_struct():
    @fs.kernel
    def k():
        for _ in range(1):
            a = 1.0
            a = fs.Struct(p=1.0)  # noqa: F841
    _raises(k, fs.FieldsimTypeError, "which holds a non-struct value")


def test_a_struct_argument_of_a_func_is_read_only():
    @fs.func
    def f(s):  # (`s.p += 1.0` would make s the func's own copy)
        fs.atomic_add(s.p, 1.0)

    @fs.kernel
    def k():
        s = fs.Struct(p=1.0)
        f(s)
    _raises(k, fs.FieldsimSyntaxError, "a struct argument of this func")


def test_a_vector_local_names_itself_in_errors_through_augmented_assignment():
    @fs.kernel
    def k():
        for _ in range(1):
            v = fs.Vector([1.0, 2.0])
            v += fs.Vector([1.0, 2.0, 3.0])
    with pytest.raises(fs.FieldsimTypeError):
        k()


def test_every_visitor_is_in_its_dispatch_table():
    table = {"stmt_": frontend._STATEMENTS, "expr_": frontend._EXPRESSIONS}
    for name in dir(frontend.Frontend):
        for prefix, visitors in table.items():
            if name.startswith(prefix):
                node_type = getattr(ast, name[len(prefix):])
                assert visitors[node_type] is getattr(frontend.Frontend, name), name
    assert ast.For in frontend._STATEMENTS and ast.BinOp in frontend._EXPRESSIONS
    assert ast.With not in frontend._STATEMENTS


def test_an_unsupported_statement_is_located():
    @fs.kernel
    def k():
        with open(THIS_FILE):
            pass
    _raises(k, fs.FieldsimSyntaxError, "with")


def test_an_augmented_float_literal_is_a_default_fp_constant_first():
    """`w += 1e-3` on an f64 variable under default_fp=f32 adds f32(1e-3) widened, as Taichi
    1.7.4's literal is a default_fp constant before the atomic's cast (measured: 2.0010000000474975
    from 2.0; fieldsim added the exact double 0.001, 2.001), as `w = w + 1e-3` already did."""
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    x = fs.field(fs.f64, shape=())
    out = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k():
        for _ in range(1):
            w = x[None]
            w += 1e-3
            out[0] = w
            e = x[None]
            e = e + 1e-3
            out[1] = e
            v = fs.Vector([x[None], x[None]])
            v -= 0.1
            out[2] = v[1]
            fs.atomic_add(e, 0.3)
            out[3] = e

    x[None] = 2.0
    k()
    lit = float(np.float32(1e-3))
    want = [2.0 + lit, 2.0 + lit, 2.0 - float(np.float32(0.1)), 2.0 + lit + float(np.float32(0.3))]
    assert out.to_numpy().tolist() == want
