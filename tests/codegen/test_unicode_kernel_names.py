"""A kernel whose Python name has letters beyond ASCII (`_q2σ`, `_Hσv` in Mirebeau's agdt
wave solver from GitHub) compiles: the JIT takes ASCII symbols only, and it died with a
UnicodeEncodeError from llvmlite. Two such names differing in that letter stay distinct."""
import numpy as np

import fieldsim as fs
from fieldsim.codegen.cpu import safe_symbol


def test_kernels_named_beyond_ascii_run():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f64, 4)

    @fs.kernel
    def _q2σ(s: fs.f64):
        for i in x:
            x[i] = s * i

    @fs.kernel
    def _q2τ(s: fs.f64):
        for i in x:
            x[i] += s

    _q2σ(2.0)
    _q2τ(0.5)
    np.testing.assert_array_equal(x.to_numpy(), [0.5, 2.5, 4.5, 6.5])


def test_symbols_are_ascii_and_keep_distinct_letters_apart():
    a, b = safe_symbol("_q2σ"), safe_symbol("_q2τ")
    assert a.isascii() and b.isascii() and a != b
    assert safe_symbol("Verlet_v") == "Verlet_v"
