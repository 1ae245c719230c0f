"""`run_pass(name, fn, kernel)`: the one way a pipeline runs a kernel-to-kernel pass.

Every pass of the forward, adjoint, tangent and validation pipelines goes through here, so each
is timed (`PASS_SECONDS[name]`), verified when verification is on (`FIELDSIM_VERIFY=1`, which
the test suite sets, or `verify=True` from `fs.init(debug=True)`), and printed when
`FIELDSIM_PRINT_IR` is `1` or names the pass (`FIELDSIM_PRINT_IR=offload,reverse`).
"""
from __future__ import annotations

import os
import sys
import time
from collections import defaultdict

from fieldsim.ir.ir import Kernel
from fieldsim.ir.printer import print_kernel
from fieldsim.ir.verify import verify as verify_kernel

PASS_SECONDS: defaultdict[str, float] = defaultdict(float)


def verification_on() -> bool:
    return os.environ.get("FIELDSIM_VERIFY", "") not in ("", "0")


def _print_wanted(name: str) -> bool:
    want = os.environ.get("FIELDSIM_PRINT_IR", "")
    return want == "1" or name in want.split(",")


def run_pass(name: str, fn, kernel, *args, verify: bool = False, show: bool = False) -> Kernel:
    """`fn(kernel, *args)`, timed, then verified and printed as configured (`show`: print it
    regardless, for `fs.init(print_ir=True)`)."""
    t0 = time.perf_counter()
    out = fn(kernel, *args)
    PASS_SECONDS[name] += time.perf_counter() - t0
    if verify or verification_on():
        verify_kernel(out)
    if show or _print_wanted(name):
        print(f"# after {name}\n{print_kernel(out)}", file=sys.stdout, flush=True)
    return out
