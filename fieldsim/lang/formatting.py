"""Kernel-scope text: `print(...)`, f-strings, `str.format` and `%` formatting of kernel values,
for `print` and for `assert` messages.

Takes frontend values (constants, `Stmt`, `MatVal`, strings, lists) and format specs; produces
a `FmtStr`, a list of literal text and runtime values each with a printf conversion. Guarantees
(Taichi's format): ints print as `%d`, f32 as `%f`, f64 as `%.12f`, vectors and matrices as `[a, b]` /
`[[a, b], [c, d]]` with the spec applied to each entry, `print(a, b)` joins with `sep=" "` and
ends with `end="\\n"`; a spec whose conversion does not fit the value's type (`{:.2d}` of an
f32) raises `FieldsimTypeError` ("'.2d' doesn't match 'f32'."). Runtime values are widened to
i64/u64/f64 so the backend passes them to printf unchanged; `printf_format` and `py_format`
render the same parts for the backend's printf and for Python-side assert messages.
"""
from __future__ import annotations

import ast
import numbers
import re
import string

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal

_SPEC = re.compile(r"^([-+ #0]*)(\d*)(\.\d*)?([hlLqjzt]*)([diouxXceEfFgGaAs]?)$")
_PERCENT = re.compile(r"%([-+ #0]*)(\d*)(\.\d*)?([hlLqjzt]*)([diouxXcEeFfGgAas%])")
INT_CONV, FLOAT_CONV = set("diouxXc"), set("eEfFgGaA")
MAX_ASSERT_ARGS = 16  # an assert message's runtime values travel in the launch's error words


class UnsupportedSpec(FieldsimTypeError):
    """A format spec that is not printf-like (alignment, grouping, ...)."""


class FmtStr:
    """Literal text (str) and runtime values ((flags_width_precision, conversion, Stmt))."""

    def __init__(self, parts=()):
        self.parts = list(parts)

    def add(self, other):
        self.parts.extend(other.parts if isinstance(other, FmtStr) else [other])
        return self

    @property
    def values(self):
        return [p[2] for p in self.parts if not isinstance(p, str)]


def value_text(fe, v, spec: str = "", py_constants=False) -> FmtStr:
    """How Taichi prints one value (optionally with a format spec). In f-strings and
    `str.format` (`py_constants`) a Python constant without a spec prints as Python prints it."""
    if isinstance(v, FmtStr):
        return v
    if py_constants and not spec and not isinstance(v, (Stmt, MatVal, list, tuple)) and not _is_struct(v):
        return FmtStr([str(v)])
    if isinstance(v, str):
        return FmtStr([format(v, spec) if spec else v])
    if isinstance(v, (MatVal, list, tuple)):
        return _bracketed(fe, _items(v), spec)
    if _is_struct(v):
        return _struct_text(fe, v, spec)
    if isinstance(v, Stmt) or (isinstance(v, numbers.Number) and not isinstance(v, bool)):
        return _scalar_text(fe, v, spec)
    from fieldsim.lang.field import Field
    if isinstance(v, Field):
        raise FieldsimTypeError(f"cannot print field {v.ir_name!r} in a kernel; print an element "
                                "(x[i]) or print the field in Python scope")
    return FmtStr([str(v)])  # bools, None and other compile-time values print as Python's


def _is_struct(v) -> bool:
    from fieldsim.lang.struct import StructValue
    return isinstance(v, StructValue)


def _struct_text(fe, v, spec: str) -> FmtStr:
    """A struct as Python scope prints one: `{'a': 1, 'v': [x, y]}`, member values at run time
    (Taichi 1.7.4 refuses to print a struct in a kernel)."""
    out = FmtStr(["{"])
    for k, (name, e) in enumerate(v.load(fe).members.items()):
        out.add(", " if k else "").add(f"{name!r}: ").add(value_text(fe, e, spec))
    return out.add("}")


def _items(v):
    """What a bracketed value lists: a matrix's rows (as vectors), a vector's entries, a
    list's elements."""
    if not isinstance(v, MatVal):
        return v
    if v.ndim == 2:
        return (MatVal.vector([v.at(r, c) for c in range(v.m)]) for r in range(v.n))
    return v.entries


def _bracketed(fe, items, spec: str) -> FmtStr:
    """`[a, b, ...]` with the spec applied to each item."""
    out = FmtStr(["["])
    for k, e in enumerate(items):
        out.add(", " if k else "").add(value_text(fe, e, spec))
    return out.add("]")


def _scalar_text(fe, v, spec: str) -> FmtStr:
    """A runtime scalar as a printf part; a Python number formatted now with the conversion
    its kernel type (default float or int) takes."""
    dt = v.dtype if isinstance(v, Stmt) else (fe.e.fp if isinstance(v, float) else fe.e.ip)
    fwp, conv = _parse_spec(spec, dt)
    if isinstance(v, Stmt):
        return FmtStr([(fwp, conv, v)])
    return FmtStr([("%" + fwp + conv) % (v if dt.is_float or conv not in FLOAT_CONV else float(v))])


def _parse_spec(spec: str, dt) -> tuple[str, str]:
    """A Python/printf format spec as (flags width .precision, printf conversion) for dtype."""
    m = _SPEC.match(spec or "")
    if m is None:
        raise UnsupportedSpec(f"unsupported format spec {spec!r} in a kernel")
    flags, width, prec, _length, conv = m.groups()
    if conv in ("", "s"):
        conv = "f" if dt.is_float else "d" if dt.is_signed else "u"
    if dt == T.f64 and not prec and conv in FLOAT_CONV:
        prec = ".12"  # Taichi prints an f64 with 12 decimals (any float conversion), an f32 with 6
    # Taichi 1.7.4: hex/octal only for unsigned types, `c` for none
    if (conv in INT_CONV) == dt.is_float or (conv in "uxXo" and dt.is_signed) or conv == "c" \
            or (conv in "di" and not dt.is_float and not dt.is_signed):
        raise FieldsimTypeError(f"'{spec}' doesn't match '{dt}'.")
    return flags + width + (prec or ""), conv


def check_format_args(template: str, args, kwargs):
    """Taichi's checks of `str.format` in a kernel: exactly the positional arguments the
    template uses, and every keyword used and given."""
    needed, auto, names = 0, 0, set()
    for _lit, name, _spec, _conv in string.Formatter().parse(template):
        if name is None:
            continue
        if name == "":
            auto += 1
            needed = max(needed, auto)
        elif name.isdigit():
            needed = max(needed, int(name) + 1)
        else:
            names.add(name)
    if len(args) != needed:
        raise FieldsimSyntaxError(f"Expected {needed} positional argument(s), but received "
                                  f"{len(args)} instead.")
    for k in kwargs:
        if k not in names:
            raise FieldsimSyntaxError(f"Keyword '{k}' not used.")
    for k in names:
        if k not in kwargs:
            raise FieldsimSyntaxError(f"Keyword '{k}' not found.")


def format_method(fe, template: str, args, kwargs):
    """`"...{}...".format(...)` in a kernel (a str when every part is known at compile time)."""
    check_format_args(template, args, kwargs)
    out, auto = FmtStr(), 0
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.add(literal)
        if name is None:
            continue
        if name == "":
            value, auto = args[auto], auto + 1
        elif name.isdigit():
            value = args[int(name)]
        elif name in kwargs:
            value = kwargs[name]
        else:
            raise FieldsimSyntaxError(f"format field {{{name}}} has no matching argument")
        if conversion:
            raise FieldsimSyntaxError(f"!{conversion} conversions are not supported in kernels")
        out.add(value_text(fe, value, spec or "", py_constants=True))
    if all(isinstance(p, str) for p in out.parts):
        return "".join(out.parts)
    return out


def percent_format(fe, template: str, values) -> FmtStr:
    """`"x = %d" % v` with kernel values (printf conversions)."""
    values = list(values) if isinstance(values, (tuple, list)) else [values]
    out, pos, k = FmtStr(), 0, 0
    for m in _PERCENT.finditer(template):
        out.add(template[pos:m.start()])
        pos = m.end()
        if m.group(5) == "%":
            out.add("%")
            continue
        if k >= len(values):
            raise FieldsimTypeError("not enough arguments for the format string")
        spec = m.group(1) + m.group(2) + (m.group(3) or "") + ("" if m.group(5) == "s" else m.group(5))
        out.add(value_text(fe, values[k], spec))
        k += 1
    if k != len(values):
        raise FieldsimTypeError("not all arguments converted during string formatting")
    return out.add(template[pos:])


def joined_str(fe, node: ast.JoinedStr):
    """An f-string in a kernel: a str when every part is known at compile time."""
    out = FmtStr()
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.add(str(part.value))
            continue
        value = fe.expr(part.value)
        spec = ""
        if part.format_spec is not None:
            spec = fe.expr(part.format_spec)
            if not isinstance(spec, str):
                raise FieldsimSyntaxError("a format spec in a kernel f-string must be constant")
        if part.conversion not in (-1, None):
            raise FieldsimSyntaxError("!r/!s/!a conversions are not supported in kernels")
        out.add(value_text(fe, value, spec, py_constants=True))
    if all(isinstance(p, str) for p in out.parts):
        return "".join(out.parts)
    return out


def _widen(fe, conv, v):
    """Runtime values reach printf as i64/u64/f64."""
    if v.dtype.is_float:
        return fe.b.cast(v, T.f64), conv
    if not v.dtype.is_signed:
        return fe.b.cast(v, T.u64), conv
    return fe.b.cast(v, T.i64), conv


def lower(fe, fmt: FmtStr):
    """(printf format, Python %-format, widened runtime values, their kinds 'i'/'u'/'f')."""
    cfmt, pyfmt, values, kinds = [], [], [], []
    for p in fmt.parts:
        if isinstance(p, str):
            cfmt.append(p.replace("%", "%%"))
            pyfmt.append(p.replace("%", "%%"))
            continue
        fwp, conv, v = p
        v, conv = _widen(fe, conv, v)
        values.append(v)
        kinds.append("f" if v.dtype.is_float else "u" if not v.dtype.is_signed else "i")
        cfmt.append("%" + fwp + ("ll" if conv in INT_CONV and conv != "c" else "") + conv)
        pyfmt.append("%" + fwp + conv)
    return "".join(cfmt), "".join(pyfmt), values, kinds


def emit_print(fe, args, kwargs):
    """`print(*args, sep=' ', end='\\n')` in a kernel: one PRINT statement."""
    sep, end = kwargs.pop("sep", " "), kwargs.pop("end", "\n")
    if kwargs:
        raise FieldsimSyntaxError(f"print() in a kernel takes sep= and end= only, got {sorted(kwargs)}")
    if not isinstance(sep, str) or not isinstance(end, str):
        raise FieldsimTypeError("print(): sep and end must be constant strings")
    out = FmtStr()
    for k, a in enumerate(args):
        if k:
            out.add(sep)
        out.add(value_text(fe, a))
    out.add(end)
    cfmt, _py, values, _kinds = lower(fe, out)
    fe.b.emit(Op.PRINT, None, tuple(values), attr=cfmt)


def assert_message(fe, msg):
    """An assert's message as (Python %-format, widened values, kinds)."""
    fmt = value_text(fe, msg)
    _c, pyfmt, values, kinds = lower(fe, fmt)
    if len(values) > MAX_ASSERT_ARGS:
        raise FieldsimSyntaxError(f"an assert message may show at most {MAX_ASSERT_ARGS} kernel values")
    return pyfmt, values, kinds
