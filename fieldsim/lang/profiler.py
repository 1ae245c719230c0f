"""`fs.profiler`: Taichi's profiler names over fieldsim's own launch and compile timings.

Takes timings from the kernel launcher: with `fs.init(kernel_profiler=True)` every kernel launch
(adjoint launches as `<name>.grad`) records its wall time, device-synchronised, in the current
runtime. Guarantees: `query_kernel_profiler_info(name)` gives Taichi's fields (`counter`, `min`,
`max`, `avg`, in milliseconds); without `kernel_profiler=True` nothing is recorded and the print
functions say how to enable it. CUPTI metrics (a CUDA toolkit feature of Taichi) are not
available and raise `FieldsimRuntimeError`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from fieldsim.errors import FieldsimRuntimeError


@dataclass
class KernelProfilerQueryResult:
    """Taichi's query result: launch count and min/max/avg wall time in milliseconds."""

    counter: int = 0
    min: float = 0.0
    max: float = 0.0
    avg: float = 0.0


class KernelProfile:
    """Per-runtime records: kernel name -> launch times (seconds), in launch order."""

    def __init__(self):
        self.launches: list[tuple[str, float]] = []

    def record(self, name: str, seconds: float):
        self.launches.append((name, seconds))

    def by_kernel(self) -> dict:
        out: dict = {}
        for name, t in self.launches:
            out.setdefault(name, []).append(t)
        return out


def timed(rt, name: str, launch):
    """Run `launch()`; when the profiler is on, record its wall time under `name`."""
    if not rt.kernel_profiler:
        return launch()
    t0 = time.perf_counter()
    result = launch()
    if rt.device is not None:
        rt.device.sync()
    rt.profile.record(name, time.perf_counter() - t0)
    return result


def _rt():
    from fieldsim.lang import runtime
    return runtime.get()


def _enabled(rt) -> bool:
    if not rt.kernel_profiler:
        print("fs.profiler: the kernel profiler is off; enable it with "
              "fs.init(kernel_profiler=True)")
        return False
    return True


def query_kernel_profiler_info(name: str) -> KernelProfilerQueryResult:
    times = _rt().profile.by_kernel().get(name, [])
    if not times:
        return KernelProfilerQueryResult()
    ms = [t * 1e3 for t in times]
    return KernelProfilerQueryResult(len(ms), min(ms), max(ms), sum(ms) / len(ms))


def clear_kernel_profiler_info():
    _rt().profile.launches.clear()


def get_kernel_profiler_total_time() -> float:
    """Total recorded launch time in seconds."""
    return sum(t for _, t in _rt().profile.launches)


def set_kernel_profiler_toolkit(toolkit_name: str = "default") -> bool:
    """Only the default (wall-clock) toolkit exists; returns whether `toolkit_name` is it."""
    return toolkit_name == "default"


def print_kernel_profiler_info(mode: str = "count"):
    """Taichi's table: per kernel (mode='count') or per launch (mode='trace')."""
    if mode not in ("count", "trace"):
        raise ValueError(f"print_kernel_profiler_info: mode must be 'count' or 'trace', got {mode!r}")
    rt = _rt()
    if not _enabled(rt):
        return
    total = sum(t for _, t in rt.profile.launches) or 1e-30
    bar = "=" * 73
    print(bar)
    print(f"Kernel Profiler({mode}, default) @ {rt.arch.upper()}")
    print(bar)
    if mode == "count":
        print("[      %     total   count |      min       avg       max   ] Kernel name")
        print("-" * 73)
        rows = sorted(rt.profile.by_kernel().items(), key=lambda kv: -sum(kv[1]))
        for name, times in rows:
            ms = [t * 1e3 for t in times]
            print(f"[{100 * sum(times) / total:6.2f}% {sum(times):7.3f} s {len(ms):6d}x |"
                  f"{min(ms):9.3f} {sum(ms) / len(ms):9.3f} {max(ms):9.3f} ms] {name}")
        count = len(rows)
    else:
        print("[ % duration (ms) ] Kernel name")
        print("-" * 73)
        for name, t in rt.profile.launches:
            print(f"[{100 * t / total:6.2f}% {t * 1e3:9.3f} ms] {name}")
        count = len(rt.profile.launches)
    print("-" * 73)
    print(f"[100.00%] Total execution time: {sum(t for _, t in rt.profile.launches):9.3f} s   "
          f"number of results: {count}")
    print(bar)


def print_scoped_profiler_info():
    """fieldsim's phases: compile time and launches since `fs.init` (Taichi prints its own
    C++ scopes here)."""
    rt = _rt()
    print(f"fieldsim: compile {rt.stats['compile_s']:.3f} s; {rt.launch_counter} kernel launch(es)"
          + (f", {get_kernel_profiler_total_time():.3f} s in profiled launches"
             if rt.kernel_profiler else ""))


def clear_scoped_profiler_info():
    rt = _rt()
    rt.stats["compile_s"] = 0.0


def print_memory_profiler_info():
    """Bytes held by the current runtime's fields (and their grad/dual twins)."""
    rt = _rt()
    total = 0
    for f in rt.fields:
        if f.storage is not None and f.shape is not None:
            n = 1
            for s in f.storage_shape:
                n *= s
            total += n * f.dtype.np.itemsize
    print(f"fieldsim: {len(rt.fields)} field(s), {total / 2 ** 20:.3f} MiB")


def _cupti(*args, **kwargs):
    raise FieldsimRuntimeError("fs.profiler CUPTI metrics are a Taichi CUDA-toolkit feature that "
                               "fieldsim does not have; use query_kernel_profiler_info for times")


set_kernel_profiler_metrics = collect_kernel_profiler_metrics = get_predefined_cupti_metrics = _cupti
