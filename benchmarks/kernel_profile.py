"""Per-kernel launch times of the benchmark programs, under fieldsim or Taichi (same source).

    python benchmarks/kernel_profile.py {fieldsim|taichi} {diffmpm|mpm88|mpm_pair|diffmpm_full|mpm_pair_full} [reps]

Takes: a backend and a program (`_full`: diffmpm.FULL_SIZE, 6418 particles). diffmpm: each kernel (forward and adjoint) is launched `reps`
times in a loop (after one warm-up launch; its kernels only write what they do not read) and
the median of 5 such loops is kept. mpm88 and mpm_pair: the substep's kernels are launched in
order, each timed alone (launch + sync), the substep repeated `reps` times; medians.
Prints one JSON line: {kernel: microseconds per launch} plus, for diffmpm, `cpu_us` (process CPU
time per launch, all threads, the lowest of the 5 loops) and `launches`: how many
times one optimisation iteration launches each kernel, so per-kernel time per iteration is
`us * launches`. Guarantees nothing about the values the kernels leave behind (adjoints run on
the same state over and over); it only times them. BENCH_THREADS sets the thread count.
"""
import json
import os
import statistics
import sys
import time

backend, program = sys.argv[1], sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
if backend == "taichi":
    import taichi
    sys.modules["fieldsim"] = taichi
import fieldsim as ti

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "simulation"))
ti.init(arch=ti.cpu, cpu_max_num_threads=int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1)),
        random_seed=0, offline_cache=False)


CPU_US = {}  # kernel -> process CPU time per launch (all threads), the lowest of 5 loops


def per_launch_us(fn, *args):
    fn(*args)
    ti.sync()
    loops, cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            fn(*args)
        ti.sync()
        loops.append((time.perf_counter() - t0) / reps * 1e6)
        cpu.append((time.process_time() - c0) / reps * 1e6)
    CPU_US[getattr(fn, "__name__", str(fn))] = min(cpu)
    return statistics.median(loops)


def profile_diffmpm(full=False):
    import diffmpm as d
    d.setup(**d.FULL_SIZE) if full else d.setup()
    W, b = d.initial_params(0)
    d.set_params(W, b)
    d.loss_and_grad()  # compiles everything, fills the trajectory
    s = d.steps // 2
    calls = {
        "compute_actuation": (d.compute_actuation, s), "clear_grid": (d.clear_grid,),
        "p2g": (d.p2g, s), "grid_op": (d.grid_op,), "g2p": (d.g2p, s),
        "g2p.grad": (d.g2p.grad, s), "grid_op.grad": (d.grid_op.grad,),
        "p2g.grad": (d.p2g.grad, s), "compute_actuation.grad": (d.compute_actuation.grad, s),
    }
    out, cpu = {}, {}
    for name, (fn, *args) in calls.items():
        out[name] = per_launch_us(fn, *args)
        cpu[name] = CPU_US.pop(getattr(fn, "__name__", str(fn)))
    # CPU time is steadier than wall time on a shared machine (another job's load slows a
    # launch's wall time, not the CPU time it takes)
    out["cpu_us"] = cpu
    n = d.steps
    # forward: actuation + 4 kernels per substep; backward: the recomputed grid (3 kernels),
    # 3 adjoints and the actuation adjoint per substep (init_state / compute_loss: once each)
    out["launches"] = {"compute_actuation": n, "clear_grid": 2 * n, "p2g": 2 * n,
                       "grid_op": 2 * n, "g2p": n, "g2p.grad": n, "grid_op.grad": n,
                       "p2g.grad": n, "compute_actuation.grad": n}
    return out


def in_sequence_us(calls):
    """Median time of each (name, fn, args) when launched in order, the sequence repeated."""
    times = {name: [] for name, _, _ in calls}
    for r in range(reps + 1):
        for name, fn, args in calls:
            t0 = time.perf_counter()
            fn(*args)
            ti.sync()
            if r:  # the first pass is a warm-up
                times[name].append((time.perf_counter() - t0) * 1e6)
    return {name: statistics.median(v) for name, v in times.items()}


def profile_mpm88():
    import mpm88 as m
    m.setup(8192, 128)
    m.reset()
    # launched in substep order: repeating one kernel alone would push particles off the grid
    return in_sequence_us([(k, getattr(m, k), ()) for k in
                           ("clear_grid", "particle_to_grid", "update_grid", "grid_to_particle")])


def profile_mpm_pair(full=False):
    import diffmpm as d
    d.setup(**d.FULL_SIZE) if full else d.setup()
    d.init_state()
    d.compute_actuation(0)
    return in_sequence_us([("clear_grid", d.clear_grid, ()), ("p2g", d.p2g, (0,)),
                           ("grid_op", d.grid_op, ()), ("g2p", d.g2p, (0,))])


result = {"diffmpm": profile_diffmpm, "mpm88": profile_mpm88, "mpm_pair": profile_mpm_pair,
          "diffmpm_full": lambda: profile_diffmpm(True),
          "mpm_pair_full": lambda: profile_mpm_pair(True)}[program]()
print(json.dumps({"backend": backend, "program": program, "us": result}))
