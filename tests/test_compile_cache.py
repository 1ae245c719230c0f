"""The compile cache: once per (kernel, template args) in memory; on disk across processes."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import fieldsim as fs

PROGRAM = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import fieldsim as fs
    fs.init(arch=fs.cpu, offline_cache=True, offline_cache_file_path=sys.argv[1])
    x = fs.field(fs.f32, shape=1000)
    v = fs.Vector.field(2, fs.f32, shape=1000)

    @fs.kernel
    def step(dt: fs.f32):
        for i in x:
            s = 0.0
            for k in range(4):
                s += fs.sin(x[i] + k) * dt
            v[i] = fs.Vector([s, fs.exp(-s)])
            x[i] += s

    t1 = time.perf_counter()
    step(0.1)
    t2 = time.perf_counter()
    print(json.dumps({"compile_s": t2 - t1, "stats": fs.lang.runtime.get().stats,
                      "x0": float(x[0])}))
""")


def _run(cache_dir):
    script = os.path.join(cache_dir, "program.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, script, cache_dir], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=root))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_offline_cache_skips_llvm_in_a_second_process(tmp_path):
    first = _run(str(tmp_path))
    second = _run(str(tmp_path))
    assert first["stats"].get("llvm_compiles", 0) >= 1
    assert second["stats"].get("llvm_compiles", 0) == 0
    assert second["stats"].get("cache_hits", 0) >= 1
    assert second["x0"] == first["x0"]
    assert second["compile_s"] < 0.3


def test_in_memory_cache_per_template_argument():
    fs.init(arch=fs.cpu, offline_cache=False)
    a = fs.field(fs.f32, shape=4)
    b = fs.field(fs.f32, shape=4)

    @fs.kernel
    def inc(f: fs.template()):
        for i in f:
            f[i] += 1

    inc(a)
    inc(a)
    rt = fs.lang.runtime.get()
    assert rt.stats.get("llvm_compiles") == 1
    inc(b)  # a second specialisation; its LLVM IR equals a's (fields are passed by pointer),
    assert len(inc._cache) == 2  # so the backend reuses the object it already loaded
    assert rt.stats.get("llvm_compiles") == 1
    np.testing.assert_array_equal(a.to_numpy(), [2, 2, 2, 2])
    np.testing.assert_array_equal(b.to_numpy(), [1, 1, 1, 1])


def test_reinit_drops_kernels_and_fields():
    fs.init(arch=fs.cpu, offline_cache=False)
    a = fs.field(fs.f32, shape=4)

    @fs.kernel
    def fill():
        for i in a:
            a[i] = 3

    fill()
    fs.init(arch=fs.cpu, offline_cache=False)
    try:
        a.to_numpy()
        raised = False
    except RuntimeError as e:
        raised = "earlier fs.init" in str(e)
    assert raised
