"""Python-scope element and entry access times, and Python-scope Vector/Matrix values, fieldsim
beside Taichi (when installed).

    python benchmarks/python_scope_entries.py [--rounds 3] [--reps 30] [--n 2000]
                                              [--taichi-python PATH]

Each round runs fieldsim and then Taichi (under `--taichi-python`, default $TAICHI_PYTHON, else
this interpreter; left out where it has no taichi) in fresh processes, alternating, as the
machine is shared; a measurement is the minimum over `--reps` batches of `--n` calls of the per-call time
(the least disturbed batch). Prints one table of medians over rounds, in microseconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CASES = {
    "x[5] = 1.0": "x[5] = 1.0",
    "v[5][0] = 1.0": "v[5][0] = 1.0",
    "m[3][1, 0] = 2.0": "m[3][1, 0] = 2.0",
    "v[5].x = 1.0": "v[5].x = 1.0",
    "v[5][1]": "v[5][1]",
    "v[5]": "v[5]",
    "s[None] = 1.0": "s[None] = 1.0",
    "ti.Vector([1.0, 2.0, 3.0])": "ti.Vector([1.0, 2.0, 3.0])",
    "ti.Matrix([[1.0, 2.0], [3.0, 4.0]])": "ti.Matrix([[1.0, 2.0], [3.0, 4.0]])",
    "a + a (Vector values)": "a + a",
    "a * 2.0": "a * 2.0",
    "a[0]": "a[0]",
    "a.x": "a.x",
}


def worker(backend, reps, n):
    import time
    if backend == "taichi":
        import taichi as ti
    else:
        import fieldsim as ti
    ti.init(arch=ti.cpu)
    env = {"x": ti.field(ti.f32, 16), "v": ti.Vector.field(3, ti.f32, 16),
           "m": ti.Matrix.field(2, 2, ti.f32, 16), "s": ti.field(ti.f32, ()), "ti": ti,
           "a": ti.Vector([1.0, 2.0, 3.0])}
    out = {}
    for name, stmt in CASES.items():
        code = compile(f"for _ in range({n}):\n    {stmt}\n", name, "exec")
        exec(code, env)  # warm
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            exec(code, env)
            best = min(best, (time.perf_counter() - t) / n * 1e6)
        out[name] = best
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON", sys.executable))
    ap.add_argument("--worker", choices=["fieldsim", "taichi"])
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.reps, a.n)
        return
    python = {"fieldsim": sys.executable, "taichi": a.taichi_python}
    has_taichi = subprocess.run([a.taichi_python, "-c", "import taichi"], capture_output=True).returncode == 0
    backends = ["fieldsim", "taichi"] if has_taichi else ["fieldsim"]
    samples = {b: [] for b in backends}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for _ in range(a.rounds):
        for b in backends:
            res = subprocess.run([python[b], __file__, "--worker", b, "--reps", str(a.reps),
                                  "--n", str(a.n)], capture_output=True, text=True, check=True,
                                 env=dict(os.environ, PYTHONPATH=here))
            samples[b].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print("| access | " + " | ".join(f"{b} (us)" for b in backends) + " |")
    print("|---|" + "---|" * len(backends))
    for name in CASES:
        cells = [f"{statistics.median(s[name] for s in samples[b]):.2f}" for b in backends]
        print(f"| `{name}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
