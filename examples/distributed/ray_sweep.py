"""ray_sweep: N independent fieldsim optimisations (shots.py, one target per seed) run as Ray
tasks, gathered into one table and one plot, with a progress bar.

    python ray_sweep.py --n 8                      # a local Ray cluster on this machine
    python ray_sweep.py --n 64 --address HOST:6379 # an existing cluster (or set RAY_ADDRESS)
    python ray_sweep.py --n 8 --serial             # the same N optimisations in this process

Ray is the engine (scheduling, retries, the cluster); this script only maps `shots.optimise`
over the configs. Each worker process sets up its fields and compiles the kernels once (through
fieldsim's offline cache, so a second worker on the same machine reads the compiled objects
from disk) and reuses them for every task it runs. A worker that dies mid-task is replaced and
the task retried (`max_retries`); the results are the same bit for bit, because
`shots.optimise` is a pure function of its config.
"""
import argparse
import csv
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import shots


class SweepConfigError(RuntimeError):
    """Ray missing, or a cluster address that cannot be reached."""


def configs(n, iters, steps, crash_marker=None):
    out = [{"seed": s, "iters": iters, "steps": steps} for s in range(n)]
    if crash_marker:
        out[0]["crash_marker"] = crash_marker
    return out


def run_serial(cfgs, progress=True):
    from tqdm import tqdm
    return [shots.optimise(c) for c in tqdm(cfgs, desc="serial", disable=not progress)]


def _import_ray():
    try:
        import ray
    except ImportError:
        raise SweepConfigError("Ray is not installed: pip install 'fieldsim[ray]' (or pip install "
                               "ray), or run with --serial") from None
    return ray


def _check_reachable(address, timeout=5.0):
    """Fail fast, with the address in the message, where Ray itself would retry for minutes."""
    if address in (None, "", "auto", "local"):
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SweepConfigError(f"Ray address {address!r} is not HOST:PORT (or ray://HOST:PORT)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise SweepConfigError(f"cannot reach the Ray cluster at {address!r} ({err}); start it "
                               "with `ray start --head`, or leave --address/RAY_ADDRESS unset to "
                               "start a local one") from None


def _runtime_env(address):
    """Workers must import shots.py: on this machine through PYTHONPATH, on a cluster by
    shipping this folder (Ray's working_dir)."""
    if address in (None, "", "local"):
        path = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)
        return {"env_vars": {"PYTHONPATH": path}}
    return {"working_dir": HERE}


def connect(address=None, num_cpus=None):
    """ray.init: a local cluster when no address (nor RAY_ADDRESS) is given, else that cluster."""
    ray = _import_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    _check_reachable(address)
    if ray.is_initialized():
        return ray
    kwargs = {"runtime_env": _runtime_env(address), "include_dashboard": False,
              "log_to_driver": False}
    if address is None:
        kwargs["num_cpus"] = num_cpus
    else:
        kwargs["address"] = address
    ray.init(**kwargs)
    return ray


def run_ray(cfgs, max_retries=3, progress=True):
    """One Ray task per config; results in config order, shown as they finish."""
    import ray
    from tqdm import tqdm
    task = ray.remote(num_cpus=1, max_retries=max_retries)(shots.optimise)
    refs = [task.remote(c) for c in cfgs]
    order = {r: k for k, r in enumerate(refs)}
    results = [None] * len(refs)
    pending = list(refs)
    with tqdm(total=len(refs), desc="ray", disable=not progress) as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                results[order[r]] = ray.get(r)
                bar.update(1)
    return results


def same_results(a, b):
    """Bit-identical optimisation results (ignoring where and how fast they ran)."""
    keys = ("seed", "target", "velocity", "losses")
    return all(x[k] == y[k] for x, y in zip(a, b) for k in keys) and len(a) == len(b)


def report(results, out):
    os.makedirs(out, exist_ok=True)
    table = os.path.join(out, "results.csv")
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["seed", "target_x", "target_y", "vx", "vy", "initial_loss", "final_loss",
                    "seconds", "worker_pid", "compiled_here"])
        for r in results:
            w.writerow([r["seed"], *r["target"], *r["velocity"], r["losses"][0], r["losses"][-1],
                        f"{r['seconds']:.3f}", r["pid"], r["compiled_here"]])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in results:
        ax.semilogy(r["losses"], label=f"seed {r['seed']}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss |x(T) - target|^2")
    ax.set_title(f"{len(results)} optimisations")
    if len(results) <= 10:
        ax.legend(fontsize=7)
    fig.tight_layout()
    plot = os.path.join(out, "losses.png")
    fig.savefig(plot, dpi=100)
    plt.close(fig)
    print(f"{'seed':>4} {'final loss':>12} {'worker':>8}")
    for r in results:
        print(f"{r['seed']:>4} {r['losses'][-1]:>12.3e} {r['pid']:>8}")
    return {"table": table, "plot": plot}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="number of optimisations")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--address", default=None,
                    help="a Ray cluster (HOST:PORT or ray://HOST:PORT); default RAY_ADDRESS, else "
                         "a local cluster")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local cluster")
    ap.add_argument("--serial", action="store_true", help="run in this process, without Ray")
    ap.add_argument("--out", default=os.path.join("out", "ray_sweep"))
    ap.add_argument("--quick", action="store_true", help="a tiny run (n=2, 5 iterations)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.iters, args.steps = 2, 5, 50
    cfgs = configs(args.n, args.iters, args.steps)
    t0 = time.perf_counter()
    if args.serial:
        results = run_serial(cfgs)
    else:
        try:
            connect(args.address, args.num_cpus)
        except SweepConfigError as err:
            raise SystemExit(f"error: {err}") from None
        results = run_ray(cfgs)
    wall = time.perf_counter() - t0
    paths = report(results, args.out)
    print(f"{len(results)} optimisations in {wall:.2f} s ({'serial' if args.serial else 'Ray'}); "
          f"table {paths['table']}, plot {paths['plot']}")
    return {"results": results, "wall_s": wall, **paths}


if __name__ == "__main__":
    main()
