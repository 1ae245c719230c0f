"""Python's cyclic GC is paused while kernels compile (fieldsim.runtime.pipeline.gc_paused).

Checks: the collector is off inside a kernel's compile, its adjoint's and a Tape's adjoints
(seen from the backend's compile), and on again afterwards; a program that switched it off
itself keeps it off; a compile that fails still switches it back on; nested and concurrent
pauses switch it on only when the last one ends."""
import gc
import threading

import pytest
from support.programs import square_then_sum

import fieldsim as fs
from fieldsim.codegen import cpu
from fieldsim.errors import FieldsimError
from fieldsim.runtime.pipeline import gc_paused

pytestmark = pytest.mark.cpu_backend("spies on the CPU backend's compile")


@pytest.fixture
def seen(monkeypatch):
    """gc.isenabled() at each backend compile from now on."""
    states = []
    # one kernel; a Tape's adjoints together; a kernel and its adjoint begun on a Tape
    for name in ("compile", "compile_many", "start_compile"):
        real = getattr(cpu.CpuBackend, name)

        def spy(self, kernels, rt, _real=real):
            states.append(gc.isenabled())
            return _real(self, kernels, rt)
        monkeypatch.setattr(cpu.CpuBackend, name, spy)
    return states


@pytest.fixture(autouse=True)
def gc_on():
    gc.enable()
    yield
    gc.enable()


def test_off_while_compiling_on_after(seen):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    p = square_then_sum(8)
    x, y = p.x, p.y
    x.fill(3.0)
    with fs.ad.Tape(loss=p.loss):  # each forward begun with its adjoint
        p.square()
        p.total()
    assert gc.isenabled()
    assert x.grad.to_numpy().tolist() == [6.0] * 8
    p.square.grad()  # compiled already: no compile
    assert seen == [False] * 4  # two forwards, each with its adjoint

    @fs.kernel
    def double():
        for i in x:
            y[i] = 2.0 * x[i]

    double.grad()  # its forward and its adjoint, one at a time
    assert seen == [False] * 6 and gc.isenabled()


def test_a_program_that_disabled_it_keeps_it_disabled(seen):
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=8)

    @fs.kernel
    def fill():
        for i in x:
            x[i] = 1.0

    gc.disable()
    fill()
    assert seen == [False] and not gc.isenabled()


def test_a_failed_compile_switches_it_back_on():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=8)

    @fs.kernel
    def bad():
        for i in x:
            x[i] = undefined_name  # noqa: F821 - the compile error under test

    with pytest.raises(FieldsimError):
        bad()
    assert gc.isenabled()


def test_nested_and_concurrent_pauses():
    inside = threading.Event()
    release = threading.Event()

    def other():
        with gc_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    with gc_paused():
        t.start()
        inside.wait(10)
        with gc_paused():
            assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    t.join()
    assert gc.isenabled()
