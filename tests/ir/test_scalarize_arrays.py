"""scalarize_arrays: golden IR before and after, and when it leaves a kernel alone.

The frontend makes ARRAY_LOAD/ARRAY_STORE for a local vector indexed at run time; the pass
turns them back into per-entry locals and selects: for AD and the checks all of them, for the
primal program those `keeps_array` does not keep (small, or only read). A kernel without them
is returned as it is, so its IR (and LLVM IR) is what it was before local arrays existed.
"""
import pytest

import fieldsim as fs
from fieldsim.ir import dtypes as T
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Kernel, Op, walk
from fieldsim.ir.passes.scalarize_arrays import (
    ARRAY_MIN_ENTRIES,
    READ_ONLY_MIN_ENTRIES,
    keeps_array,
    scalarize_arrays,
)
from fieldsim.ir.printer import print_kernel
from fieldsim.ir.verify import IRVerifyError, verify
from fieldsim.lang import runtime


def primal_ir(kern, *args):
    """The IR the primal program is compiled from (before scalarize_arrays)."""
    templates, _key, _, dtypes, ret = kern.bind(args, {})
    return kern.build_ir(runtime.get(), templates, dtypes, ret)[0]


def stack_kernel():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4, name="x")

    @fs.kernel
    def k_stack(n: fs.i32):
        for i in range(4):
            v = fs.Vector([0.0] * 8)
            v[n] = x[i]
            x[i] = v[n + i] + v[1]

    return k_stack, x


EXPECTED_PRIMAL = """\
kernel k_stack(n: i32):
  %0 = arg.i32 arg0
  %1 = const.i32 0
  %2 = const.i32 4
  %3 = for.i32 parallel %1, %2 {
    %4 = alloca.f32
    %5 = const.f32 0.0
    local_store %4, %5
    %6 = alloca.f32
    %7 = const.f32 0.0
    local_store %6, %7
    %8 = alloca.f32
    %9 = const.f32 0.0
    local_store %8, %9
    %10 = alloca.f32
    %11 = const.f32 0.0
    local_store %10, %11
    %12 = alloca.f32
    %13 = const.f32 0.0
    local_store %12, %13
    %14 = alloca.f32
    %15 = const.f32 0.0
    local_store %14, %15
    %16 = alloca.f32
    %17 = const.f32 0.0
    local_store %16, %17
    %18 = alloca.f32
    %19 = const.f32 0.0
    local_store %18, %19
    %20 = load.f32 x[%3]
    array_store [%4, %6, %8, %10, %12, %14, %16, %18][%0], %20
    %21 = add.i32 %0, %3
    %22 = array_load.f32 [%4, %6, %8, %10, %12, %14, %16, %18][%21]
    %23 = local_load.f32 %6
    %24 = add.f32 %22, %23
    store x[%3], %24
  }"""

EXPECTED_SCALARISED = """\
kernel k_stack(n: i32):
  %0 = arg.i32 arg0
  %1 = const.i32 0
  %2 = const.i32 4
  %3 = for.i32 parallel %1, %2 {
    %4 = alloca.f32
    %5 = const.f32 0.0
    local_store %4, %5
    %6 = alloca.f32
    %7 = const.f32 0.0
    local_store %6, %7
    %8 = alloca.f32
    %9 = const.f32 0.0
    local_store %8, %9
    %10 = alloca.f32
    %11 = const.f32 0.0
    local_store %10, %11
    %12 = alloca.f32
    %13 = const.f32 0.0
    local_store %12, %13
    %14 = alloca.f32
    %15 = const.f32 0.0
    local_store %14, %15
    %16 = alloca.f32
    %17 = const.f32 0.0
    local_store %16, %17
    %18 = alloca.f32
    %19 = const.f32 0.0
    local_store %18, %19
    %20 = load.f32 x[%3]
    %21 = local_load.f32 %4
    %22 = const.i32 0
    %23 = eq.i32 %0, %22
    %24 = select.f32 %23, %20, %21
    local_store %4, %24
    %25 = local_load.f32 %6
    %26 = const.i32 1
    %27 = eq.i32 %0, %26
    %28 = select.f32 %27, %20, %25
    local_store %6, %28
    %29 = local_load.f32 %8
    %30 = const.i32 2
    %31 = eq.i32 %0, %30
    %32 = select.f32 %31, %20, %29
    local_store %8, %32
    %33 = local_load.f32 %10
    %34 = const.i32 3
    %35 = eq.i32 %0, %34
    %36 = select.f32 %35, %20, %33
    local_store %10, %36
    %37 = local_load.f32 %12
    %38 = const.i32 4
    %39 = eq.i32 %0, %38
    %40 = select.f32 %39, %20, %37
    local_store %12, %40
    %41 = local_load.f32 %14
    %42 = const.i32 5
    %43 = eq.i32 %0, %42
    %44 = select.f32 %43, %20, %41
    local_store %14, %44
    %45 = local_load.f32 %16
    %46 = const.i32 6
    %47 = eq.i32 %0, %46
    %48 = select.f32 %47, %20, %45
    local_store %16, %48
    %49 = local_load.f32 %18
    %50 = const.i32 7
    %51 = eq.i32 %0, %50
    %52 = select.f32 %51, %20, %49
    local_store %18, %52
    %53 = add.i32 %0, %3
    %54 = local_load.f32 %4
    %55 = local_load.f32 %6
    %56 = local_load.f32 %8
    %57 = local_load.f32 %10
    %58 = local_load.f32 %12
    %59 = local_load.f32 %14
    %60 = local_load.f32 %16
    %61 = local_load.f32 %18
    %62 = const.i32 6
    %63 = eq.i32 %53, %62
    %64 = select.f32 %63, %60, %61
    %65 = const.i32 5
    %66 = eq.i32 %53, %65
    %67 = select.f32 %66, %59, %64
    %68 = const.i32 4
    %69 = eq.i32 %53, %68
    %70 = select.f32 %69, %58, %67
    %71 = const.i32 3
    %72 = eq.i32 %53, %71
    %73 = select.f32 %72, %57, %70
    %74 = const.i32 2
    %75 = eq.i32 %53, %74
    %76 = select.f32 %75, %56, %73
    %77 = const.i32 1
    %78 = eq.i32 %53, %77
    %79 = select.f32 %78, %55, %76
    %80 = const.i32 0
    %81 = eq.i32 %53, %80
    %82 = select.f32 %81, %54, %79
    %83 = local_load.f32 %6
    %84 = add.f32 %82, %83
    store x[%3], %84
  }"""


def test_golden_before_and_after():
    k, _ = stack_kernel()
    ir = primal_ir(k, 1)
    assert ir.meta.get("local_arrays")
    assert print_kernel(ir) == EXPECTED_PRIMAL
    out = scalarize_arrays(ir)
    assert print_kernel(out) == EXPECTED_SCALARISED
    assert "local_arrays" not in out.meta
    assert print_kernel(ir) == EXPECTED_PRIMAL, "the input was changed"


def test_the_kept_ir_has_no_arrays_and_computes_the_same():
    k, x = stack_kernel()
    x.from_numpy([1.0, 2.0, 3.0, 4.0])
    k(1)  # v[1] = x[i]; x[i] = v[1 + i] + v[1]: 2 x[0] for i = 0, else x[i]
    assert x.to_numpy().tolist() == [2.0, 2.0, 3.0, 4.0]
    templates, key, _, dtypes, ret = k.bind((1,), {})
    kept = k.compiled(templates, key, dtypes, ret).ir
    assert not any(s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE) for s in walk(kept.body))


def test_kernels_without_runtime_indexed_locals_are_left_alone():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4, name="x")

    @fs.kernel
    def k():
        for i in range(4):
            big = fs.Vector([0.0] * 8)
            big[2] = x[i]  # constant indices: one local each
            x[i] = big[2] + big[3]
    ir = primal_ir(k)
    assert "local_arrays" not in ir.meta
    assert scalarize_arrays(ir) is ir


def test_which_arrays_the_primal_program_keeps():
    assert ARRAY_MIN_ENTRIES == 3 and READ_ONLY_MIN_ENTRIES == 17
    assert not keeps_array(2, True) and keeps_array(3, True) and keeps_array(64, True)
    assert not keeps_array(16, False) and keeps_array(17, False)
    assert keeps_array(19, False)  # D3Q19 moment vectors read in loops that do not vectorize
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4, name="x")

    @fs.kernel
    def k(n: fs.i32):
        for i in range(4):
            written = fs.Vector([0.0] * 3)
            written[n] = x[i]
            read = fs.Vector([x[i], 2.0, 3.0, 4.0])  # only read at runtime: selects
            table = fs.Vector([t * 0.5 for t in range(40)])  # only read, but large: an array
            x[i] = written[n] + read[n] + table[n + i]
    ir = primal_ir(k, 1)
    arrays = {len(s.args) - (1 if s.op == Op.ARRAY_LOAD else 2)
              for s in walk(ir.body) if s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE)}
    assert arrays == {3, 40}
    x.from_numpy([1.0, 2.0, 3.0, 4.0])
    k(1)
    assert x.to_numpy().tolist() == [(i + 1.0) + 2.0 + 0.5 * (1 + i) for i in range(4)]


def _kernel(body):
    return Kernel("k", [], body)


def test_verifier_checks_array_operands():
    body = []
    b = IRBuilder(body)
    with b.into(b.emit(Op.SERIAL, None, blocks=[[]]).body):
        a, c = b.emit(Op.ALLOCA, T.f32), b.emit(Op.ALLOCA, T.f32)
        i = b.const(1, T.i32)
        b.emit(Op.ARRAY_LOAD, T.f32, (a, c, i))
    verify(_kernel(body))
    with b.into(body[0].body):
        b.emit(Op.ARRAY_STORE, None, (c, a, i, b.const(2.0, T.f32)))  # c's array is (a, c)
    with pytest.raises(IRVerifyError, match="two different arrays"):
        verify(_kernel(body))
    body[0].body.pop()
    with b.into(body[0].body):
        b.emit(Op.ARRAY_LOAD, T.i32, (a, c, i))
    with pytest.raises(IRVerifyError, match="array_load of i32 on a f32 local"):
        verify(_kernel(body))
