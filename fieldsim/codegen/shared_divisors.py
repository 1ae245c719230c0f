"""Float divisions that share a divisor: `shared_divisors(task)`, for the fast-math lowering
of reverse-AD kernels (a kernel the user wrote divides each, as Taichi 1.7.4's x64 backend).

Takes a task's IR. Returns, for every float `div` whose divisor is divided by at least twice
in the same statement list (a division of a value by itself does not count: it stays exact), the id of the first such `div` in that list (in program order):
the lowering computes the reciprocal `1 / d` there, once, and every division of the group
becomes a multiplication by it. Statements of one list are lowered in program order (nested
`if`/loop bodies are lists of their own, so a group never spans a branch), hence the first
division of a group is lowered before the others wherever the list is lowered, and its
reciprocal dominates them. A divisor is one IR statement: `a / d[i]` and `b / d[i]` load
d[i] twice and stay two divisions (a local `di = d[i]` shares it).

Why: reverse AD writes quotient and square-root rules as separate divisions by one value
(`d(a/b) = da/b - a*db/b/b`, `d sqrt(q) = 0.5*dq/sqrt(q)`): gravity's adjoint divided three
times per pair by the same distance. A vector division has a throughput of 5-16 cycles on x86,
a multiplication 0.5-1. LLVM shares the reciprocal itself only under `arcp`, which fieldsim
does not give it (codegen.llvm.FAST_MATH_FLAGS). A group whose divisor is an f32 square root
takes its reciprocal from the refined estimate instead (`llvm_arith.fast_rsqrt`).
What it changes: x * (1/d) may differ from x / d by an ulp or so; a subnormal d, whose
reciprocal overflows, can give +-inf (LLVM's `arcp` makes the same rewrite; Taichi 1.7.4's CPU
backend, measured, divides such runtime divisors exactly). Exact mode (`fast_math=False`)
keeps every division.

`constant_reciprocal(d)`: a division by a float constant C multiplies by fl(1/C) under
fast-math, as Taichi's CPU fast-math does (LLVM folds `x / C` so when the reciprocal is a finite
normal number): `i / 800.0` then gives Taichi's bits, which decide e.g. `int(i / 800.0 * 20)`
(Taichi's poisson_disk_sampling example).
"""
from __future__ import annotations

import numpy as np

from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import types as T


def constant_reciprocal(d: Stmt) -> float | None:
    """fl(1/C) in C's type for a float CONST divisor `d` whose reciprocal is finite and normal
    (LLVM's condition for the fold), else None."""
    if d.op != Op.CONST or d.dtype is None or not d.dtype.is_float:
        return None
    npt = d.dtype.np
    with np.errstate(all="ignore"):
        r = npt.type(1) / npt.type(d.attr)
    if not np.isfinite(r) or abs(r) < np.finfo(npt).tiny:
        return None
    return float(r)


def divides_by_f32_root(s: Stmt) -> bool:
    """`s` is an f32 division by a square root: under fast-math it multiplies by a refined
    1/sqrt estimate (codegen.llvm_arith.fast_rsqrt), not a square root and a division."""
    return s.op == Op.DIV and s.args[1].op == Op.SQRT and s.args[1].dtype is T.f32


def shared_divisors(task: Stmt, roots_only: bool = False) -> dict[int, int]:
    """id(div) -> id(the first div of its group), for groups of two or more float divisions
    by one divisor in one statement list. `roots_only`: only divisions by an f32 square root
    (which take one refined 1/sqrt estimate, shared or not: sharing changes no result)."""
    groups: dict[int, int] = {}
    _scan(task.body, groups, roots_only)
    return groups


def _scan(block: list[Stmt], groups: dict[int, int], roots_only: bool):
    by_divisor: dict[int, list[Stmt]] = {}
    for s in block:
        # `x / x` stays a division: exactly 1 as in IEEE (and Taichi, whose fast-math folds
        # it), where x * (1/x) is 1 - ulp for some x (a plasticity ratio sig / sig then drifts)
        if s.op == Op.DIV and s.dtype is not None and s.dtype.is_float and \
                not same_value(*s.args) and (not roots_only or divides_by_f32_root(s)):
            by_divisor.setdefault(id(s.args[1]), []).append(s)
        for inner in s.blocks:
            _scan(inner, groups, roots_only)
    for divs in by_divisor.values():
        if len(divs) > 1:
            for s in divs:
                groups[id(s)] = id(divs[0])


def same_value(a: Stmt, b: Stmt) -> bool:
    """`a` and `b` are one value: one statement, or two reads of one local variable (fast-math
    lowers `a / b` of such a pair as a plain division; a store between the reads only costs
    it its fast-math flags, never its correctness)."""
    return a is b or (a.op == Op.LOCAL_LOAD and b.op == Op.LOCAL_LOAD and a.args[0] is b.args[0])
