"""fieldsim on a CUDA device: bandwidth, the MPM scatter/gather kernels against it, and the
programs at the sizes users run.

    python benchmarks/gpu_measure.py [--reps 20] [--out results_gpu.json]

Takes: a CUDA device (fieldsim's `fs.cuda` backend); torch, where installed, for the reference
copy. Measures, in this process:

* copy bandwidth: a fieldsim copy kernel (`b[i] = a[i]`, 2^26 f32, 512 MiB moved per launch)
  and torch's device-to-device copy of the same bytes; the device's copy bandwidth is the
  larger of the two;
* mpm88's four kernels at 2^21 particles on a 2048^2 grid (the example's density of 0.5
  particles per cell): each launch timed alone (synchronised before and after), and its
  bandwidth two ways: `access` bytes (every field load and store its element size, an atomic
  both, as benchmarks/roofline.py counts them from the kernel's IR) and `compulsory` bytes
  (each particle field read or written once, the grid fields' footprint: the DRAM traffic a
  perfect cache would leave). p2g and g2p as a fraction of the copy bandwidth is issue #16's
  measure (goal 70%);
* mpm88's substep at the benchmark size (8192 particles, 128^2): launch-bound on a GPU;
* gravity N=2048 and N=16384: the energy kernel's first launch (compile included), its warm
  launch, the adjoint's, and a Tape step;
* diffmpm at full size (6418 particles, 512 steps): the first forward + backward iteration
  (compiles included) and the warm one.

Times are medians of `--reps` launches (warm: compiled and run once first). Guarantees: timing
only; nothing is written but `--out`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "simulation"))

import fieldsim as ti  # noqa: E402


def timed_launch(fn, reps):
    """Median seconds of one synchronised call of fn, after one warm call."""
    fn()
    ti.sync()
    out = []
    for _ in range(reps):
        ti.sync()
        t0 = time.perf_counter()
        fn()
        ti.sync()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def first_launch(fn):
    ti.sync()
    t0 = time.perf_counter()
    fn()
    ti.sync()
    return time.perf_counter() - t0


def device_info():
    from fieldsim.codegen import cuda
    d = cuda.driver()
    info = {"device": d.device_name, "cc": list(d.cc), "sm_count": d.sm_count,
            "cuda_driver_binding": d.name, "ptx_arch": cuda.device_arch(d.cc)}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total,clocks.max.sm",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        info["nvidia_smi"] = q.stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        info["nvidia_smi"] = f"unavailable: {e}"
    import llvmlite
    info["llvmlite"] = llvmlite.__version__
    return info


def bandwidth(reps):
    n = 1 << 26
    a, b = ti.field(ti.f32, shape=n), ti.field(ti.f32, shape=n)
    a.fill(1.0)

    @ti.kernel
    def copy():
        for i in range(n):
            b[i] = a[i]

    out = {"copy_gbs": 8.0 * n / timed_launch(copy, reps) / 1e9}
    try:
        import torch
        x = torch.ones(n, dtype=torch.float32, device="cuda")
        y = torch.empty_like(x)

        def tcopy():
            y.copy_(x)
            torch.cuda.synchronize()
        tcopy()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            tcopy()
            ts.append(time.perf_counter() - t0)
        out["torch_copy_gbs"] = 8.0 * n / statistics.median(ts) / 1e9
        del x, y
    except Exception as e:  # torch absent or without CUDA: the fieldsim copy alone
        out["torch_copy_error"] = f"{type(e).__name__}: {e}"
    out["device_copy_gbs"] = max(out["copy_gbs"], out.get("torch_copy_gbs", 0.0))
    return out


def mpm88_large(reps, n_particles=1 << 21, n_grid=2048):
    import mpm88
    from roofline import footprint, kernel_counts
    # the example's DT is stable on its 128^2 grid (sound speed 20: CFL 0.5); a finer grid
    # needs a proportionally shorter step, or particles leave the grid in a few substeps
    dt, mpm88.DT = mpm88.DT, 2e-4 * 128 / n_grid
    try:
        out = {}
        for order in ("random", "by_cell"):
            init()
            out[order] = _mpm88_large(mpm88, reps, n_particles, n_grid, footprint, kernel_counts,
                                      order == "by_cell")
        return out
    finally:
        mpm88.DT = dt


def _mpm88_large(mpm88, reps, n_particles, n_grid, footprint, kernel_counts, by_cell):
    """`by_cell`: particles sorted by their grid cell first (as MPM codes re-sort them every
    few steps), so a warp's scatters and gathers touch neighbouring cells; else the example's
    order (random)."""
    mpm88.setup(n_particles, n_grid)
    mpm88.reset()
    if by_cell:
        x, v = mpm88.x.to_numpy(), mpm88.v.to_numpy()
        cell = (x * n_grid).astype(np.int64)
        order = np.argsort(cell[:, 0] * n_grid + cell[:, 1], kind="stable")
        mpm88.x.from_numpy(x[order])
        mpm88.v.from_numpy(v[order])
    for _ in range(3):
        mpm88.substep()
    ti.sync()
    kernels = [mpm88.clear_grid, mpm88.particle_to_grid, mpm88.update_grid, mpm88.grid_to_particle]
    times = {k.__name__: [] for k in kernels}
    for _ in range(reps):  # whole substeps, each kernel synchronised alone
        for k in kernels:
            ti.sync()
            t0 = time.perf_counter()
            k()
            ti.sync()
            times[k.__name__].append(time.perf_counter() - t0)
    cells = n_grid * n_grid
    # bytes a perfect cache leaves: particle fields once each way, grid fields' footprint
    compulsory = {"clear_grid": 12 * cells,
                  "particle_to_grid": 36 * n_particles + 2 * 12 * cells,
                  "update_grid": 2 * 12 * cells,
                  "grid_to_particle": 12 * n_particles + 36 * n_particles + 8 * cells}
    rows = {}
    for k in kernels:
        name = k.__name__
        t = statistics.median(times[name])
        ir = next(iter(k._cache.values())).ir
        counts = kernel_counts(ir.body)
        row = {"ms": t * 1e3, "compulsory_bytes": compulsory[name],
               "compulsory_gbs": compulsory[name] / t / 1e9}
        if counts is not None:
            row.update(access_bytes=counts[1], access_gbs=counts[1] / t / 1e9,
                       atomic_bytes=counts[2], footprint=footprint(ir.body))
        rows[name] = row
    ok = bool(np.isfinite(mpm88.x.to_numpy()).all())
    return {"n_particles": n_particles, "n_grid": n_grid, "kernels": rows, "finite": ok}


def mpm88_small(reps):
    import mpm88
    mpm88.setup(8192, 128)
    mpm88.reset()
    first = first_launch(mpm88.substep)
    return {"first_s": first, "substep_ms": timed_launch(mpm88.substep, reps) * 1e3}


def gravity(n, reps):
    import ad_gravity as g
    init()  # a fresh runtime: the kernels compile again for this n
    g.setup(n)
    g.x.from_numpy(g.initial_state(n)[0].astype(np.float32))
    out = {"n": n, "fwd_first_s": first_launch(g.compute_U)}
    out["fwd_ms"] = timed_launch(g.compute_U, reps) * 1e3
    g.U.grad[None] = 1.0
    out["adj_first_s"] = first_launch(g.compute_U.grad)
    out["adj_ms"] = timed_launch(g.compute_U.grad, reps) * 1e3
    out["tape_step_ms"] = timed_launch(g.forces, reps) * 1e3
    pairs = n * (n - 1) / 2
    out["fwd_gpairs_per_s"] = pairs / out["fwd_ms"] * 1e-6
    out["U"] = float(g.U[None])
    return out


def diffmpm_full(reps):
    import diffmpm as d
    d.setup(**d.FULL_SIZE)
    d.set_params(*d.initial_params(0))
    out = {"n_particles": int(d.n_particles), "steps": int(d.steps),
           "first_iter_s": first_launch(d.loss_and_grad)}
    out["iter_ms"] = timed_launch(d.loss_and_grad, reps) * 1e3
    out["loss"] = float(d.loss[None])
    return out


def init():
    from fieldsim.lang import runtime
    ti.init(arch=ti.cuda, offline_cache=False, random_seed=0)
    if runtime.get().arch != ti.cuda:
        sys.exit("no CUDA device: fs.init(arch=fs.cuda) fell back to the CPU")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results_gpu.json"))
    ap.add_argument("--only", default="bandwidth,mpm88_large,mpm88_small,gravity,diffmpm_full")
    args = ap.parse_args(argv)
    init()
    result = {"machine": device_info()}
    wanted = args.only.split(",")
    steps = {"bandwidth": lambda: bandwidth(args.reps),
             "mpm88_large": lambda: mpm88_large(max(5, args.reps // 2)),
             "mpm88_small": lambda: mpm88_small(args.reps),
             "gravity": lambda: [gravity(n, max(5, args.reps // 2)) for n in (2048, 16384)],
             "diffmpm_full": lambda: diffmpm_full(max(3, args.reps // 5))}
    for name in wanted:
        t0 = time.perf_counter()
        try:
            init()  # each part compiles its kernels in a fresh runtime
            result[name] = steps[name]()
        except Exception as e:  # report and go on: one device call should bring back the rest
            import traceback
            result[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        print(f"--- {name} ({time.perf_counter() - t0:.1f}s)\n{json.dumps(result[name], indent=1)}",
              flush=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    if "bandwidth" in result and "random" in result.get("mpm88_large", {}):
        bw = result["bandwidth"]["device_copy_gbs"]
        for order, rows in result["mpm88_large"].items():
            for k in ("particle_to_grid", "grid_to_particle"):
                r = rows["kernels"][k]
                print(f"{order:8s} {k}: {r['ms']:.3f} ms, compulsory {r['compulsory_gbs']:.0f} GB/s "
                      f"({r['compulsory_gbs'] / bw:.0%} of copy {bw:.0f} GB/s), access "
                      f"{r.get('access_gbs', float('nan')):.0f} GB/s "
                      f"({r.get('access_gbs', float('nan')) / bw:.0%})")


if __name__ == "__main__":
    main()
