"""Cost of one `ti.GUI` single-shape call (circle, line, rect, triangle) under fieldsim and,
optionally, Taichi 1.7.4: each kind drawn 200 times at random places on a 512x512 canvas, then
`get_image()` (which draws what fieldsim queued), minus `get_image()` alone; best of `--repeats`.

    python benchmarks/gui_calls.py [--taichi-python /tmp/tivenv/bin/python] [--repeats 5]

Prints microseconds per call for each backend (Taichi runs in its own process with
`TI_ARCH=x64`, on the same shapes).
"""
import argparse
import json
import os
import subprocess
import sys
import time

CALLS = 200


def measure(repeats: int) -> dict:
    import numpy as np

    import fieldsim as ti
    ti.init(arch=ti.cpu)
    gui = ti.GUI("calls", res=(512, 512), show_gui=False)
    rng = np.random.default_rng(0)
    kinds = {
        "circle": lambda a, b: gui.circle(a, radius=3, color=0x00FF00),
        "line": lambda a, b: gui.line(a, b, radius=2, color=0xFF0000),
        "rect": lambda a, b: gui.rect(a, b, radius=1, color=0x00FF00),
        "triangle": lambda a, b: gui.triangle(a, b, (0.5, 0.5), color=0x00FF00),
        "circle+line": lambda a, b: (gui.circle(a, radius=3, color=0x00FF00),
                                     gui.line(a, b, color=0xFF)),
    }

    def frame(draw, points):
        t0 = time.perf_counter()
        for p in points:
            draw(tuple(p[0]), tuple(p[1]))
        gui.get_image()
        return time.perf_counter() - t0

    points = rng.random((CALLS, 2, 2))
    base = min(frame(lambda a, b: None, points) for _ in range(repeats))
    out = {}
    for name, draw in kinds.items():
        best = min(frame(draw, points) for _ in range(repeats))
        gui.clear()
        out[name] = round((best - base) / CALLS * 1e6, 1)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taichi-python", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", choices=["fieldsim", "taichi"], default=None)
    args = parser.parse_args(argv)
    if args.worker == "taichi":
        import taichi
        sys.modules["fieldsim"] = taichi
    if args.worker:
        print(json.dumps(measure(args.repeats)))
        return 0
    rows = {"fieldsim": measure(args.repeats)}
    if args.taichi_python:
        env = dict(os.environ, TI_ARCH="x64")
        r = subprocess.run([args.taichi_python, __file__, "--worker", "taichi", "--repeats",
                            str(args.repeats)], capture_output=True, text=True, env=env, check=True)
        rows["taichi"] = json.loads(r.stdout.strip().splitlines()[-1])
    for backend, times in rows.items():
        print(backend, " ".join(f"{k} {v} us" for k, v in times.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
