"""The on-disk compile cache never runs foreign code, never crashes on a bad entry, never follows
a planted symlink, keys entries by content (not compile order) and stays under its size cap.

Each test plants bad or malicious entries in a private cache directory, then compiles again in a
fresh runtime (a fresh LLVM engine, so the entry is read back) and checks the kernel's results.
"""
import os
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen import disk_cache
from fieldsim.codegen.disk_cache import CacheWarning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cache_dir, scale=2.0):
    """Compile and run a small kernel with the cache at `cache_dir`; (result, stats)."""
    fs.init(arch=fs.cpu, offline_cache=True, offline_cache_file_path=str(cache_dir))
    x = fs.field(fs.f32, shape=8)

    @fs.kernel
    def fill_scaled(k: fs.f32):
        for i in x:
            x[i] = i * k + 0.5

    fill_scaled(scale)
    return x.to_numpy(), dict(fs.lang.runtime.get().stats)


def _entry_paths(cache_dir):
    return sorted(p for p, _, _ in disk_cache.entries(str(cache_dir)))


def _expected(scale=2.0):
    return np.arange(8, dtype=np.float32) * np.float32(scale) + np.float32(0.5)


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    out, stats = _run(d)
    np.testing.assert_allclose(out, _expected())
    assert stats.get("llvm_compiles") == 1
    paths = _entry_paths(d)
    assert len(paths) == 1
    return d, paths[0]


def _rerun_expect_miss(d):
    with pytest.warns(CacheWarning, match="invalid compile cache entry"):
        out, stats = _run(d)
    np.testing.assert_allclose(out, _expected())
    assert stats.get("llvm_compiles") == 1 and not stats.get("cache_hits")


def test_valid_entry_is_a_hit(cache):
    d, _ = cache
    out, stats = _run(d)
    np.testing.assert_allclose(out, _expected())
    assert stats.get("cache_hits") == 1 and not stats.get("llvm_compiles")


@pytest.mark.parametrize("content", [b"", b"\x7fELF\x02\x01", os.urandom(4096)],
                         ids=["empty", "truncated", "random"])
def test_garbage_entry_is_a_miss_not_a_crash(cache, content):
    d, path = cache
    with open(path, "wb") as f:
        f.write(content)
    _rerun_expect_miss(d)
    # the bad entry was replaced by a good one
    out, stats = _run(d)
    assert stats.get("cache_hits") == 1


def test_tampered_payload_is_detected(cache):
    d, path = cache
    blob = bytearray(open(path, "rb").read())
    blob[-100] ^= 0xFF  # a changed constant or instruction in a well-formed entry
    open(path, "wb").write(bytes(blob))
    _rerun_expect_miss(d)


def test_another_kernels_entry_is_not_used(cache, tmp_path):
    d, path = cache
    other = tmp_path / "other"
    _run_other(other)
    (other_path,) = _entry_paths(other)
    with open(other_path, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())  # a complete, checksummed entry, but for another key
    _rerun_expect_miss(d)


def _run_other(d):
    fs.init(arch=fs.cpu, offline_cache=True, offline_cache_file_path=str(d))
    y = fs.field(fs.f32, shape=8)

    @fs.kernel
    def other():
        for i in y:
            y[i] = -1.0

    other()


def test_symlink_to_dev_zero_is_a_miss(cache):
    d, path = cache
    os.unlink(path)
    os.symlink("/dev/zero", path)
    _rerun_expect_miss(d)
    assert not os.path.islink(path)


def test_symlinked_entry_never_overwrites_its_target(cache, tmp_path):
    d, path = cache
    victim = tmp_path / "precious.txt"
    victim.write_text("user data")
    os.unlink(path)
    os.symlink(victim, path)
    _rerun_expect_miss(d)
    assert victim.read_text() == "user data"


def test_fifo_entry_does_not_hang(cache):
    d, path = cache
    os.unlink(path)
    os.mkfifo(path)
    _rerun_expect_miss(d)


def test_world_writable_directory_is_not_used(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.warns(CacheWarning, match="world-writable"):
        out, stats = _run(d)
    np.testing.assert_allclose(out, _expected())
    assert _entry_paths(d) == []
    # a planted entry in such a directory is never read either
    out, stats = _run(d)
    assert not stats.get("cache_hits")


def test_new_cache_directory_is_private(tmp_path):
    d = tmp_path / "new" / "cache"
    _run(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for p in _entry_paths(d):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0


def test_empty_cache_dir_variable_means_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv("FIELDSIM_CACHE_DIR", "")
    monkeypatch.chdir(tmp_path)
    fs.init(arch=fs.cpu)
    assert fs.lang.runtime.get().cache_dir not in ("", ".", str(tmp_path))
    assert os.path.isabs(fs.lang.runtime.get().cache_dir)


def _two_kernels():
    a = fs.field(fs.f32, shape=4)

    @fs.kernel
    def ka():
        for i in a:
            a[i] = 1.0

    @fs.kernel
    def kb():
        for i in a:
            a[i] += 2.0
    return a, ka, kb


def test_keys_do_not_depend_on_compile_order(tmp_path):
    d = str(tmp_path / "c")
    fs.init(arch=fs.cpu, offline_cache_file_path=d)
    a, ka, kb = _two_kernels()
    ka()
    kb()
    fs.init(arch=fs.cpu, offline_cache_file_path=d)
    a, ka, kb = _two_kernels()
    kb()  # the other order
    ka()
    stats = fs.lang.runtime.get().stats
    assert stats.get("cache_hits") == 2 and not stats.get("llvm_compiles")
    np.testing.assert_array_equal(a.to_numpy(), [1, 1, 1, 1])


def test_size_cap_evicts_least_recently_used(tmp_path, monkeypatch):
    d = tmp_path / "c"
    _run(d, 2.0)
    ((first, size, _),) = disk_cache.entries(str(d))
    monkeypatch.setenv("FIELDSIM_CACHE_MAX_BYTES", str(int(size * 2.5)))
    disk_cache._sizes.clear()
    for n in range(6):  # six more distinct kernels (a template value is part of the IR)
        fs.init(arch=fs.cpu, offline_cache_file_path=str(d))
        x = fs.field(fs.f32, shape=8)

        @fs.kernel
        def k(c: fs.template()):
            for i in x:
                x[i] = c

        k(n + 10)
        assert x[0] == n + 10
    found = disk_cache.entries(str(d))
    assert sum(s for _, s, _ in found) <= size * 2.5
    assert 1 <= len(found) < 7
    assert first not in [p for p, _, _ in found]  # the least recently used went first


def test_cli_info_and_clear(cache):
    d, _ = cache
    env = dict(os.environ, PYTHONPATH=ROOT)
    info = subprocess.run([sys.executable, "-m", "fieldsim", "cache", "info", "--dir", str(d)],
                          capture_output=True, text=True, check=True, env=env).stdout
    assert "entries:   1" in info and "status:    ok" in info
    out = subprocess.run([sys.executable, "-m", "fieldsim", "cache", "clear", "--dir", str(d)],
                         capture_output=True, text=True, check=True, env=env).stdout
    assert "removed 1 cache entry" in out
    assert _entry_paths(d) == []
    bad = subprocess.run([sys.executable, "-m", "fieldsim", "cache", "explode"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2


def test_one_warning_per_bad_entry(cache):
    d, path = cache
    open(path, "wb").write(b"junk")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(d)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
