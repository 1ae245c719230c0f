"""Stable text form of the IR, for golden tests, debugging (`FIELDSIM_PRINT_IR=1`) and cache keys.

Values are numbered `%0, %1, ...` in order of appearance, so the text of a kernel depends only
on its structure. Fields print as `name` (grad fields as `name.grad`), with their storage
shape and dtype listed once in a header when `header=True`. A kernel's functions follow it,
numbered on their own.
"""
from __future__ import annotations

from fieldsim.ir.ir import GLOBAL_ACCESS, NO_VALUE, OPDEFS, Kernel, Op, Stmt, array_parts


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}

    def define(self, s: Stmt) -> str:
        name = f"%{len(self.names)}"
        self.names[id(s)] = name
        return name

    def ref(self, s) -> str:
        if not isinstance(s, Stmt):
            return repr(s)
        return self.names.get(id(s), f"%?{s.op.name.lower()}")


def field_name(f) -> str:
    return getattr(f, "ir_name", None) or getattr(f, "name", None) or f"field{id(f)}"


def _attr_text(s: Stmt) -> str:
    show = OPDEFS[s.op].attr_text
    return show(s.attr) if show is not None else ""


def _line(s: Stmt, n: _Namer) -> str:
    opname = OPDEFS[s.op].text
    if s.op in GLOBAL_ACCESS:
        idx = ", ".join(n.ref(a) for a in s.indices)
        fname = field_name(s.field)
        if s.op == Op.ATOMIC:
            opname = f"atomic_{s.attr[1]}"
        text = f"{opname}.{s.dtype} " if s.dtype is not None else f"{opname} "
        text += f"{fname}[{idx}]"
        if s.op != Op.LOAD:
            text += f", {n.ref(s.value)}"
    elif s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE):
        text = _array_text(s, n)
    else:
        args = ", ".join(n.ref(a) for a in s.args)
        text = opname + (f".{s.dtype}" if s.dtype is not None else "")
        text += _attr_text(s) + (f" {args}" if args else "")
    if s.op not in NO_VALUE:
        text = f"{n.define(s)} = {text}"
    return text


def _array_text(s: Stmt, n: _Namer) -> str:
    """`array_load.i32 [%0, %1, %2][%7]`, `array_store [%0, %1, %2][%7], %8`."""
    slots, index = array_parts(s)
    text = OPDEFS[s.op].text + (f".{s.dtype}" if s.dtype is not None else "")
    text += f" [{', '.join(n.ref(a) for a in slots)}][{n.ref(index)}]"
    return text + (f", {n.ref(s.value)}" if s.op == Op.ARRAY_STORE else "")


def print_block(block: list[Stmt], n: _Namer | None = None, indent: int = 1, locs=False) -> str:
    n = n or _Namer()
    out = []
    pad = "  " * indent
    for s in block:
        line = pad + _line(s, n)
        if locs and s.loc is not None:
            line += f"  # line {s.loc.line}"
        if s.blocks:
            line += " {"
            out.append(line)
            for bi, b in enumerate(s.blocks):
                if bi > 0:
                    out.append(pad + "} else {")
                body = print_block(b, n, indent + 1, locs)
                if body:
                    out.append(body)
            out.append(pad + "}")
        else:
            out.append(line)
    return "\n".join(out)


def print_kernel(k: Kernel, locs: bool = False) -> str:
    """The kernel, then each of its functions (`func @name(dtypes) -> dtype:`)."""
    params = ", ".join(f"{p.name}: {'template' if p.template else p.dtype}" for p in k.params)
    ret = f" -> {k.ret}" if k.ret is not None else ""
    text = f"kernel {k.name}({params}){ret}:\n" + print_block(k.body, locs=locs)
    for f in k.funcs:
        fret = "" if not f.rets else f" -> {f.rets[0]}" if len(f.rets) == 1 else \
            f" -> ({', '.join(str(d) for d in f.rets)})"
        text += (f"\nfunc @{f.name}({', '.join(str(d) for d in f.params)}){fret}:\n"
                 + print_block(f.body, locs=locs))
    return text
