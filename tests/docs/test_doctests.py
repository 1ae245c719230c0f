"""Every public name has a docstring with an example, and the examples run (doctest).

Public names: what `dir(fieldsim)` exposes without a leading underscore, and the same for
`fieldsim.ad`, `fieldsim.types` and `fieldsim.math`. Values that are instances (dtypes such as
`fs.f32`, the axes `fs.ij`, `fs.cpu`) are documented by their class. Each example runs with `fs`
(fieldsim) and `np` (numpy) in scope after `fs.init(arch=fs.cpu)`; so do the `>>>` examples of the
site's guides (docs/reference/*.rst). A public name added without an example fails here: give it
a docstring with one at its definition (or in fieldsim/_docstrings.py for factory-made names).
"""
import doctest
import inspect
import pathlib
import types

import numpy as np
import pytest

import fieldsim as fs

MODULES = {"fs": fs, "fs.ad": fs.ad, "fs.types": fs.types, "fs.math": fs.math}


def _public():
    seen, out = set(), []
    for mname, mod in MODULES.items():
        for name in sorted(getattr(mod, "__all__", None) or dir(mod)):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType):
                continue
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                if type(obj).__module__ == "builtins":
                    continue  # a constant (fs.math.pi) or a plain container
                obj = type(obj)  # an instance (fs.f32, fs.ij, fs.cpu): its class carries the doc
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            out.append((f"{mname}.{name}", obj))
    return out


PUBLIC = _public()


def _own_doc(obj):
    return obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_documented_with_example(name, obj):
    doc = _own_doc(obj)
    assert doc and doc.strip(), f"{name} has no docstring"
    assert ">>>" in doc, f"{name}'s docstring has no example"


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_examples_run(name, obj):
    finder = doctest.DocTestFinder(recurse=inspect.isclass(obj) and obj.__module__.startswith("fieldsim"))
    tests = [t for t in finder.find(obj, name, globs={"fs": fs, "np": np}) if t.examples]
    for t in tests:
        fs.init(arch=fs.cpu)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        out = []
        runner.run(t, out=out.append)
        assert runner.failures == 0, "".join(out)


GUIDES = sorted((pathlib.Path(__file__).resolve().parents[2] / "docs" / "reference").glob("*.rst"))


@pytest.mark.parametrize("path", GUIDES, ids=[p.stem for p in GUIDES])
def test_guide_examples_run(path):
    """The `>>>` examples of the site's guides (docs/reference/*.rst) run as written."""
    fs.init(arch=fs.cpu)
    r = doctest.testfile(str(path), module_relative=False, globs={"fs": fs, "np": np},
                         optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert r.failed == 0, f"{path.name}: {r.failed} of {r.attempted} examples failed (see the output)"
