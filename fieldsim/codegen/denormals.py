"""Denormal floats flushed to zero while a CPU task runs, as Taichi 1.7.4's x64 backend does.

Taichi's CPU kernels run with the MXCSR's flush-to-zero (FTZ: a subnormal result is 0) and
denormals-are-zero (DAZ: a subnormal operand reads as 0) bits set, in f32 and f64 alike
(measured: `a * a` of 1e-20 gives 0, `1e-39 * 1e20` gives 0). Besides the values, subnormal
operands cost x86 cores some hundred cycles each, so a kernel that meets them (a Gaussian's tail,
a tiny constant such as 1e-38) ran 100x slower than Taichi's.

`flush_denormals(module, fn)` takes a finished task function (`void (ptr, i64, i64)`) and
guarantees that its body runs with FTZ and DAZ set and that every return restores the caller's
MXCSR (numpy and Python, on the same thread, keep IEEE subnormals). x86-64 only.
"""
from llvmlite import ir as L

I32 = L.IntType(32)
PTR = L.PointerType()
_FTZ_DAZ = 0x8040  # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)


def _intrinsic(module: L.Module, name: str) -> L.Function:
    return module.globals.get(name) or L.Function(module, L.FunctionType(L.VoidType(), [PTR]), name)


def flush_denormals(module: L.Module, fn: L.Function):
    """Set FTZ/DAZ at `fn`'s entry and restore the caller's MXCSR before each `ret`."""
    stmxcsr = _intrinsic(module, "llvm.x86.sse.stmxcsr")
    ldmxcsr = _intrinsic(module, "llvm.x86.sse.ldmxcsr")
    b = L.IRBuilder()
    b.position_at_start(fn.blocks[0])
    saved = b.alloca(I32, name="mxcsr.saved")
    flushing = b.alloca(I32, name="mxcsr.flush")
    b.call(stmxcsr, [saved])
    b.store(b.or_(b.load(saved), L.Constant(I32, _FTZ_DAZ)), flushing)
    b.call(ldmxcsr, [flushing])
    for block in fn.blocks:
        last = block.instructions[-1] if block.instructions else None
        if isinstance(last, L.Ret):
            b.position_before(last)
            b.call(ldmxcsr, [saved])
