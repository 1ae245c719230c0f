"""Integer division, modulo, shifts and float-to-int casts are defined for every input: no trap
(SIGFPE), no LLVM poison (float-to-int clamps to the type's range, NaN gives its minimum, except
on x86-64, where it gives x86's results as Taichi's x64 backend: test_x86_conversions.py). The reference is Python's arithmetic wrapped to the type's width
(two's complement), with x // 0 == x % 0 == 0; the op table's evaluators agree with it.
"""
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ir.opdefs import Op, evaluate

_X86 = platform.machine().lower() in ("x86_64", "amd64")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wrap(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def ref(op, a, b, bits):
    if op == "//":
        return wrap(a // b, bits) if b else 0
    if op == "%":
        return wrap(a % b, bits) if b else 0
    if op == "<<":
        return wrap(a << b, bits) if 0 <= b else 0
    if op == ">>":
        return wrap(a >> b, bits) if 0 <= b < bits else (-1 if a < 0 else 0)
    raise ValueError(op)


def _cases(bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    vals = [lo, lo + 1, -7, -1, 0, 1, 3, 7, hi]
    return [(a, b) for a in vals for b in vals]


@pytest.mark.parametrize("dt,bits", [(fs.i32, 32), (fs.i64, 64)], ids=["i32", "i64"])
def test_div_mod_edge_cases_match_python_wrapped(dt, bits):
    cases = _cases(bits)
    n = len(cases)
    a = fs.field(dt, shape=n)
    b = fs.field(dt, shape=n)
    out = fs.field(dt, shape=(n, 2))
    a.from_numpy(np.array([c[0] for c in cases]))
    b.from_numpy(np.array([c[1] for c in cases]))

    @fs.kernel
    def divmod_all():
        for i in a:
            out[i, 0] = a[i] // b[i]
            out[i, 1] = a[i] % b[i]

    divmod_all()
    got = out.to_numpy()
    want = np.array([[ref("//", x, y, bits), ref("%", x, y, bits)] for x, y in cases])
    np.testing.assert_array_equal(got, want)


def test_int_min_divided_by_minus_one_does_not_kill_the_process(tmp_path):
    # In a child process: before the fix this was SIGFPE (the interpreter died).
    prog = textwrap.dedent("""
        import fieldsim as fs
        fs.init(arch=fs.cpu, offline_cache=False)
        for dt, lo in ((fs.i32, -2**31), (fs.i64, -2**63)):
            r = fs.field(dt, shape=2)
            @fs.kernel
            def k(a: dt, b: dt):
                r[0] = a // b
                r[1] = a % b
            k(lo, -1)
            print(r.to_numpy().tolist())
    """)
    script = tmp_path / "intmin.py"
    script.write_text(prog)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == [f"[{-2**31}, 0]", f"[{-2**63}, 0]"]


@pytest.mark.parametrize("dt,bits", [(fs.i32, 32), (fs.i64, 64)], ids=["i32", "i64"])
def test_shifts_by_any_amount_are_defined(dt, bits):
    amounts = [0, 1, bits - 1, bits, bits + 8, 40, -1]
    values = [1, -1, 5, -(1 << (bits - 1))]
    cases = [(v, s) for v in values for s in amounts]
    n = len(cases)
    a = fs.field(dt, shape=n)
    s = fs.field(dt, shape=n)
    out = fs.field(dt, shape=(n, 2))
    a.from_numpy(np.array([c[0] for c in cases]))
    s.from_numpy(np.array([c[1] for c in cases]))

    @fs.kernel
    def shifts():
        for i in a:
            out[i, 0] = a[i] << s[i]
            out[i, 1] = a[i] >> s[i]

    shifts()
    want = np.array([[ref("<<", v, k, bits), ref(">>", v, k, bits)] for v, k in cases])
    np.testing.assert_array_equal(out.to_numpy(), want)


@pytest.mark.skipif(_X86, reason="x86-64 converts as Taichi's x64 "
                    "backend does: tests/codegen/test_x86_conversions.py")
def test_float_to_int_clamps_and_nan_gives_the_minimum():
    vals = [float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 3.7, -3.7, 2.0**31, -2.0**31,
            2.0**40]
    x = fs.field(fs.f64, shape=len(vals))
    xf = fs.field(fs.f32, shape=len(vals))
    o32 = fs.field(fs.i32, shape=len(vals))
    o64 = fs.field(fs.i64, shape=len(vals))
    of = fs.field(fs.i32, shape=len(vals))
    ou = fs.field(fs.u8, shape=len(vals))
    x.from_numpy(np.array(vals))
    xf.from_numpy(np.array(vals, dtype=np.float32))

    @fs.kernel
    def conv():
        for i in x:
            o32[i] = int(x[i])
            o64[i] = fs.cast(x[i], fs.i64)
            of[i] = int(xf[i])
            ou[i] = fs.cast(x[i], fs.u8)

    conv()

    def clamp(v, lo, hi):
        """The documented semantics: NaN -> lo, else truncate, clamped to [lo, hi], where hi
        is the largest value of the float type below the integer type's bound."""
        if v != v:
            return lo
        return lo if v <= lo else hi if v >= hi else int(v)

    f32_i32_hi = int(np.nextafter(np.float32(2.0**31), np.float32(0)))  # 2^31 - 128
    f64_i64_hi = int(np.nextafter(2.0**63, 0))  # 2^63 - 1024
    np.testing.assert_array_equal(o32.to_numpy(), [clamp(v, -2**31, 2**31 - 1) for v in vals])
    np.testing.assert_array_equal(o64.to_numpy(), [clamp(v, -2**63, f64_i64_hi) for v in vals])
    np.testing.assert_array_equal(of.to_numpy(), [clamp(float(np.float32(v)), -2**31, f32_i32_hi)
                                                  for v in vals])
    np.testing.assert_array_equal(ou.to_numpy(), [clamp(v, 0, 255) for v in vals])


@pytest.mark.parametrize("op,fn", [(Op.FLOORDIV, "//"), (Op.MOD, "%"), (Op.SHL, "<<"),
                                   (Op.SHR, ">>")])
def test_op_table_evaluators_agree_after_wrapping(op, fn):
    for a, b in _cases(32) + [(1, 40), (-1, 40), (5, -1), (-5, -1)]:
        assert wrap(evaluate(op, a, b), 32) == ref(fn, a, b, 32), (op, a, b)
