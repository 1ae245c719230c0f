"""What a CUDA launch costs the host, measured without a GPU.

    python benchmarks/cuda_host_overhead.py [mpm88|diffmpm] [--reps 5]

Takes: nothing but this machine. Runs the real CUDA backend (`codegen/cuda.py`: launcher, launch
words, field tables, grid shapes, AD-stack tables, the Tape's replay) over the test suite's
host emulation of the driver (`tests/cuda/cuda_emu.py`) with its kernel launch replaced by
nothing, so what is timed is the Python work around each `cuLaunchKernel` (the driver call
itself, a few microseconds, is not in it). On a GPU, launch-bound programs (diffmpm's 6148
launches per iteration, mpm88's 4 per substep) spend about this per launch before the device
does anything (BENCHMARKS.md, the H200 section). Prints the median step time over `--reps`
steps and the time per launch.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cuda"))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "simulation"))

import fieldsim as fs  # noqa: E402
from cuda_emu import EmuDriver, use_emulator  # noqa: E402
from fieldsim.lang import runtime  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("program", nargs="?", default="diffmpm", choices=["mpm88", "diffmpm"])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    EmuDriver.launch = lambda self, fn, grid, block, words: None  # the device's work removed
    use_emulator(fs, sm_count=132)  # an H100/H200's SM count: the grid shapes a launch computes
    if args.program == "mpm88":
        import mpm88
        mpm88.setup(8192, 128)
        mpm88.reset()
        step = mpm88.substep
    else:
        import diffmpm as d
        d.setup(**d.FULL_SIZE)
        d.set_params(*d.initial_params(0))
        step = d.loss_and_grad
    step()  # compile
    rt = runtime.get()
    before = rt.stats["launches"]
    step()
    launches = rt.stats["launches"] - before
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    print(f"{args.program}: {t * 1e3:.2f} ms per step, {launches} launches, "
          f"{t / launches * 1e6:.1f} us per launch (host work only)")


if __name__ == "__main__":
    main()
