"""The offline (on-disk) compile cache shared by the CPU and CUDA backends.

`cached_build(rt, kind, key_parts, suffix, build)` returns the bytes a backend would build
from LLVM IR (an object file, PTX): read from `<cache dir>/<kind>/` when `rt.offline_cache` is
on and a valid entry for the key exists, else `build()`, then stored. The key hashes every part
(compiler version, llvmlite version, target, the IR text), so a stale entry is never read.
Counts `llvm_compiles` and `cache_hits` in `rt.stats`.

What it guarantees (docs/SECURITY.md says what it trusts):
- The cache directory is used only when it is owned by the user and not group- or
  world-writable (created 0700); otherwise one warning says why and the cache is off.
- An entry is used only when it is a regular file (opened without following symlinks, without
  blocking on a FIFO), owned by the user, no larger than the cap, and its header matches: magic,
  format version, the full key, the length and a SHA-256 of the bytes. Anything else is a miss:
  the entry is removed, one warning is given, and the kernel is rebuilt (never a crash).
- Writes go to a `mkstemp` file in the entry's directory, are fsync'ed, then `os.replace`d, so a
  crash or power loss leaves either the old entry, the new one, or a stray temporary file.
- The total size is kept under a cap (`FIELDSIM_CACHE_MAX_BYTES`, default 1 GiB) by removing
  the least recently used entries (a hit refreshes an entry's mtime).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import struct
import tempfile
import threading
import warnings

MAGIC = b"FSCACHE\n"
FORMAT_VERSION = 1
# magic, version, key (64 hex chars), payload length, payload SHA-256
_HEADER = struct.Struct("<8sI64sQ32s")
DEFAULT_MAX_BYTES = 1 << 30
ENTRY_SUFFIXES = (".o", ".ptx")
_TMP_PREFIX = ".tmp-"

_lock = threading.Lock()
_warned: set = set()
_dir_ok: dict = {}  # root -> None (usable) or the reason it is not
_sizes: dict = {}  # root -> bytes in the cache as last counted plus what this process added


class CacheWarning(UserWarning):
    """The on-disk compile cache skipped a directory or an entry (it never affects results)."""


def _warn_once(key, msg):
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(msg, CacheWarning, stacklevel=4)


def default_dir() -> str:
    """`FIELDSIM_CACHE_DIR` when set and non-empty, else ~/.cache/fieldsim."""
    return os.environ.get("FIELDSIM_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "fieldsim")


def max_bytes(rt=None) -> int:
    value = getattr(rt, "cache_max_bytes", None) or os.environ.get("FIELDSIM_CACHE_MAX_BYTES")
    if not value:
        return DEFAULT_MAX_BYTES
    text = str(value).strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
        return max(0, int(float(text.rstrip("KMGB") if scale > 1 else text) * scale))
    except ValueError:
        _warn_once(("cap", text), f"FIELDSIM_CACHE_MAX_BYTES={value!r} is not a size; "
                                  f"using {DEFAULT_MAX_BYTES} bytes")
        return DEFAULT_MAX_BYTES


def dir_problem(root: str) -> str | None:
    """None when `root` may hold the cache, else why not (creating it 0700 when missing)."""
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        st = os.stat(root)
    except OSError as err:
        return f"it cannot be created or read ({err.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return (f"it is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); anyone who "
                "can write it could make you run their code")
    if st.st_mode & 0o022:
        return (f"it is group- or world-writable (mode {stat.S_IMODE(st.st_mode):o}); others "
                f"could plant code in it. Fix: chmod 700 {root}")
    return None


def _root_usable(root: str) -> bool:
    if root not in _dir_ok:
        _dir_ok[root] = dir_problem(root)
    problem = _dir_ok[root]
    if problem is not None:
        _warn_once(("dir", root), f"fieldsim: not using the compile cache directory {root!r}: "
                                  f"{problem}. Kernels are compiled afresh; set "
                                  "FIELDSIM_CACHE_DIR to a directory only you can write.")
    return problem is None


def _subdir(root, *parts) -> str | None:
    """A subdirectory we made (0700, a real directory, ours), created when missing."""
    path = root
    for p in parts:
        path = os.path.join(path, p)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if (not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022
                or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())):
            _warn_once(("sub", path), f"fieldsim: compile cache subdirectory {path!r} is not a "
                                      "private directory; not using it")
            return None
    return path


def read_entry(path: str, key: str, cap: int) -> bytes | None:
    """The payload of a valid entry, None when there is none; raises ValueError(why) when a
    file is there but is not a valid entry."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ValueError(f"it cannot be opened as a plain file ({err.strerror})") from None
    try:
        st = os.fstat(fd)
        _check_file(st, cap)
        with os.fdopen(fd, "rb", closefd=False) as f:
            blob = f.read(st.st_size + 1)
    finally:
        os.close(fd)
    return _payload(blob, key)


def _check_file(st, cap: int):
    """Refuse (ValueError) a file that is not one of this user's private regular files of a
    possible size."""
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("it is not a regular file")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise ValueError(f"it is owned by uid {st.st_uid}, not by you")
    if st.st_mode & 0o022:
        raise ValueError("it is group- or world-writable")
    if st.st_size > cap + _HEADER.size or st.st_size < _HEADER.size:
        raise ValueError(f"its size ({st.st_size} bytes) is impossible for an entry")


def _payload(blob: bytes, key: str) -> bytes:
    """The payload of an entry's bytes, checked against its header (ValueError why not)."""
    if len(blob) < _HEADER.size:
        raise ValueError("it is truncated")
    magic, version, stored_key, length, digest = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise ValueError("it has no fieldsim cache header")
    if version != FORMAT_VERSION:
        raise ValueError(f"it has format version {version}, not {FORMAT_VERSION}")
    if stored_key != key.encode():
        raise ValueError("its header names another key")
    payload = blob[_HEADER.size:]
    if len(payload) != length:
        raise ValueError(f"it holds {len(payload)} bytes, its header says {length}")
    if hashlib.sha256(payload).digest() != digest:
        raise ValueError("its checksum does not match its contents")
    return payload


def write_entry(path: str, key: str, data: bytes) -> int:
    """Store `data` at `path` atomically; returns the bytes written."""
    blob = _HEADER.pack(MAGIC, FORMAT_VERSION, key.encode(), len(data),
                        hashlib.sha256(data).digest()) + data
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=directory)  # O_EXCL, mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return len(blob)


def cached_build(rt, kind: str, key_parts: list[str], suffix: str, build) -> bytes:
    key = hashlib.sha256("\n".join(key_parts).encode()).hexdigest()
    root = rt.cache_dir or default_dir()
    use = rt.offline_cache and _root_usable(root)
    sub = _subdir(root, kind, key[:2]) if use else None
    path = os.path.join(sub, key + suffix) if sub else None
    cap = max_bytes(rt)
    data = _lookup(path, key, cap) if path is not None else None
    if data is not None:
        rt.stats["cache_hits"] = rt.stats.get("cache_hits", 0) + 1
        return data
    rt.stats["llvm_compiles"] = rt.stats.get("llvm_compiles", 0) + 1
    data = build()
    if path is not None and len(data) <= cap:
        _store(root, path, key, data, cap)
    return data


def _lookup(path: str, key: str, cap: int) -> bytes | None:
    """A valid entry's payload (its mtime refreshed for LRU eviction), else None; an invalid
    entry is removed, with one warning."""
    try:
        data = read_entry(path, key, cap)
    except ValueError as why:
        _warn_once(("entry", path), f"fieldsim: ignoring the invalid compile cache entry "
                                    f"{path!r}: {why}; removed it and recompiling")
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    except OSError:
        return None
    if data is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used eviction goes by mtime
    return data


def _store(root: str, path: str, key: str, data: bytes, cap: int):
    """Write an entry and keep the directory under its size cap (evicting the least recently
    used); a read-only or full cache directory only costs speed."""
    try:
        written = write_entry(path, key, data)
    except OSError:
        return
    with _lock:
        if root not in _sizes:
            _sizes[root] = None
        elif _sizes[root] is not None:
            _sizes[root] += written
        over = _sizes[root] is None or _sizes[root] > cap
    if over:
        _sizes[root] = evict(root, cap)


def entries(root: str):
    """[(path, size, mtime)] of every cache entry under `root` (no symlinks followed)."""
    found = []
    for kind in ("cpu", "cuda"):
        top = os.path.join(root, kind)
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            for name in filenames:
                if name.endswith(ENTRY_SUFFIXES) or name.startswith(_TMP_PREFIX):
                    p = os.path.join(dirpath, name)
                    try:
                        st = os.lstat(p)
                    except OSError:
                        continue
                    found.append((p, st.st_size, st.st_mtime))
    return found


def evict(root: str, cap: int) -> int:
    """Remove least recently used entries until the total is at most 90% of `cap` (when it
    exceeds `cap`); returns the total left."""
    found = entries(root)
    total = sum(size for _, size, _ in found)
    if total <= cap:
        return total
    for p, size, _ in sorted(found, key=lambda e: e[2]):
        if total <= cap * 0.9:
            break
        try:
            os.unlink(p)
            total -= size
        except OSError:
            pass
    return total


def info(root: str | None = None) -> dict:
    root = root or default_dir()
    found = entries(root) if os.path.isdir(root) else []
    problem = dir_problem(root) if os.path.isdir(root) else None
    return {"dir": root, "entries": len(found), "bytes": sum(s for _, s, _ in found),
            "max_bytes": max_bytes(), "problem": problem}


def clear(root: str | None = None) -> int:
    """Remove every cache entry under `root`; returns how many were removed."""
    root = root or default_dir()
    n = 0
    for p, _, _ in entries(root):
        try:
            os.unlink(p)
            n += 1
        except OSError:
            pass
    _sizes.pop(root, None)
    return n
