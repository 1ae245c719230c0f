"""Element addresses (codegen/llvm.py `index64`, `scaled_index`, `offset_index`,
`TaskLowering.linear`, `in_block`): constant parts are folded, and the components of one element
share their index arithmetic within an LLVM block.

Checks: the folding helpers give the same numbers as the unfolded arithmetic (negative
constants included) and emit nothing for constant operands; a kernel reading every component
of a vector and a matrix field hands LLVM one stride multiply of the particle index per
field and no sign extension (the index is the loop counter); the results are right, with bounds checks too
(debug=True), where an out-of-range element is still reported and nothing written for it.
"""
import re

import numpy as np
import pytest
from llvmlite import ir as L

import fieldsim as fs
from fieldsim.codegen.llvm import index64, offset_index, scaled_index
from fieldsim.errors import FieldsimIndexError

I32, I64 = L.IntType(32), L.IntType(64)


def _builder():
    fn = L.Function(L.Module(), L.FunctionType(L.VoidType(), [I32, I64]), "f")
    return L.IRBuilder(fn.append_basic_block("entry")), fn


@pytest.mark.parametrize("lin,n,i", [(3, 4, 1), (0, 7, 0), (-2, 3, 5), (5, 1, -1)])
def test_constants_fold_to_the_same_number(lin, n, i):
    b, _ = _builder()
    c = offset_index(b, scaled_index(b, L.Constant(I64, lin), L.Constant(I64, n)),
                     index64(b, L.Constant(I32, i)))
    assert isinstance(c, L.Constant) and c.constant == lin * n + i
    assert not b.block.instructions


def test_variable_parts_keep_their_instructions():
    b, fn = _builder()
    i32, i64 = fn.args
    wide = index64(b, i32)
    assert [ins.opname for ins in b.block.instructions] == ["sext"]
    assert index64(b, i64) is i64
    assert scaled_index(b, i64, L.Constant(I64, 1)) is i64  # x * 1
    assert offset_index(b, i64, L.Constant(I64, 0)) is i64  # x + 0
    assert offset_index(b, L.Constant(I64, 0), wide) is wide  # 0 + x
    offset_index(b, scaled_index(b, i64, L.Constant(I64, 4)), L.Constant(I64, 2))
    assert [ins.opname for ins in b.block.instructions] == ["sext", "mul", "add"]


def _particles(debug=False):
    fs.init(arch=fs.cpu, offline_cache=False, default_fp=fs.f64, debug=debug)
    n = 5
    x = fs.Vector.field(3, dtype=fs.f64, shape=n)
    F = fs.Matrix.field(2, 2, dtype=fs.f64, shape=n)
    out = fs.field(fs.f64, shape=n)

    @fs.kernel
    def combine():
        for p in x:
            out[p] = x[p][0] + 2 * x[p][1] + 3 * x[p][2] + F[p].determinant()

    rng = np.random.default_rng(5)
    xs, Fs = rng.normal(size=(n, 3)), rng.normal(size=(n, 2, 2))
    x.from_numpy(xs)
    F.from_numpy(Fs)
    combine()
    want = xs @ np.array([1.0, 2.0, 3.0]) + np.linalg.det(Fs)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-13)


def test_components_share_index_arithmetic(llvm_texts):
    _particles()
    (text,) = [t for t in llvm_texts if "combine" in t]
    body = text[text.index("define"):]
    assert not re.search(r"sext i32 -?\d+ to", body), "a constant was extended at run time"
    # the particle index: the loop's i64 counter itself, never extended (narrow_index);
    # multiplied once by x's stride 3 and once by F's 4 (its 2 x 2 components then differ by
    # a constant offset)
    assert not re.findall(r"= sext i32 ", body)
    assert len(re.findall(r"= mul i64 %\"[^\"]+\", 3\b", body)) == 1
    assert len(re.findall(r"= mul i64 %\"[^\"]+\", 4\b", body)) == 1


def test_debug_bounds_checks_still_report():
    _particles(debug=True)  # every index in range: runs and is right
    fs.init(arch=fs.cpu, offline_cache=False, debug=True)
    v = fs.Vector.field(2, dtype=fs.f32, shape=4)

    @fs.kernel
    def poke(k: fs.i32):
        for p in v:
            v[p + k][1] = 1.0

    with pytest.raises(FieldsimIndexError, match="out of range"):
        poke(1)
    # the in-range iterations wrote their element; the out-of-range one wrote nowhere
    np.testing.assert_array_equal(v.to_numpy(), [[0, 0], [0, 1], [0, 1], [0, 1]])
