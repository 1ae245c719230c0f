"""`fs.profiler`: launch counts and times per kernel (and adjoint), clearing, the off state,
and the error for CUPTI metrics fieldsim does not have."""
import pytest

import fieldsim as fs


def _kernels():
    x = fs.field(fs.f32, shape=64, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def bump():
        for i in x:
            x[i] += 1.0

    @fs.kernel
    def total():
        for i in x:
            loss[None] += x[i] * x[i]

    return bump, total, loss


def test_counts_and_times_per_kernel(capsys):
    fs.init(arch=fs.cpu, kernel_profiler=True)
    bump, total, loss = _kernels()
    for _ in range(3):
        bump()
    with fs.ad.Tape(loss=loss):
        total()
    q = fs.profiler.query_kernel_profiler_info("bump")
    assert q.counter == 3 and 0 < q.min <= q.avg <= q.max
    assert fs.profiler.query_kernel_profiler_info("total").counter == 1
    assert fs.profiler.query_kernel_profiler_info("total.grad").counter == 1
    assert fs.profiler.query_kernel_profiler_info("nothing").counter == 0
    assert fs.profiler.get_kernel_profiler_total_time() > 0
    fs.profiler.print_kernel_profiler_info()
    out = capsys.readouterr().out
    assert "bump" in out and "3x" in out and "total.grad" in out
    fs.profiler.print_kernel_profiler_info("trace")
    assert capsys.readouterr().out.count("] bump") == 3
    fs.profiler.clear_kernel_profiler_info()
    assert fs.profiler.query_kernel_profiler_info("bump").counter == 0


def test_off_by_default_records_nothing(capsys):
    fs.init(arch=fs.cpu)
    bump, _, _ = _kernels()
    bump()
    assert fs.profiler.query_kernel_profiler_info("bump").counter == 0
    fs.profiler.print_kernel_profiler_info()
    assert "kernel_profiler=True" in capsys.readouterr().out


def test_bad_mode_and_cupti_metrics_are_errors():
    fs.init(arch=fs.cpu, kernel_profiler=True)
    with pytest.raises(ValueError, match="mode"):
        fs.profiler.print_kernel_profiler_info("bogus")
    with pytest.raises(fs.FieldsimRuntimeError, match="CUPTI"):
        fs.profiler.set_kernel_profiler_metrics([])
    assert fs.profiler.set_kernel_profiler_toolkit("default")
    assert not fs.profiler.set_kernel_profiler_toolkit("nvprof")


def test_scoped_and_memory_info(capsys):
    fs.init(arch=fs.cpu)
    fs.field(fs.f64, shape=(1024, 128))
    fs.profiler.print_memory_profiler_info()
    fs.profiler.print_scoped_profiler_info()
    out = capsys.readouterr().out
    assert "1.000 MiB" in out and "compile" in out
