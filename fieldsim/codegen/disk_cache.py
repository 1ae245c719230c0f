"""The offline (on-disk) compile cache shared by the CPU and CUDA backends.

`cached_build(rt, kind, key_parts, suffix, build)` returns the bytes a backend would build
from LLVM IR (an object file, PTX): read from `rt.cache_dir/<kind>/` when
`rt.offline_cache` is on and an entry for the key exists, else `build()`, then stored. The key
hashes every part (compiler version, llvmlite version, target, the IR text), so a stale entry
is never read. Writes are atomic (a temporary file renamed), and an unwritable cache directory
only costs speed. Counts `llvm_compiles` and `cache_hits` in `rt.stats`.
"""
from __future__ import annotations

import hashlib
import os


def cached_build(rt, kind: str, key_parts: list[str], suffix: str, build) -> bytes:
    key = hashlib.sha256("\n".join(key_parts).encode()).hexdigest()
    path = os.path.join(rt.cache_dir, kind, key[:2], key + suffix)
    if rt.offline_cache and os.path.exists(path):
        rt.stats["cache_hits"] = rt.stats.get("cache_hits", 0) + 1
        with open(path, "rb") as f:
            return f.read()
    rt.stats["llvm_compiles"] = rt.stats.get("llvm_compiles", 0) + 1
    data = build()
    if rt.offline_cache:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache directory only costs speed
    return data
