"""Runs the example programs that ship inside Taichi's wheel (`taichi/examples`) with fieldsim.

Each program runs unmodified in its own process: `taichi`, `taichi.math`, `taichi.types`, ... are
fieldsim's modules, `taichi.examples.*` (the programs' shared helpers) load from the examples
folder with the same substitution, and every GUI stops after `--frames` frames (`ti.GUI.show`,
`ti.ui.Window.show`). `--backend taichi` runs the same programs with Taichi itself (in an
environment that has it; its windows are never opened, and it runs on the CPU), for comparison.

    python scripts/taichi_examples.py --examples /path/to/site-packages/taichi/examples [names...]

Prints one line per program (ok / error and its last line / timeout, seconds) and, with
`--json FILE`, writes the results; each successful result also holds `times` (the start, the
moment of each shown frame, the end, and the compile seconds: fieldsim's `compile_s` counter,
or Taichi's frontend plus the first launch of each compiled kernel), which
`benchmarks/taichi_examples_time.py` turns into first-frame, steady-frame and compile times.
Taichi's `GUI.show` runs too (headless), so both backends draw every frame. Needs a Taichi wheel only for its example files (e.g.
`pip download taichi==1.7.4 --no-deps` and unzip); Taichi is never imported under fieldsim.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Runs inside the child process: argv = [examples_dir, program, backend, frames].
_CHILD = r'''
import importlib, importlib.abc, importlib.util, json, os, runpy, sys, time
examples, program, backend, frames = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

class _Stop(BaseException):
    """Raised by the n-th shown frame: the program has run long enough."""

if backend == "fieldsim":
    import fieldsim as ti

    class _TaichiAsFieldsim(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            if name == "taichi" or name.startswith("taichi."):
                return importlib.util.spec_from_loader(name, self, is_package=True)
            return None

        def create_module(self, spec):
            name = spec.name
            if name == "taichi.examples" or name.startswith("taichi.examples."):
                return None
            return importlib.import_module("fieldsim" + name[len("taichi"):])

        def exec_module(self, module):
            name = module.__name__
            if name == "taichi.examples" or name.startswith("taichi.examples."):
                rel = name[len("taichi.examples"):].lstrip(".").replace(".", os.sep)
                base = os.path.join(examples, rel)
                if os.path.isdir(base):
                    module.__path__ = [base]
                    return
                module.__file__ = base + ".py"
                with open(module.__file__) as f:
                    exec(compile(f.read(), module.__file__, "exec"), module.__dict__)

    sys.meta_path.insert(0, _TaichiAsFieldsim())
else:
    import taichi as ti

shown = [0]
frame_at = []  # perf_counter at each shown frame: compile is in the first, steady frames after
compile_s = [0.0]  # Taichi: frontend + first launch of each compiled kernel (its C++ compile)

def _stop_after(cls, name):
    original = getattr(cls, name)

    def show(self, *args, **kwargs):
        shown[0] += 1
        frame_at.append(time.perf_counter())
        if shown[0] >= frames:
            raise _Stop()
        return original(self, *args, **kwargs)  # Taichi's GUI is headless (show_gui=False)
    setattr(cls, name, show)

_stop_after(ti.GUI, "show")
if backend != "fieldsim":
    _gui_init = ti.GUI.__init__
    ti.GUI.__init__ = lambda self, *a, **k: _gui_init(self, *a, **{**k, "show_gui": False})
    _init = ti.init  # Taichi 1.7.4 crashes probing for a GPU on machines without one: the CPU
    ti.init = lambda arch=None, *a, **k: _init(ti.cpu, *a, **k)
    from taichi.lang import kernel_impl

    def _timed(original, first):
        def timed(self, *args, **kwargs):
            if not first(self, *args, **kwargs):
                return original(self, *args, **kwargs)
            t0 = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                compile_s[0] += time.perf_counter() - t0
        return timed
    launched = set()
    kernel_impl.Kernel.materialize = _timed(
        kernel_impl.Kernel.materialize,
        lambda self, key=None, *a, **k: key is None or key not in self.compiled_kernels)
    kernel_impl.Kernel.launch_kernel = _timed(
        kernel_impl.Kernel.launch_kernel,
        lambda self, t_kernel, *a: id(t_kernel) not in launched and not launched.add(id(t_kernel)))
try:
    _stop_after(ti.ui.Window, "show")
except AttributeError:
    pass
sys.argv = [program]
start = time.perf_counter()
try:
    runpy.run_path(program, run_name="__main__")
except (_Stop, SystemExit):
    pass
end = time.perf_counter()
if backend == "fieldsim":
    from fieldsim.lang import runtime as _runtime
    compile_s[0] = _runtime.get().stats["compile_s"]
print("EXAMPLE-TIMES " + json.dumps({"start": start, "frames": frame_at, "end": end,
                                     "compile_s": compile_s[0]}))
print(f"EXAMPLE-DONE {end - start:.2f} {shown[0]}")
'''


def programs(examples: Path, names: list[str]) -> list[Path]:
    found = sorted(p for p in examples.rglob("*.py")
                   if "__pycache__" not in p.parts and p.name != "__init__.py")
    if names:
        found = [p for p in found if any(n in str(p.relative_to(examples)) for n in names)]
    return found


def run_one(examples: Path, program: Path, backend: str, frames: int, timeout: float,
            python: str) -> dict:
    rel = str(program.relative_to(examples))
    with tempfile.TemporaryDirectory() as cwd:  # programs write their pictures where they run
        env = {**os.environ, "MPLBACKEND": "Agg"}
        if backend == "taichi":  # Taichi 1.7.4's ti.init(arch=ti.gpu) segfaults where no GPU works
            env.setdefault("TI_ARCH", "x64")
        start = time.perf_counter()
        try:
            proc = subprocess.run([python, "-c", _CHILD, str(examples), str(program), backend,
                                   str(frames)], check=False, cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"program": rel, "status": "timeout", "seconds": timeout, "detail": ""}
    out = (proc.stdout + proc.stderr).strip().splitlines()
    done = [line for line in out if line.startswith("EXAMPLE-DONE")]
    if proc.returncode == 0 and done:
        _, seconds, shown = done[-1].split()
        times = [line for line in out if line.startswith("EXAMPLE-TIMES ")]
        return {"program": rel, "status": "ok", "seconds": float(seconds), "frames": int(shown),
                "detail": "", "process_s": time.perf_counter() - start,
                "times": json.loads(times[-1].split(" ", 1)[1]) if times else None}
    detail = next((line for line in reversed(out) if line.strip()), f"exit {proc.returncode}")
    if proc.returncode < 0:
        detail = f"killed by signal {-proc.returncode}"
    return {"program": rel, "status": "error", "seconds": time.perf_counter() - start,
            "detail": detail[:300]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", required=True, type=Path, help="taichi/examples folder")
    parser.add_argument("--backend", default="fieldsim", choices=("fieldsim", "taichi"))
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter to run programs with (one that has the backend)")
    parser.add_argument("--frames", type=int, default=5, help="GUI frames before stopping")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("names", nargs="*", help="only programs whose path contains one of these")
    args = parser.parse_args(argv)
    from tqdm import tqdm
    results = []
    for program in tqdm(programs(args.examples, args.names), desc=args.backend, unit="program"):
        result = run_one(args.examples, program, args.backend, args.frames, args.timeout,
                         args.python)
        results.append(result)
        tqdm.write(f"{result['status']:8} {result['seconds']:7.1f}s  {result['program']}"
                   f"  {result['detail']}")
    ok = sum(r["status"] == "ok" for r in results)
    print(f"{ok} of {len(results)} programs ran")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
