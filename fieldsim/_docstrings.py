"""Docstrings for public names that factories make (`fs.sin`, `fs.atomic_add`, `fs.math.clamp`,
...) and examples for public names whose docstring has none.

Imported last by `fieldsim/__init__.py`; it only sets `__doc__`, never behaviour. A docstring
written at the definition wins: `SUMMARY` fills an empty one, `EXAMPLE` is appended to one that
has no `>>>` yet. tests/docs/test_doctests.py runs every example and checks every public name has
one. Examples see `fs` (fieldsim) and `np` (numpy), after `fs.init(arch=fs.cpu)`.
"""
from __future__ import annotations

import inspect

_UNARY = {
    "sin": ("sine", "0.0", "0.0"), "cos": ("cosine", "0.0", "1.0"), "tan": ("tangent", "0.0", "0.0"),
    "asin": ("arcsine", "0.0", "0.0"), "acos": ("arccosine", "1.0", "0.0"),
    "atan": ("arctangent", "0.0", "0.0"), "tanh": ("hyperbolic tangent", "0.0", "0.0"),
    "exp": ("e to the power x", "0.0", "1.0"), "log": ("natural logarithm", "1.0", "0.0"),
    "sqrt": ("square root", "4.0", "2.0"), "rsqrt": ("reciprocal square root 1/sqrt(x)", "4.0", "0.5"),
    "floor": ("largest integer not above x (`fs.floor(x, fs.i32)` casts)", "1.5", "1.0"),
    "ceil": ("smallest integer not below x (`fs.ceil(x, fs.i32)` casts)", "1.5", "2.0"),
    "round": ("nearest integer, halves to even (`fs.round(x, fs.i32)` casts)", "2.5", "2.0"),
    "abs": ("absolute value (ints stay ints)", "-3", "3"),
}

SUMMARY: dict[str, str] = {
    f"fs.{n}": f"Element-wise {d}; in kernels and in Python scope (on numbers, vectors, matrices).\n\n"
               f">>> print(fs.{n}({a}))\n{r}\n" for n, (d, a, r) in _UNARY.items()}

_KERNEL_USE = """
>>> x = fs.field(fs.{dt}, shape=()){setup}
>>> @fs.kernel
... def k() -> fs.{dt}:
...     old = fs.atomic_{op}(x[None], {arg})
...     return old
>>> k(), x[None]
({old}, {new})
"""
_ATOMIC = {"add": ("f32", "", "2.0", "0.0", "2.0", "x += y"), "sub": ("f32", "", "2.0", "0.0", "-2.0", "x -= y"),
           "mul": ("f32", "\n>>> x[None] = 3", "2.0", "3.0", "6.0", "x *= y"),
           "min": ("f32", "\n>>> x[None] = 3", "2.0", "3.0", "2.0", "x = min(x, y)"),
           "max": ("f32", "", "2.0", "0.0", "2.0", "x = max(x, y)"),
           "and": ("i32", "\n>>> x[None] = 6", "3", "6", "2", "x &= y"),
           "or": ("i32", "\n>>> x[None] = 4", "1", "4", "5", "x |= y"),
           "xor": ("i32", "\n>>> x[None] = 6", "3", "6", "5", "x ^= y")}
for _op, (_dt, _setup, _arg, _old, _new, _what) in _ATOMIC.items():
    SUMMARY[f"fs.atomic_{_op}"] = (
        f"Atomically `{_what}` on a field element or local in a kernel; returns the old value.\n"
        + _KERNEL_USE.format(dt=_dt, setup=_setup, op=_op, arg=_arg, old=_old, new=_new))

SUMMARY.update({
    "fs.atan2": "Element-wise arctangent of y/x using the signs of both (kernels and Python scope).\n\n"
                ">>> print(round(fs.atan2(1.0, 1.0), 4))\n0.7854\n",
    "fs.pow": "Element-wise `x ** y` (kernels and Python scope).\n\n>>> fs.pow(2.0, 3)\n8.0\n",
    "fs.min": "Element-wise minimum of two or more values; one vector: its smallest entry.\n\n"
              ">>> fs.min(3, 1, 2)\n1\n",
    "fs.max": "Element-wise maximum of two or more values; one vector: its largest entry.\n\n"
              ">>> fs.max(3, 1, 2)\n3\n",
    "fs.select": "Element-wise `a if cond else b`, evaluating both sides (Taichi's `ti.select`).\n\n"
                 ">>> fs.select(1 > 0, 1.0, 2.0)\n1.0\n",
    "fs.cast": "Convert a value (scalar, vector, matrix) to `dtype`, e.g. `fs.cast(x, fs.i32)`.\n\n"
               ">>> fs.cast(2.7, fs.i32)\n2\n",
    "fs.static": "Evaluate at compile time: unrolls `for i in fs.static(range(3))`, prunes "
                 "`if fs.static(flag)`.\n\n"
                 ">>> y = fs.field(fs.i32, shape=3)\n>>> @fs.kernel\n... def k():\n"
                 "...     for i in fs.static(range(3)):\n...         y[i] = i * i\n"
                 ">>> k(); y.to_numpy().tolist()\n[0, 1, 4]\n",
    "fs.static_print": "Print at compile time (once per compiled kernel), not at run time.\n\n"
                       ">>> fs.static_print('compiling')\ncompiling\n",
    "fs.random": "A uniform random number: float in [0, 1) or an int of the given dtype; seeded by "
                 "`fs.init(random_seed=...)`.\n\n>>> 0.0 <= fs.random() < 1.0\nTrue\n",
    "fs.bit_shl": "Shift left: `x << n` (Taichi's `ti.bit_shl`).\n\n>>> fs.bit_shl(1, 3)\n8\n",
    "fs.bit_sar": "Arithmetic shift right, keeping the sign (`ti.bit_sar`).\n\n>>> fs.bit_sar(-8, 1)\n-4\n",
    "fs.bit_shr": "Logical shift right, filling with zeros (`ti.bit_shr`).\n\n>>> fs.bit_shr(8, 2)\n2\n",
    "fs.raw_div": "Division with C semantics on kernel values: ints truncate toward zero "
                  "(`ti.raw_div`); two Python ints divide with `//`, as Taichi folds them.\n\n"
                  ">>> @fs.kernel\n... def k(a: fs.i32) -> fs.i32:\n...     return fs.raw_div(a, 2)\n"
                  ">>> k(-7), fs.raw_div(-7, 2)\n(-3, -4)\n",
    "fs.raw_mod": "Remainder with C semantics: the sign of the dividend (`ti.raw_mod`).\n\n"
                  ">>> fs.raw_mod(-7, 2)\n-1\n",
    "fs.is_active": "Whether the cell of sparse layout node `node` at `indices` is active.\n\n"
                    ">>> x = fs.field(fs.f32)\n>>> blk = fs.root.pointer(fs.i, 4)\n>>> _ = blk.place(x)\n"
                    ">>> x[2] = 1.0\n>>> fs.is_active(blk, [2]), fs.is_active(blk, [1])\n(1, 0)\n",
    "fs.activate": "Activate the cell of sparse node `node` at `indices` (its values read 0).\n\n"
                   ">>> x = fs.field(fs.f32)\n>>> blk = fs.root.pointer(fs.i, 4)\n>>> _ = blk.place(x)\n"
                   ">>> fs.activate(blk, [3]); fs.is_active(blk, [3])\n1\n",
    "fs.deactivate": "Deactivate the cell of sparse node `node` at `indices`; its values read 0 again.\n\n"
                     ">>> x = fs.field(fs.f32)\n>>> blk = fs.root.pointer(fs.i, 4)\n>>> _ = blk.place(x)\n"
                     ">>> x[1] = 5.0\n>>> fs.deactivate(blk, [1]); x[1]\n0.0\n",
    "fs.append": "Append `value` to the dynamic node `node` at `indices`; returns the old length.\n\n"
                 ">>> x = fs.field(fs.i32)\n>>> d = fs.root.dynamic(fs.i, 8)\n>>> _ = d.place(x)\n"
                 ">>> @fs.kernel\n... def k():\n...     fs.append(d, [], 5)\n...     fs.append(d, [], 6)\n"
                 ">>> k(); fs.length(d, [])\n2\n",
    "fs.length": "The number of elements appended to the dynamic node `node` at `indices`.\n\n"
                 ">>> x = fs.field(fs.i32)\n>>> d = fs.root.dynamic(fs.i, 8)\n>>> _ = d.place(x)\n"
                 ">>> fs.length(d, [])\n0\n",
})


EXAMPLE: dict[str, str] = {}

_MATH = {
    "clamp": ("Clamp x into [lo, hi], element-wise.", "fs.math.clamp(5.0, 0.0, 1.0)", "1.0"),
    "cross": ("Cross product of two 3-D (or 2-D: a scalar) vectors.",
              "fs.math.cross(fs.math.vec3(1, 0, 0), fs.math.vec3(0, 1, 0)).to_numpy().tolist()",
              "[0.0, 0.0, 1.0]"),
    "degrees": ("Radians to degrees.", "round(fs.math.degrees(np.pi), 6)", "180.0"),
    "radians": ("Degrees to radians.", "round(fs.math.radians(180.0), 6)", "3.141593"),
    "determinant": ("Determinant of a square matrix.",
                    "fs.math.determinant(fs.Matrix([[2.0, 0.0], [0.0, 3.0]]))", "6.0"),
    "distance": ("Euclidean distance between two vectors.",
                 "fs.math.distance(fs.math.vec2(0, 0), fs.math.vec2(3, 4))", "5.0"),
    "dot": ("Dot product of two vectors.", "fs.math.dot(fs.math.vec2(1, 2), fs.math.vec2(3, 4))", "11.0"),
    "exp2": ("2 to the power x.", "fs.math.exp2(3.0)", "8.0"),
    "log2": ("Base-2 logarithm.", "fs.math.log2(8.0)", "3.0"),
    "fract": ("Fractional part x - floor(x).", "fs.math.fract(2.25)", "0.25"),
    "inverse": ("Inverse of a square matrix.",
                "fs.math.inverse(fs.Matrix([[2.0, 0.0], [0.0, 4.0]])).to_numpy().tolist()",
                "[[0.5, 0.0], [0.0, 0.25]]"),
    "isinf": ("Whether x is infinite (element-wise).", "bool(fs.math.isinf(float('inf')))", "True"),
    "isnan": ("Whether x is NaN (element-wise).", "bool(fs.math.isnan(float('nan')))", "True"),
    "length": ("Euclidean length of a vector.", "fs.math.length(fs.math.vec2(3, 4))", "5.0"),
    "mix": ("Linear interpolation x * (1 - a) + y * a (GLSL `mix`).", "fs.math.mix(0.0, 10.0, 0.25)", "2.5"),
    "mod": ("GLSL modulo x - y * floor(x / y): the sign of y.", "fs.math.mod(-1.0, 3.0)", "2.0"),
    "normalize": ("The vector scaled to length 1.",
                  "fs.math.normalize(fs.math.vec2(3, 4)).to_numpy().astype(float).round(4).tolist()", "[0.6, 0.8]"),
    "reflect": ("Reflect incident vector x about normal n (GLSL `reflect`).",
                "fs.math.reflect(fs.math.vec2(1, -1), fs.math.vec2(0, 1)).to_numpy().tolist()",
                "[1.0, 1.0]"),
    "refract": ("Refract incident x through normal n with ratio eta (GLSL `refract`).",
                "fs.math.refract(fs.math.vec2(0, -1), fs.math.vec2(0, 1), 1.0).to_numpy().tolist()",
                "[0.0, -1.0]"),
    "sign": ("-1, 0 or 1 by the sign of x (element-wise).", "fs.math.sign(-2.5)", "-1.0"),
    "smoothstep": ("Hermite step from 0 at edge0 to 1 at edge1 (GLSL `smoothstep`).",
                   "fs.math.smoothstep(0.0, 1.0, 0.5)", "0.5"),
    "step": ("0 where x < edge, else 1 (GLSL `step`).", "fs.math.step(0.5, 0.7)", "1.0"),
    "eye": ("The n x n identity matrix.", "fs.math.eye(2).to_numpy().tolist()", "[[1.0, 0.0], [0.0, 1.0]]"),
    "rotation2d": ("The 2x2 rotation matrix of angle `ang` (radians).",
                   "np.round(fs.math.rotation2d(np.pi / 2).to_numpy(), 6).tolist()",
                   "[[0.0, -1.0], [1.0, 0.0]]"),
    "rotation3d": ("The 4x4 rotation rot_yaw_pitch_roll(ang_z, ang_x, ang_y), as Taichi's.",
                   "np.round(fs.math.rotation3d(0.0, 0.0, 0.0).to_numpy(), 6).tolist()[0]",
                   "[1.0, 0.0, 0.0, 0.0]"),
    "rot_yaw_pitch_roll": ("The 4x4 rotation (Ry(yaw) Rx(pitch) Rz(roll))^T, as Taichi's.",
                           ("np.round(fs.math.rot_yaw_pitch_roll(np.pi / 2, 0.0, 0.0).to_numpy()"
                            "[:3, :3], 6).tolist()"),
                           "[[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]"),
    "rot_by_axis": ("The 4x4 rotation about `axis` by `ang`, transposed as Taichi's (Rodrigues).",
                    ("np.round(fs.math.rot_by_axis(fs.math.vec3(0, 0, 1), np.pi / 2).to_numpy()"
                     "[:2, :2], 6).tolist()"),
                    "[[0.0, 1.0], [-1.0, 0.0]]"),
    "vdir": ("The unit 2-vector (cos ang, sin ang).",
             "np.round(fs.math.vdir(np.pi / 2).to_numpy(), 6).tolist()", "[0.0, 1.0]"),
    "popcnt": ("The number of set bits of an integer, in its type's width (a Python int: i32).",
               "fs.math.popcnt(-1)", "32"),
    "clz": ("The number of leading zero bits of an integer, in its type's width (the width for 0).",
            "fs.math.clz(1)", "31"),
    "translate": ("The 4x4 homogeneous translation by (dx, dy, dz).",
                  "fs.math.translate(1.0, 2.0, 3.0).to_numpy()[:3, 3].tolist()", "[1.0, 2.0, 3.0]"),
    "scale": ("The 4x4 homogeneous scaling by (sx, sy, sz).",
              "np.diag(fs.math.scale(2.0, 3.0, 4.0).to_numpy()).tolist()", "[2.0, 3.0, 4.0, 1.0]"),
    "cmul": ("Complex product of 2-D vectors (x + iy).",
             "fs.math.cmul(fs.math.vec2(0, 1), fs.math.vec2(0, 1)).to_numpy().tolist()", "[-1.0, 0.0]"),
    "cconj": ("Complex conjugate of a 2-D vector.",
              "fs.math.cconj(fs.math.vec2(1, 2)).to_numpy().tolist()", "[1.0, -2.0]"),
    "cdiv": ("Complex quotient of 2-D vectors.",
             "fs.math.cdiv(fs.math.vec2(2, 0), fs.math.vec2(0, 1)).to_numpy().tolist()", "[0.0, -2.0]"),
    "cinv": ("Complex reciprocal of a 2-D vector.",
             "fs.math.cinv(fs.math.vec2(0, 2)).to_numpy().tolist()", "[0.0, -0.5]"),
    "cexp": ("Complex exponential of a 2-D vector.",
             "fs.math.cexp(fs.math.vec2(0, 0)).to_numpy().tolist()", "[1.0, 0.0]"),
    "clog": ("Complex natural logarithm of a 2-D vector.",
             "fs.math.clog(fs.math.vec2(1, 0)).to_numpy().tolist()", "[0.0, 0.0]"),
    "csqrt": ("Complex square root of a 2-D vector.",
              "fs.math.csqrt(fs.math.vec2(-4, 0)).to_numpy().tolist()", "[0.0, 2.0]"),
    "cpow": ("Complex power z ** n of a 2-D vector and a real exponent.",
             "np.round(fs.math.cpow(fs.math.vec2(0, 1), 2).to_numpy(), 6).tolist()", "[-1.0, 0.0]"),
}
for _n, (_d, _call, _res) in _MATH.items():
    SUMMARY[f"fs.math.{_n}"] = f"{_d} Kernels and Python scope (`ti.math.{_n}`).\n\n>>> {_call}\n{_res}\n"

_X = ">>> x = fs.field(fs.f32, shape=3, needs_grad=True)\n>>> loss = fs.field(fs.f32, shape=(), needs_grad=True)\n"
_SQ = (">>> @fs.kernel\n... def compute():\n...     for i in x:\n...         loss[None] += x[i] ** 2\n"
       ">>> x.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))\n")
EXAMPLE.update({
    "fs.AccessRuleError": ">>> issubclass(fs.AccessRuleError, fs.FieldsimError)\nTrue\n",
    "fs.FieldsimError": ">>> try:\n...     fs.field(fs.f32, shape=-1)\n... except (fs.FieldsimError, ValueError):\n"
                        "...     print('rejected')\nrejected\n",
    "fs.FieldsimAssertionError": ">>> issubclass(fs.FieldsimAssertionError, AssertionError)\nTrue\n",
    "fs.Field": ">>> x = fs.field(fs.f32, shape=2)\n>>> isinstance(x, fs.Field), x.shape\n(True, (2,))\n",
    "fs.ScalarField": ">>> x = fs.field(fs.f32, shape=2)\n>>> v = fs.Vector.field(3, fs.f32, shape=2)\n"
                      ">>> isinstance(x, fs.ScalarField), isinstance(v, fs.ScalarField)\n(True, False)\n",
    "fs.MatrixField": ">>> x = fs.field(fs.f32, shape=2)\n>>> v = fs.Vector.field(3, fs.f32, shape=2)\n"
                      ">>> isinstance(x, fs.MatrixField), isinstance(v, fs.MatrixField)\n(False, True)\n",
    "fs.Func": ">>> @fs.func\n... def f(v):\n...     return v\n>>> isinstance(f, fs.Func)\nTrue\n",
    "fs.GUI": ">>> gui = fs.GUI('demo', res=(8, 8), show_gui=False)\n>>> gui.res\n(8, 8)\n",
    "fs.Matrix": ">>> m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])\n>>> (m @ m).to_numpy().tolist()\n"
                 "[[7.0, 10.0], [15.0, 22.0]]\n",
    "fs.Vector": ">>> v = fs.Vector([3.0, 4.0])\n>>> print(v.norm(), (v * 2).to_numpy().tolist())\n5.0 [6.0, 8.0]\n",
    "fs.Ndarray": ">>> a = fs.ndarray(fs.i32, shape=(2, 2))\n>>> isinstance(a, fs.Ndarray), a.shape\n(True, (2, 2))\n",
    "fs.SNode": ">>> x = fs.field(fs.f32)\n>>> _ = fs.root.dense(fs.ij, (2, 3)).place(x)\n>>> x.shape\n(2, 3)\n",
    "fs.Struct": ">>> s = fs.Struct(a=1, b=2.0)\n>>> s.a, s.b\n(1, 2.0)\n",
    "fs.StructField": ">>> p = fs.Struct.field({'m': fs.f32, 'v': fs.f32}, shape=2)\n>>> p.m[0] = 2.0; p[0].m\n2.0\n",
    "fs.bit_cast": ">>> fs.bit_cast(1.0, fs.i32)\n1065353216\n",
    "fs.data_oriented": ">>> @fs.data_oriented\n... class Sim:\n...     def __init__(self):\n"
                        "...         self.x = fs.field(fs.f32, shape=2)\n...     @fs.kernel\n"
                        "...     def step(self):\n...         for i in self.x:\n...             self.x[i] += 1\n"
                        ">>> s = Sim(); s.step(); s.x.to_numpy().tolist()\n[1.0, 1.0]\n",
    "fs.dataclass": ">>> @fs.dataclass\n... class P:\n...     m: fs.f32\n...     v: fs.f32\n"
                    ">>> ps = P.field(shape=2)\n>>> ps.m.shape\n(2,)\n",
    "fs.extension": ">>> fs.extension.adstack is not None\nTrue\n",
    "fs.from_dlpack": ">>> a = fs.from_dlpack(np.arange(3.0, dtype=np.float32))\n>>> a.to_numpy().tolist()\n"
                      "[0.0, 1.0, 2.0]\n",
    "fs.grouped": ">>> x = fs.field(fs.i32, shape=(2, 2))\n>>> @fs.kernel\n... def k():\n"
                  "...     for I in fs.grouped(x):\n...         x[I] = I[0] * 2 + I[1]\n"
                  ">>> k(); x.to_numpy().tolist()\n[[0, 1], [2, 3]]\n",
    "fs.ndrange": ">>> list(fs.ndrange(2, (1, 3)))\n[(0, 1), (0, 2), (1, 1), (1, 2)]\n",
    "fs.hex_to_rgb": ">>> fs.hex_to_rgb(0xFF0000)\n(1.0, 0.0, 0.0)\n",
    "fs.rgb_to_hex": ">>> hex(fs.rgb_to_hex((1.0, 0.0, 0.0)))\n'0xff0000'\n",
    "fs.loop_config": ">>> y = fs.field(fs.i32, shape=4)\n>>> @fs.kernel\n... def k():\n"
                      "...     fs.loop_config(serialize=True)\n...     for i in y:\n...         y[i] = i\n"
                      ">>> k(); y.to_numpy().tolist()\n[0, 1, 2, 3]\n",
    "fs.polar_decompose": ">>> R, S = fs.polar_decompose(fs.Matrix([[2.0, 0.0], [0.0, 3.0]]), fs.f32)\n"
                          ">>> np.round(S.to_numpy(), 6).tolist()\n[[2.0, 0.0], [0.0, 3.0]]\n",
    "fs.svd": ">>> U, sig, V = fs.svd(fs.Matrix([[3.0, 0.0], [0.0, 2.0]]), fs.f32)\n"
              ">>> sorted(np.round(np.diag(sig.to_numpy()), 6).tolist())\n[2.0, 3.0]\n",
    "fs.solve": ">>> fs.solve(fs.Matrix([[0.0, 1.0], [2.0, 3.0]]), fs.Vector([1.0, 2.0])).to_numpy().tolist()\n"
                "[-0.5, 1.0]\n",
    "fs.Layout": ">>> x = fs.Vector.field(3, fs.f32, shape=4, layout=fs.Layout.SOA)\n>>> x.shape\n(4,)\n",
    "fs.DeviceCapability": ">>> fs.DeviceCapability.spirv_has_int64\n'spirv_has_int64'\n",
    "fs.randn": ">>> isinstance(fs.randn(), float)\nTrue\n",
    "fs.real_func": ">>> @fs.real_func\n... def twice(v: fs.f32) -> fs.f32:\n...     return 2 * v\n"
                    ">>> r = fs.field(fs.f32, shape=())\n>>> @fs.kernel\n... def k():\n...     r[None] = twice(1.5)\n"
                    ">>> k(); r[None]\n3.0\n",
    "fs.rescale_index": ">>> x = fs.field(fs.f32)\n>>> blk = fs.root.pointer(fs.i, 2)\n"
                        ">>> _ = blk.dense(fs.i, 4).place(x)\n>>> fs.rescale_index(x, blk, [5]).to_numpy().tolist()\n[1]\n",
    "fs.static_assert": ">>> fs.static_assert(1 + 1 == 2)\n",
    "fs.stop_grad": _X + ">>> @fs.kernel\n... def k():\n...     for i in x:\n...         fs.stop_grad(x)\n"
                    "...         loss[None] += x[i]\n>>> with fs.Tape(loss):\n...     k()\n"
                    ">>> x.grad.to_numpy().tolist()\n[0.0, 0.0, 0.0]\n",
    "fs.types.MatrixType": ">>> fs.types.matrix(2, 3, fs.f32).m\n3\n",
    "fs.types.by_name": ">>> fs.types.by_name('f32')\nf32\n",
    "fs.types.from_numpy": ">>> fs.types.from_numpy(np.dtype('float64'))\nf64\n",
    "fs.types.matrix": ">>> M = fs.types.matrix(2, 2, fs.f32)\n>>> fs.field(M, shape=3).shape\n(3,)\n",
    "fs.types.vector": ">>> V = fs.types.vector(3, fs.f32)\n>>> fs.field(V, shape=4).n\n3\n",
    "fs.types.promote": ">>> fs.types.promote(fs.i32, fs.f32)\nf32\n",
    "fs.types.promote_all": ">>> fs.types.promote_all([fs.i32, fs.f32, fs.f64])\nf64\n",
})

_AD = _X + _SQ
EXAMPLE.update({
    "fs.DataType": ">>> fs.f32.np, fs.i64.is_int\n(dtype('float32'), True)\n",
    "fs.Axis": ">>> x = fs.field(fs.f32)\n>>> _ = fs.root.dense(fs.ij, (2, 2)).place(x)\n>>> x.shape\n(2, 2)\n",
    "fs.ad.CheckpointInfo": ">>> s = fs.field(fs.f32, shape=(), needs_grad=True)\n"
                            ">>> info = fs.ad.checkpoint(lambda t: None, 4, 2, state=[s])\n"
                            ">>> isinstance(info, fs.ad.CheckpointInfo)\nTrue\n",
    "fs.ad.checkpoint": ">>> s = fs.field(fs.f32, shape=(), needs_grad=True)\n"
                        ">>> @fs.kernel\n... def step():\n...     s[None] = s[None] * 2.0\n"
                        ">>> s[None] = 1.0\n>>> info = fs.ad.checkpoint(lambda t: step(), 6, 3, state=[s])\n"
                        ">>> s[None]\n64.0\n",
    "fs.ad.GradcheckError": ">>> issubclass(fs.ad.GradcheckError, AssertionError)\nTrue\n",
    "fs.ad.GradcheckReport": _AD + ">>> rep = fs.ad.gradcheck(compute, [x], loss=loss)\n"
                             ">>> isinstance(rep, fs.ad.GradcheckReport)\nTrue\n",
    "fs.ad.gradcheck": _AD + ">>> rep = fs.ad.gradcheck(compute, [x], loss=loss)\n>>> rep.culprit is None\nTrue\n",
    "fs.ad.clear_all_gradients": _X + ">>> x.grad[0] = 1.0\n>>> fs.ad.clear_all_gradients(); x.grad[0]\n0.0\n",
    "fs.ad.clear_all_duals": ">>> x = fs.field(fs.f32, shape=2, needs_dual=True)\n>>> x.dual[0] = 1.0\n"
                             ">>> fs.ad.clear_all_duals(); x.dual[0]\n0.0\n",
    "fs.ad.FwdMode": _AD + ">>> with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0, 0.0, 0.0]):\n...     compute()\n"
                     ">>> loss.dual[None]\n2.0\n",
    "fs.ad.grad_replaced": _AD + ">>> @fs.ad.grad_replaced\n... def forward():\n...     compute()\n"
                           ">>> @fs.ad.grad_for(forward)\n... def backward():\n...     compute.grad()\n"
                           ">>> with fs.Tape(loss):\n...     forward()\n>>> x.grad.to_numpy().tolist()\n"
                           "[2.0, 4.0, 6.0]\n",
    "fs.ad.no_grad": _AD + ">>> @fs.ad.no_grad\n... def log_only():\n...     pass\n"
                     ">>> with fs.Tape(loss):\n...     compute(); log_only()\n>>> x.grad[2]\n6.0\n",
    "fs.ad.jacobian": _AD + ">>> fs.ad.jacobian(compute, [x], [loss]).tolist()\n[[2.0, 4.0, 6.0]]\n",
    "fs.ad.jacobian_fd": _AD + ">>> np.round(fs.ad.jacobian_fd(compute, [x], [loss]), 1).tolist()\n"
                         "[[2.0, 4.0, 6.0]]\n",
    "fs.ad.plot_jacobian": ">>> import tempfile, os\n>>> p = os.path.join(tempfile.mkdtemp(), 'j.png')\n"
                           ">>> fs.ad.plot_jacobian(np.eye(2), p) == p\nTrue\n",
    "fs.ad.write_tape_dot": _AD + ">>> with fs.Tape(loss) as tape:\n...     compute()\n"
                            ">>> fs.ad.write_tape_dot(tape).startswith('digraph')\nTrue\n",
})
EXAMPLE["fs.ad.func_grad"] = (
    _X + ">>> @fs.func\n... def cube(v):\n...     return v * v * v\n"
    ">>> @fs.ad.func_grad(cube)\n... def cube_grad(v, adj_ret):\n...     return adj_ret * 3.0 * v * v\n"
    ">>> @fs.kernel\n... def compute():\n...     for i in x:\n...         loss[None] += cube(x[i])\n"
    ">>> x.fill(2.0)\n>>> with fs.Tape(loss):\n...     compute()\n>>> x.grad.to_numpy().tolist()\n"
    "[12.0, 12.0, 12.0]\n")
EXAMPLE["fs.ad.jvp_for"] = (
    _AD + ">>> @fs.ad.grad_replaced\n... def forward():\n...     compute()\n"
    ">>> @fs.ad.jvp_for(forward)\n... def forward_jvp():\n...     compute()\n"
    ">>> with fs.ad.FwdMode(loss=loss, param=x, seed=[0.0, 0.0, 1.0]):\n...     forward()\n"
    ">>> loss.dual[None]\n6.0\n")
EXAMPLE["fs.ad.grad_for"] = EXAMPLE["fs.ad.grad_replaced"]
EXAMPLE["fs.ad.func_replay"] = (
    ">>> count = fs.field(fs.i32, shape=())\n>>> slot = fs.field(fs.i32, shape=4)\n"
    ">>> @fs.func\n... def claim(i):\n...     k = fs.atomic_add(count[None], 1)\n"
    "...     slot[i] = k\n...     return k\n"
    ">>> @fs.ad.func_replay(claim)\n... def claim_again(i):\n...     return slot[i]\n"
    ">>> @fs.kernel\n... def k():\n...     for i in slot:\n...         claim(i)\n"
    ">>> k(); count[None]\n4\n")


SUMMARY.update({
    "fs.Matrix": "A small matrix value (Taichi's `ti.Matrix`): in kernels it lives in registers; in Python "
                 "scope it behaves like a numpy array.\n",
    "fs.Vector": "A small vector value (Taichi's `ti.Vector`); `fs.Vector.field(n, dtype, shape)` makes a "
                 "vector field.\n",
    "fs.Axis": "Layout axes (`fs.i`, `fs.ij`, `fs.ijk`, ...; `fs.axes(...)`) for `fs.root.dense(...)`.\n",
    "fs.ad.FwdMode": "Forward-mode AD (Taichi's `ti.ad.FwdMode`): kernels run in it compute `loss.dual`, "
                     "the derivative along the direction `seed` of `param`.\n",
    "fs.ad.clear_all_duals": "Zero the dual (`x.dual`) of every field that has one.\n",
    "fs.ad.func_grad": "Register the decorated `@fs.func` as the hand-written adjoint of `primal` "
                       "(used by reverse mode instead of differentiating `primal`).\n",
    "fs.ad.jacobian": "The Jacobian d outputs / d inputs of the kernels `fn()` runs, by AD (forward or "
                      "reverse mode, whichever needs fewer passes); one row per output element.\n",
    "fs.ad.jacobian_fd": "The Jacobian of `fn()` by float64 central finite differences (for checking "
                         "`fs.ad.jacobian`).\n",
    "fs.ad.write_tape_dot": "A Graphviz DOT graph of a Tape's launches and the fields they read and "
                            "write (with access-rule violations in red); written to `path` if given.\n",
    "fs.types.by_name": "The dtype named `name` ('f32', 'int64', ...).\n",
    "fs.types.from_numpy": "The dtype matching a numpy dtype.\n",
    "fs.types.matrix": "An n x m matrix type with element dtype `dtype`, for fields and annotations.\n",
    "fs.types.vector": "An n-vector type with element dtype `dtype`, for fields and annotations.\n",
    "fs.types.promote_all": "The dtype binary operations on all of `dtypes` produce (Taichi's rules).\n",
})


def _apply(objs: dict) -> None:
    """Set the docstrings above on the objects `objs` maps public names to."""
    for key, doc in SUMMARY.items():
        obj = objs.get(key)
        if obj is None:
            continue
        if not getattr(obj, "__doc__", None):
            obj.__doc__ = doc
    for key, ex in EXAMPLE.items():
        obj = objs.get(key)
        if obj is None:
            continue
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        if doc and ">>>" not in doc:
            obj.__doc__ = inspect.cleandoc(doc) + "\n\n" + ex
