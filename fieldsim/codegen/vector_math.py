"""Vector libm for fast-math loops: glibc's libmvec variants of f32/f64 math calls.

Takes: the host's CPU features, once per CPU backend; then, while a kernel is lowered under
fast-math, each scalar call of a function libmvec has (`exp`, `log`, `sin`, `pow`, ...).
Guarantees: the call carries LLVM's `vector-function-abi-variant` attribute naming the libmvec
variants for the vector widths the host runs (x86's SSE `b`, AVX2 `d`, AVX-512 `e` ABIs), the
variants are declared in the module and kept alive (`llvm.compiler.used`) until the loop
vectorizer has seen them, and libmvec is loaded so the JIT resolves them. A loop the
vectorizer widens then calls one vector function per 8 or 16 lanes where it called the scalar
function once per lane (and, worse, once per lane of an already widened loop, spilling the
vector registers around every call).

Why only under fast-math: libmvec's functions are within glibc's published bounds (about 4
ulp) rather than within libm's scalar ones (about 1 ulp); fast-math licenses that, as
`-ffast-math` lets compilers call libmvec. With `fast_math=False`, or without libmvec (not
glibc, not x86-64), every such call is `scalar_call`'s: libm's scalar results in a scalar loop,
as Taichi's x64 backend compiles it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

from llvmlite import ir as L

# the functions vectorized: fieldsim's math name -> number of arguments
FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "tanh": 1, "exp": 1,
             "log": 1, "pow": 2, "atan2": 2}
# x86 vector-function ABI letter -> (the CPU feature it needs, f32 lanes); f64 has half the lanes
_ISAS = (("b", "+sse4.2", 4), ("d", "+avx2", 8), ("e", "+avx512f", 16))


@functools.cache
def _load_libmvec():
    """glibc's libmvec loaded into the process (its symbols global, for the JIT), or None; once
    per process, not at every `fs.init` (the library search alone runs `ldconfig`)."""
    path = ctypes.util.find_library("mvec")
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    import llvmlite.binding as llvm
    llvm.load_library_permanently(path)
    return lib


class VectorMath:
    """The libmvec variants this host can call, and their attachment to calls (module doc)."""

    def __init__(self, lib, features: str):
        self.lib = lib
        self.isas = [(isa, lanes) for isa, feature, lanes in _ISAS if feature in features.split(",")]

    @classmethod
    def for_host(cls, triple: str, features: str) -> VectorMath | None:
        if not triple.startswith("x86_64"):
            return None
        lib = _load_libmvec()
        return None if lib is None else cls(lib, features)

    def variants(self, name: str, is_f32: bool) -> list[tuple[str, int]]:
        """(libmvec symbol, lanes) of `name` per usable ABI, those the library defines."""
        nargs = FUNCTIONS.get(name)
        if nargs is None:
            return []
        found = []
        for isa, lanes in self.isas:
            n = lanes if is_f32 else lanes // 2
            symbol = f"_ZGV{isa}N{n}{'v' * nargs}_{name}{'f' if is_f32 else ''}"
            if hasattr(self.lib, symbol):
                found.append((symbol, n))
        return found

    def attach(self, call: L.CallInstr, module: L.Module, name: str, ty) -> None:
        """Name `call`'s libmvec variants on it and declare them in `module` (module doc)."""
        variants = self.variants(name, isinstance(ty, L.FloatType))
        if not variants:
            return
        nargs = FUNCTIONS[name]
        mangled = []
        for symbol, lanes in variants:
            vty = L.VectorType(ty, lanes)
            if symbol not in module.globals:
                L.Function(module, L.FunctionType(vty, [vty] * nargs), symbol)
            abi = symbol[:symbol.index("_", 4) + 1]  # `_ZGVdN8v_`
            mangled.append(f"{abi}{call.callee.name}({symbol})")
        # string attributes: llvmlite's attribute sets know only keyword ones. No memory
        # effects (errno is never read): a C libm call (`tanhf`) can then be vectorized
        set.add(call.attributes, f'"vector-function-abi-variant"="{",".join(mangled)}"')
        set.add(call.attributes, "memory(none)")


def scalar_call(b: L.IRBuilder, module: L.Module, name: str, bits: int, args) -> L.CallInstr:
    """A call of libm's scalar `name` (`expf`, `exp`, ...) without memory effects (errno is
    never read), as Taichi's x64 backend makes it: LLVM hoists and shares it, and folds a call
    whose argument it proves constant (`a = 0.3; a = 0.7; ti.tanh(a)`, a field element stored
    then read) in double precision rounded once, as Taichi's LLVM does (measured on 1.7.4;
    `nobuiltin` had kept such calls at libm's f32 result, an ulp off). Its loops carry the
    SCALAR hint (llvm.scalar_libm_loop), so LLVM does not widen them into vector loops calling
    it once per lane (Target.scalar_libm)."""
    ty = L.FloatType() if bits == 32 else L.DoubleType()
    cname = name + ("f" if bits == 32 else "")
    fn = module.globals.get(cname) or L.Function(module, L.FunctionType(ty, [ty] * len(args)), cname)
    call = b.call(fn, args)
    set.add(call.attributes, "memory(none)")
    return call


def keep_declarations(module: L.Module) -> None:
    """Keep the declared variants until the vectorizer runs (LLVM drops unused declarations)."""
    used = [g for name, g in module.globals.items() if name.startswith("_ZGV")]
    if not used:
        return
    ty = L.ArrayType(L.PointerType(), len(used))
    keep = L.GlobalVariable(module, ty, "llvm.compiler.used")
    keep.linkage, keep.section = "appending", "llvm.metadata"
    keep.initializer = L.Constant(ty, used)
