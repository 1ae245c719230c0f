"""Sparse layout nodes (`pointer`, `bitmasked`, `dynamic`).

Not implemented yet: declaring one raises, so a sparse program never runs with dense semantics.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError


class SparseNotSupportedError(FieldsimError, NotImplementedError):
    pass


def declare(node):
    raise SparseNotSupportedError(f"fs.root.{node.kind}(...): sparse layout nodes are not "
                                  "supported by fieldsim yet; use dense(...)")


def activate_python(field, idx):
    """Python-scope write to `field` at storage index `idx` (None: every cell)."""


def deactivate_all(node):
    if node.kind not in ("pointer", "bitmasked", "dynamic"):
        return
