"""Words for what a kernel cannot contain, and the fix a user should try.

`unsupported(node, what)` gives the message for a Python construct kernels do not compile
(`what` is "expression" or "statement"): the construct named in words (never the bare AST class
name) and what to write instead. `python_call_hint(fn)` gives the fix for calling a plain Python
callable with kernel values: for a numpy/math function with a fieldsim counterpart it names
`fs.<name>` / `ti.math.<name>`; for other library code it says that it runs in Python only; for
anything else it suggests @fs.func. Pure functions of their arguments: no state, never raise.
"""
from __future__ import annotations

import ast

# AST class name -> (the construct in words, what to do instead)
_CONSTRUCTS = {
    "Lambda": ("a lambda", "define the function outside the kernel with @fs.func"),
    "Set": ("a set literal", "use a tuple, an fs.Vector, or a field"),
    "SetComp": ("a set comprehension",
        ("use a list comprehension over fs.static(range(...)) or a loop")),
    "GeneratorExp": ("a generator expression",
        ("use a list comprehension over fs.static(range(...)) or a for loop")),
    "Starred": ("a starred expression (*...)", "pass the values one by one"),
    "Await": ("an await expression", "kernels are not coroutines: await outside the kernel"),
    "Yield": ("a yield expression", "kernels are not generators: write results to a field"),
    "YieldFrom": ("a yield from expression",
        ("kernels are not generators: write results to a field")),
    "With": ("a with statement", "kernels have no context managers: move it outside the kernel"),
    "AsyncWith": ("an async with statement", "move it outside the kernel"),
    "AsyncFor": ("an async for loop", "use a plain for loop"),
    "Try": ("a try statement", "kernels cannot catch exceptions: test the condition with an if"),
    "TryStar": ("a try statement",
        ("kernels cannot catch exceptions: test the condition with an if")),
    "Raise": ("a raise statement",
        ('use `assert condition, "message"` (checked when fs.init(debug=True))')),
    "Delete": ("a del statement", "kernel variables cannot be deleted: stop using the name"),
    "Import": ("an import", "import at module level, outside the kernel"),
    "ImportFrom": ("an import", "import at module level, outside the kernel"),
    "Global": ("a global declaration",
        ("kernels read module-level values directly; keep state that kernels "
         "change in a field")),
    "Nonlocal": ("a nonlocal declaration", "keep state that kernels change in a field"),
    "FunctionDef": ("a function definition", "define it outside the kernel with @fs.func"),
    "AsyncFunctionDef": ("an async function definition",
        ("define it outside the kernel with @fs.func")),
    "ClassDef": ("a class definition",
        ("define the class outside the kernel (a struct type with "
         "fs.types.struct or @fs.dataclass)")),
    "Match": ("a match statement", "use if / elif"),
    "TypeAlias": ("a type alias", "define it outside the kernel"),
}


def unsupported(node, what: str) -> str:
    name = type(node).__name__
    words, fix = _CONSTRUCTS.get(name, (None, None))
    if words is None:
        return f"{what} not supported in a kernel: {ast.unparse(node)[:60]!r} ({name})"
    return f"{words} is not supported in a kernel: {fix}"


# numpy / math names whose fieldsim counterpart has another name
_RENAMED = {"arctan2": "atan2", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
            "power": "pow", "absolute": "abs", "fabs": "abs", "fmin": "min", "fmax": "max",
            "minimum": "min", "maximum": "max", "float32": "f32", "float64": "f64",
            "int32": "i32", "int64": "i64", "linalg.norm": "norm"}


def python_call_hint(fn) -> str:
    """The sentence after "cannot call the Python function 'name' with kernel values;"."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    module = _library(fn)
    if module is None:
        return "decorate it with @fs.func to call it from a kernel"
    import fieldsim.lang.math as fsmath
    from fieldsim.lang import ops
    key = "linalg.norm" if module == "numpy" and name == "norm" else name
    module = {"numpy": "np"}.get(module, module)  # as users spell it
    label = f"Python's {name}()" if module == "builtins" else f"{module}.{name}"
    ours = _RENAMED.get(key, name)
    if ours in ("f32", "f64", "i32", "i64"):
        return (f"{label} runs in Python, not in kernels: use fs.cast(v, fs.{ours}) "
                f"(ti.cast(v, ti.{ours}))")
    if ours == "norm":
        return f"{module} functions run in Python, not in kernels: use v.norm() on a vector"
    in_math = callable(getattr(fsmath, ours, None))
    in_top = callable(getattr(ops, ours, None))  # fs.<name>: the kernel builtins live in ops
    if in_top or in_math:
        spell = f"fs.{ours}" if in_top else f"fs.math.{ours}"
        ti = f"ti.math.{ours}" if in_math else f"ti.{ours}"
        return (f"{label} runs in Python, not in kernels: use {spell} "
                f"(in Taichi code: {ti})")
    return (f"{label} runs in Python, not in kernels, and fieldsim has no kernel "
            "version of it: write it with fs.math functions in an @fs.func")


def _library(fn) -> str | None:
    """'numpy' / 'math' / 'cmath' / 'random' / 'scipy' / 'torch' / 'jax' / 'builtins' when `fn`
    comes from one of those libraries, else None."""
    mod = getattr(fn, "__module__", None)
    if mod is None and type(fn).__name__ == "ufunc":  # numpy ufuncs carry no __module__
        mod = "numpy"
    if not isinstance(mod, str):
        return None
    root = mod.split(".")[0].lstrip("_")
    return root if root in ("numpy", "math", "cmath", "random", "scipy", "torch", "jax",
                            "jaxlib", "builtins") else None
