"""The package is a strict stack: a module imports only from its own layer or the layers below.

    fieldsim.errors                      (leaf: error types and source locations)
    fieldsim.ir                          (IR, op table, builder, printer, verifier, passes)
    fieldsim.lang                        (types, fields, frontend, kernel and func objects)
    fieldsim.checks, fieldsim.ad         (access rules; reverse and forward AD, the Tape)
    fieldsim.codegen                     (LLVM lowering, CPU and CUDA backends)
    fieldsim.runtime                     (the pipeline driver: compile, cache, launch)
    fieldsim (the package's __init__), fieldsim.gui, fieldsim.__main__

Function-level imports count: a lazy import is still an upward dependency. `fieldsim.ad` may
import `fieldsim.checks` (the Tape runs the checker); `fieldsim.checks` never imports `fieldsim.ad`.
"""
import ast
import pathlib

import pytest

import fieldsim

ROOT = pathlib.Path(fieldsim.__file__).parent
RANK = {"errors": 0, "ir": 1, "lang": 2, "checks": 3, "ad": 3.5, "codegen": 4, "runtime": 5}
TOP = 6  # fieldsim/__init__.py, gui.py, __main__.py, ...


def _layer(module: str) -> float:
    parts = module.split(".")
    if parts[0] != "fieldsim":
        return -1  # third party / stdlib
    if len(parts) == 1:
        return TOP
    return RANK.get(parts[1], TOP)


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: pathlib.Path, module: str):
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target


MODULES = sorted(p for p in ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_import(path):
    module = _module_name(path)
    mine = _layer(module)
    upward = [f"line {line}: {target}" for line, target in _imports(path, module)
              if _layer(target) > mine]
    assert not upward, f"{module} (layer {mine}) imports from above: {upward}"
