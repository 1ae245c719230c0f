"""Sphinx configuration of fieldsim's API reference (sources here, output in docs/site/).

Build: `python -m sphinx -W -b html docs/reference docs/site` (tests/docs/test_sphinx_build.py
does it with warnings as errors). The API pages are generated at build time from the public
names (`dir(fieldsim)`, `fieldsim.ad`, `fieldsim.types`, `fieldsim.math`), so a new public name
appears without editing these sources; each object is documented once, aliases point to it.
"""
import inspect
import os
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import fieldsim  # noqa: E402

project = "fieldsim"
author = "The fieldsim developers"
copyright = "the fieldsim developers, Apache-2.0"
release = version = str(fieldsim.__version__)
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list = []
autodoc_default_options = {"members": True, "undoc-members": False, "member-order": "bysource"}
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
default_role = "code"  # `x` in docstrings is code, as in the Markdown the docstrings follow

MODULES = [("fieldsim", fieldsim, "fs"), ("fieldsim.ad", fieldsim.ad, "fs.ad"),
           ("fieldsim.types", fieldsim.types, "fs.types"), ("fieldsim.math", fieldsim.math, "fs.math")]


def _page(modname, mod, short, seen):
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    head = f"``{short}``: ``{modname}``"
    lines = [head, "=" * len(head), "", f".. module:: {modname}", "   :no-index:", "",
             f".. currentmodule:: {modname}", ""]
    values = []
    for name in sorted(names):
        obj = getattr(mod, name)
        if isinstance(obj, types.ModuleType):
            continue
        if not (inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj)):
            values.append((name, obj))
            continue
        if id(obj) in seen:
            lines += [f".. py:data:: {name}", "   :no-index:", "",
                      f"   The same object as ``{seen[id(obj)]}``.", ""]
            continue
        seen[id(obj)] = f"{short}.{name}"
        kind = "autoclass" if inspect.isclass(obj) else "autofunction"
        lines += [f".. {kind}:: {name}", ""]
    if values:
        lines += ["Values", "------", ""]
        for name, obj in values:
            lines += [f".. py:data:: {name}", "   :no-index:", "",
                      f"   ``{obj!r}`` (a ``{type(obj).__name__}``).", ""]
    return "\n".join(lines) + "\n"


def _generate(app):
    out = pathlib.Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    seen: dict = {}
    for modname, mod, short in MODULES:
        text = _page(modname, mod, short, seen)
        path = out / f"{modname}.rst"
        if not path.exists() or path.read_text() != text:  # unchanged pages stay cached
            path.write_text(text)


def _skip_internal(app, what, name, obj, skip, options):
    """Methods documented as internal hooks (e.g. `Tape.on_launch`) are not user API."""
    doc = getattr(obj, "__doc__", None) or ""
    return True if doc.lstrip().startswith("Internal hook") else None


def setup(app):
    app.connect("builder-inited", _generate)
    app.connect("autodoc-skip-member", _skip_internal)
    os.environ.setdefault("MPLBACKEND", "Agg")
