"""Struct-fors over pointer fields, fieldsim against Taichi: a big, nearly empty grid and a
fully active one.

Each run is its own process (Taichi on the CPU, TI_ARCH=x64; both with 2 threads):
* `sparse`: taichi_elements' grid layout, `pointer(ij, 32).pointer(ij, 8).dense(ij, 16)` of a
  4096^2 index space (a scalar mass and a 2-vector velocity placed one component at a time),
  with 8 blocks active: timed are a struct-for over the grid (`if m > 0: v = v / m + g`),
  `grid.deactivate_all()` (and the kernel seeding the 8 blocks again), and Python-scope
  `m.fill(1.0)` and `m.to_numpy()`;
* `dense`: `pointer(ij, 64).dense(ij, 16)` of 1024^2 cells, every block active: a struct-for
  computing `y = 2x + sin(x)` and one summing y into a 0-D field;
* `shell` (a process of its own, for its memory): `pointer(ijk, 128).dense(ijk, 8)` of a 1024^3
  index space, 400,000 atomic adds at points of a sphere of radius 410 (about 27,000 blocks
  active): the kernel's first call (compile included) and a second one, a struct-for summing
  the field, and the process's peak resident memory in MB.
Each timing is the median of `--repeats` calls after a warm-up call; runs alternate between the
variants and the medians of `--runs` runs are printed. A `--tree name=PATH` runs fieldsim from
that source tree (PYTHONPATH); without any, the fieldsim this Python imports.

    python benchmarks/sparse_struct_for.py --taichi-python /tmp/tivenv/bin/python \\
        --tree new=/work/main --tree old=/path/to/older/checkout
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, statistics, sys, time
backend, repeats = sys.argv[1], int(sys.argv[2])
if backend == "taichi":
    import taichi as ti
else:
    import fieldsim as ti
ti.init(arch=ti.cpu, cpu_max_num_threads=2)

def median_ms(f, *args):
    f(*args)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(*args)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)

m = ti.field(ti.f32)
v = ti.Vector.field(2, ti.f32)
grid = ti.root.pointer(ti.ij, 32)
block = grid.pointer(ti.ij, 8)
block.dense(ti.ij, 16).place(m)
for d in range(2):
    block.dense(ti.ij, 16).place(v.get_scalar_field(d))
x = ti.field(ti.f32)
y = ti.field(ti.f32)
ti.root.pointer(ti.ij, 64).dense(ti.ij, 16).place(x, y)
s = ti.field(ti.f32, shape=())

@ti.kernel
def seed():
    for b in range(8):
        for i, j in ti.ndrange(16, 16):
            m[1000 + 16 * b + i, 2000 + j] = 1.0 + i
            v[1000 + 16 * b + i, 2000 + j] = [0.5, j * 0.25]

@ti.kernel
def grid_op():
    for i, j in m:
        if m[i, j] > 0:
            v[i, j] = v[i, j] / m[i, j] + ti.Vector([0.0, -9.8e-4])

@ti.kernel
def fill():
    for i, j in ti.ndrange(1024, 1024):
        x[i, j] = (i * 1024 + j) % 97 * 0.01

@ti.kernel
def step():
    for i, j in x:
        y[i, j] = x[i, j] * 2.0 + ti.sin(x[i, j])

@ti.kernel
def total():
    s[None] = 0
    for i, j in y:
        s[None] += y[i, j]

def deactivate():
    grid.deactivate_all()
    seed()

seed()
fill()
out = {"sparse grid_op": median_ms(grid_op), "sparse deactivate_all + reseed": median_ms(deactivate),
       "sparse m.fill (Python)": median_ms(lambda: m.fill(1.0)), "sparse m.to_numpy": median_ms(m.to_numpy),
       "dense step": median_ms(step), "dense sum": median_ms(total)}
out["check"] = float(s[None]) + float(v.to_numpy().sum())
print(json.dumps(out))
'''

SHELL = r'''
import json, resource, sys, time
backend = sys.argv[1]
if backend == "taichi":
    import taichi as ti
else:
    import fieldsim as ti
ti.init(arch=ti.cpu, cpu_max_num_threads=2)
N = 1024
x = ti.field(ti.f32)
ti.root.pointer(ti.ijk, N // 8).dense(ti.ijk, 8).place(x)

@ti.kernel
def shell():
    for p in range(400000):
        u = (p * 0.6180339887) % 1.0
        w = (p * 0.7548776662 + 0.5) % 1.0
        th = 6.2831853 * u
        ph = ti.acos(2 * w - 1)
        r = N * 0.4
        i = int(N / 2 + r * ti.sin(ph) * ti.cos(th))
        j = int(N / 2 + r * ti.sin(ph) * ti.sin(th))
        k = int(N / 2 + r * ti.cos(ph))
        x[i, j, k] += 1.0

@ti.kernel
def total() -> ti.f32:
    s = 0.0
    for i, j, k in x:
        s += x[i, j, k]
    return s

def ms(f):
    t = time.perf_counter()
    got = f()
    ti.sync()
    return (time.perf_counter() - t) * 1e3, got

first, _ = ms(shell)
second, _ = ms(shell)
total()
summed, check = ms(total)
print(json.dumps({"shell first call": first, "shell second call": second, "shell sum": summed,
                  "shell peak RSS MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "shell check": float(check)}))
'''


def run(python: str, backend: str, repeats: int, env: dict, scripts) -> dict:
    out = {}
    for script in scripts:
        r = subprocess.run([python, script, backend, str(repeats)], env=env, check=False,
                           capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(r.stderr[-3000:])
        out.update(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--taichi-python", help="a Python with taichi 1.7.4 installed")
    ap.add_argument("--tree", action="append", default=[], help="name=PATH of a fieldsim tree")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    variants = [(name, sys.executable, "fieldsim", dict(os.environ, PYTHONPATH=path))
                for name, path in (t.split("=", 1) for t in args.tree)]
    if not variants:
        variants = [("fieldsim", sys.executable, "fieldsim", dict(os.environ))]
    if args.taichi_python:
        variants.append(("taichi", args.taichi_python, "taichi", dict(os.environ, TI_ARCH="x64")))
    results = {name: [] for name, *_ in variants}
    from tqdm import tqdm
    with tempfile.TemporaryDirectory() as tmp:  # kernels need a source file to be read from
        scripts = []
        for stem, text in (("sparse_struct_for_child", CHILD), ("sparse_shell_child", SHELL)):
            scripts.append(os.path.join(tmp, stem + ".py"))
            with open(scripts[-1], "w") as f:
                f.write(text)
        for _ in tqdm(range(args.runs), desc="rounds"):
            for name, python, backend, env in variants:
                results[name].append(run(python, backend, args.repeats, env, scripts))
    keys = [k for k in results[variants[0][0]][0] if not k.endswith("check")]
    print(f"load {os.getloadavg()[0]:.1f}; ms, medians of {args.runs} runs x {args.repeats} calls")
    print("| variant | " + " | ".join(keys) + " | check | shell check |")
    print("|---|" + "---|" * (len(keys) + 2))
    for name, runs in results.items():
        cells = [f"{statistics.median(r[k] for r in runs):.3f}" for k in keys]
        print(f"| {name} | " + " | ".join(cells)
              + f" | {runs[0]['check']:.6g} | {runs[0]['shell check']:.6g} |")


if __name__ == "__main__":
    main()
