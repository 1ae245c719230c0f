"""Time of Taichi 1.7.4's bundled example programs under fieldsim and under Taichi (CPU).

Takes: the examples folder of a Taichi wheel (`--examples`), a Python with Taichi 1.7.4
(`--taichi-python`), program name filters. Each program runs unmodified in a fresh process
through `scripts/taichi_examples.py` (GUIs stopped after `--frames` frames; Taichi on
`TI_ARCH=x64`, its GUI headless), the two backends alternating, `--repeats` times.

Guarantees: every run is kept in `--json` under `--label` (other labels in the file are kept,
so a "before" and an "after" sit side by side), with the machine, the commit and the 1-minute
load; the summary per program and backend holds medians over the repeats of the process wall
time, the time to the first frame (imports, compiles, the first frame's work), the steady
frame (the median interval between frames after the second) and the compile time the
backend reports (fieldsim: its `compile_s` counter; Taichi: the frontend plus the first launch
of each compiled kernel, measured by the runner). Programs without a GUI have only the
process time and the compile time. Run it without `PYTHONDONTWRITEBYTECODE` (Taichi's wheel
ships its .pyc files; without a bytecode cache fieldsim's import recompiles its sources every
process, about 1.5 s here).

    python benchmarks/taichi_examples_time.py --examples .../site-packages/taichi/examples \
        --taichi-python /tmp/tivenv/bin/python --repeats 3 --label before
"""
import argparse
import importlib.util
import itertools
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results_taichi_examples_time.json"


def _runner():
    spec = importlib.util.spec_from_file_location("taichi_examples",
                                                  ROOT / "scripts" / "taichi_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _phases(result: dict) -> dict:
    """Process, first-frame, steady-frame and compile seconds of one successful run."""
    out = {"process_s": result["process_s"]}
    times = result.get("times") or {}
    out["compile_s"] = times.get("compile_s")
    frames = times.get("frames") or []
    if frames:
        out["first_frame_s"] = frames[0] - times["start"]
    gaps = [b - a for a, b in itertools.pairwise(frames[1:])]
    if gaps:
        out["steady_frame_s"] = statistics.median(gaps)
    return out


def summarize(runs: list[dict]) -> dict:
    """program -> backend -> {phase: median over the successful repeats, status}."""
    table: dict = {}
    for run in runs:
        table.setdefault(run["program"], {}).setdefault(run["backend"], []).append(run)
    summary = {}
    for program, backends in table.items():
        summary[program] = {}
        for backend, rs in backends.items():
            ok = [_phases(r) for r in rs if r["status"] == "ok"]
            row = {"status": "ok" if ok else rs[-1]["status"], "runs": len(ok)}
            if not ok:
                row["detail"] = rs[-1].get("detail", "")
            for key in ("process_s", "first_frame_s", "steady_frame_s", "compile_s"):
                vals = [p[key] for p in ok if p.get(key) is not None]
                if vals:
                    row[key] = statistics.median(vals)
            summary[program][backend] = row
    return summary


def _run(runner, args, program, backend, python) -> dict:
    """One run; `fieldsim-base` is fieldsim imported from `--baseline`."""
    saved = os.environ.get("PYTHONPATH")
    if backend == "fieldsim-base":
        os.environ["PYTHONPATH"] = str(args.baseline)
    try:
        return runner.run_one(args.examples, program, backend.split("-")[0], args.frames,
                              args.timeout, python)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def _ms(row: dict, key: str) -> str:
    return f"{row[key] * 1e3:.0f}" if row.get(key) is not None else ""


def table(entry: dict) -> str:
    """A markdown table of one label's summary: per program and backend the medians (process
    s, first frame ms, steady frame ms, compile ms) and fieldsim's steady frame over Taichi's."""
    lines = [("| program | backend | process (s) | first frame (ms) | steady frame (ms) | "
              "compile (ms) | steady vs Taichi |"), "|---|---|---|---|---|---|---|"]
    for program, backends in sorted(entry["summary"].items()):
        taichi = backends.get("taichi", {})
        for backend, row in backends.items():
            if row["status"] != "ok":
                lines.append(f"| {program} | {backend} | {row['status']}: "
                             f"{row.get('detail', '')[:60]} | | | | |")
                continue
            ratio = ""
            if backend != "taichi" and row.get("steady_frame_s") and taichi.get("steady_frame_s"):
                ratio = f"{row['steady_frame_s'] / taichi['steady_frame_s']:.2f}x"
            lines.append(f"| {program} | {backend} | {row['process_s']:.2f} | "
                         f"{_ms(row, 'first_frame_s')} | {_ms(row, 'steady_frame_s')} | "
                         f"{_ms(row, 'compile_s')} | {ratio} |")
    return "\n".join(lines)


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", required=True, type=pathlib.Path)
    parser.add_argument("--taichi-python", default="/tmp/tivenv/bin/python")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--label", default="run")
    parser.add_argument("--baseline", type=pathlib.Path,
                        help="a folder holding another fieldsim package (e.g. `git archive` of an "
                             "earlier commit): backend `fieldsim-base` runs it")
    parser.add_argument("--backends", default="fieldsim,taichi")
    parser.add_argument("--json", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--skip", nargs="*", default=[],
                        help="leave out programs whose path contains one of these")
    parser.add_argument("--table", action="store_true",
                        help="print the markdown table of `--label` from `--json`, run nothing")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(args.json.read_text())[args.label]))
        return 0
    runner = _runner()
    backends = {"fieldsim": sys.executable, "fieldsim-base": sys.executable,
                "taichi": args.taichi_python}
    chosen = args.backends.split(",")
    runs = []
    chosen_programs = [p for p in runner.programs(args.examples, args.names)
                       if not any(s in str(p) for s in args.skip)]
    jobs = [(p, r, b) for p in chosen_programs
            for r in range(args.repeats)
            for b in (chosen if r % 2 == 0 else chosen[::-1])]  # alternate the order
    for program, repeat, backend in tqdm(jobs, unit="run"):
        load = os.getloadavg()[0]
        result = _run(runner, args, program, backend, backends[backend])
        result.update(backend=backend, repeat=repeat, load_1min=load)
        runs.append(result)
        tqdm.write(f"{backend:8} {result['status']:6} {result.get('process_s', 0):6.2f}s "
                   f"{result['program']} {result['detail'][:80]}")
    data = json.loads(args.json.read_text()) if args.json.exists() else {}
    data[args.label] = {
        "machine": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "fieldsim_commit": _commit(),
                    "frames": args.frames, "repeats": args.repeats,
                    "bytecode_cache": not os.environ.get("PYTHONDONTWRITEBYTECODE")},
        "runs": runs, "summary": summarize(runs)}
    args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
