"""Wall time of every simulation example, fieldsim and (optionally) Taichi, and the README table.

Takes: the scripts in examples/simulation/ and, with `--taichi-python PY` (a Python with
taichi 1.7.4, e.g. /tmp/tivenv/bin/python), the same sources with `import fieldsim as ti`
changed to `import taichi as ti` (the only change; `diffmpm_checkpoint` is fieldsim-only).
Each run is a fresh process, `main()` called with the size's options and `--out` in a
temporary directory; the two backends alternate and the table quotes medians over
`--repeats`. Both offline caches are warm (one untimed run of each first).

Guarantees: `benchmarks/results_examples_time.json` holds every run (argv, process wall time,
the time `main` reports, losses, machine, load, commit), and the table between the
`examples_time` markers in examples/simulation/README.md is rewritten from it, never typed.

    python benchmarks/examples_time.py --taichi-python /tmp/tivenv/bin/python --repeats 3
    python benchmarks/examples_time.py --readme-only     # re-render the table from the JSON
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "simulation"
README = EXAMPLES / "README.md"
RESULTS = ROOT / "benchmarks" / "results_examples_time.json"
BEGIN, END = "<!-- examples_time:begin -->", "<!-- examples_time:end -->"

# (example, size) -> extra options; "quick" is what tests/examples runs, "full" the defaults
SIZES = {
    "quick": {n: ["--quick"] for n in ("mpm88", "ad_gravity", "diffmpm", "mass_spring",
                                       "billiards", "wave", "diffmpm_checkpoint")},
    "full": {"mpm88": [], "ad_gravity": [], "diffmpm": ["--iters", "30"], "mass_spring": [],
             "billiards": [], "wave": [], "diffmpm_checkpoint": []},
}
FIELDSIM_ONLY = {"diffmpm_checkpoint"}

_DRIVER = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import importlib
m = importlib.import_module(sys.argv[2])
r = m.main(sys.argv[3:])
keep = {}
for k in ("seconds", "initial_loss", "final_loss", "loss", "initial_displacement",
          "final_displacement", "mean_y", "grad_rel_err"):
    if k in r:
        keep[k] = float(r[k])
keep["python_seconds"] = time.perf_counter() - t0
print("RESULT " + json.dumps(keep))
"""


def _run(python, src_dir, name, argv, env):
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        done = subprocess.run([python, "-c", _DRIVER, str(src_dir), name, *argv, "--out", out],
                              capture_output=True, text=True, env=env, cwd=out, check=False)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": (done.stdout + done.stderr)[-2000:]}
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    r = json.loads(line[7:])
    r["process_s"] = wall
    r["load_1min"] = os.getloadavg()[0]
    return r


def measure(args):
    env_fs = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    env_ti = dict(os.environ, PYTHONPATH="", MPLBACKEND="Agg")
    ti_dir = pathlib.Path(tempfile.mkdtemp(prefix="examples_taichi_"))
    for src in EXAMPLES.glob("*.py"):
        (ti_dir / src.name).write_text(
            src.read_text().replace("import fieldsim as ti", "import taichi as ti"))
    backends = [("fieldsim", sys.executable, EXAMPLES, env_fs)]
    if args.taichi_python:
        backends.append(("taichi", args.taichi_python, ti_dir, env_ti))
    runs = []
    jobs = [(size, name) for size in args.sizes for name in SIZES[size]
            if not args.only or name in args.only]
    for size, name in tqdm(jobs, desc="examples"):
        argv = SIZES[size][name]
        for rep in range(-1, args.repeats):  # rep -1: warm the offline caches, not recorded
            for backend, python, src, env in backends:
                if backend == "taichi" and name in FIELDSIM_ONLY:
                    continue
                r = _run(python, src, name, argv, env)
                if rep >= 0:
                    runs.append(dict(r, example=name, size=size, backend=backend, argv=argv,
                                     repeat=rep))
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = "?"
    return {
        "_machine": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "cpu_count": os.cpu_count(), "platform": platform.platform(),
                     "python": platform.python_version(), "fieldsim_commit": commit,
                     "taichi_python": args.taichi_python, "repeats": args.repeats},
        "runs": runs,
    }


def _median(rs, key):
    vals = [r[key] for r in rs if key in r]
    return statistics.median(vals) if vals else None


def _fmt_s(v):
    return "" if v is None else (f"{v:.1f}" if v < 100 else f"{v:.0f}")


def _result(rs):
    r = next((r for r in rs if "error" not in r), None)
    if r is None:
        return "failed: " + rs[0]["error"].strip().splitlines()[-1][:80] if rs else ""
    if "initial_displacement" in r:
        return f"displacement {r['initial_displacement']:+.3f} → {r['final_displacement']:+.3f}"
    if "initial_loss" in r:
        return f"loss {r['initial_loss']:.3g} → {r['final_loss']:.3g}"
    if "grad_rel_err" in r:
        return f"forces vs NumPy f64: {r['grad_rel_err']:.1e}"
    if "mean_y" in r:
        return f"mean height {r['mean_y']:.3f}"
    if "loss" in r:
        return f"loss {r['loss']:.4f} (one gradient)"
    return ""


def table(data):
    m = data["_machine"]
    lines = [
        f"Generated by `benchmarks/examples_time.py` on {m['date']} (fieldsim `{m['fieldsim_commit']}`, "
        f"{m['cpu_count']} cores, Python {m['python']}; medians of {m['repeats']} alternated runs "
        "per backend, offline caches warm). **process**: wall time of the whole interpreter "
        "(start-up, compile, training, frames, GIF); **main**: the time `main()` reports "
        "around its loop. Taichi ran the same source with only the import line changed. "
        "Load average during the runs: "
        f"{min(r['load_1min'] for r in data['runs'] if 'load_1min' in r):.1f} to "
        f"{max(r['load_1min'] for r in data['runs'] if 'load_1min' in r):.1f} "
        "(a shared machine: read the ratios, not the absolute times).",
        "",
        "| example | size | fieldsim process (s) | fieldsim main (s) | Taichi process (s) | Taichi main (s) | fieldsim result | Taichi result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = []
    for r in data["runs"]:
        if (r["example"], r["size"]) not in keys:
            keys.append((r["example"], r["size"]))
    for name, size in keys:
        fs = [r for r in data["runs"] if (r["example"], r["size"], r["backend"]) == (name, size, "fieldsim")]
        ti = [r for r in data["runs"] if (r["example"], r["size"], r["backend"]) == (name, size, "taichi")]
        opts = " ".join(SIZES[size][name]) or "(defaults)"
        if name in FIELDSIM_ONLY:
            ti_cells = ["fieldsim only", "", ""]
        elif not ti:
            ti_cells = ["not run", "", ""]
        else:
            ti_cells = [_fmt_s(_median(ti, "process_s")), _fmt_s(_median(ti, "seconds")), _result(ti)]
        lines.append(f"| `{name}` | `{opts}` | {_fmt_s(_median(fs, 'process_s'))} | "
                     f"{_fmt_s(_median(fs, 'seconds'))} | {ti_cells[0]} | {ti_cells[1]} | "
                     f"{_result(fs)} | {ti_cells[2]} |")
    return "\n".join(lines)


def rewrite_readme(data):
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + "\n" + table(data) + "\n" + text[end:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--taichi-python", default=None, help="a Python with taichi installed")
    ap.add_argument("--sizes", nargs="+", default=["quick", "full"], choices=sorted(SIZES))
    ap.add_argument("--only", nargs="*", default=None, help="only these examples")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--readme-only", action="store_true", help="re-render from the JSON")
    args = ap.parse_args(argv)
    if args.readme_only:
        data = json.loads(RESULTS.read_text())
    else:
        data = measure(args)
        RESULTS.write_text(json.dumps(data, indent=1))
    rewrite_readme(data)
    print(table(data))


if __name__ == "__main__":
    main()
