"""A kernel compiled where another of its programs is wanted next makes that one while its own
LLVM work runs on a compile thread (runtime.pipeline: `Driver.compile`). While a Tape records,
the adjoint (`_start_adjoint`, `_settle_adjoint`): its IR made and lowered on the calling
thread, its own LLVM work on the other compile thread. In `FwdMode`, the tangent program the
launch runs. What must not change: gradients and tangents, the access-rule refusals and their
messages, and the errors of programs that cannot be made, which still surface where the
program is needed."""
import time

import numpy as np
import pytest
from support.programs import unit_that_overwrites

import fieldsim as fs
from fieldsim.codegen import cpu
from fieldsim.errors import AccessRuleError, FieldsimCompilationError
from fieldsim.runtime import pipeline

pytestmark = pytest.mark.cpu_backend("spies on the CPU backend's launches and builds")


def _energy(threads):
    """U = sum_i sin(x_i) x_i^2 through one kernel; returns (xs, x, U, kernel)."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads, default_fp=fs.f64)
    n = 40
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    U = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def energy():
        for i in x:
            U[None] += fs.sin(x[i]) * x[i] * x[i]

    xs = np.linspace(-2.0, 2.0, n)
    x.from_numpy(xs)
    return xs, x, U, energy


def _expected_grad(xs):
    return np.cos(xs) * xs * xs + 2.0 * xs * np.sin(xs)


def _jobs_at_first_launch(monkeypatch, kernel):
    """Spy on the backend's launches: the adjoint job state of `kernel`'s specialisation at its
    first forward launch."""
    seen = []
    real = cpu.CpuBackend.launch

    def spy(self, program, args, rng_key, adjoint=False):
        if not adjoint and not seen:
            (ck,) = kernel._cache.values()
            seen.append((ck.adjoint_job is not None, ck.adjoint is None))
        return real(self, program, args, rng_key, adjoint)
    monkeypatch.setattr(cpu.CpuBackend, "launch", spy)
    return seen


def test_a_kernel_compiled_on_a_tape_begins_its_adjoint_before_it_runs(monkeypatch):
    xs, x, U, energy = _energy(2)
    seen = _jobs_at_first_launch(monkeypatch, energy)
    with fs.ad.Tape(loss=U):
        energy()
    assert seen == [(True, True)]  # begun with the compile, not yet used
    np.testing.assert_allclose(x.grad.to_numpy(), _expected_grad(xs), rtol=1e-12, atol=1e-12)
    (ck,) = energy._cache.values()
    assert ck.adjoint is not None and ck.adjoint_job is None  # settled by the backward
    np.testing.assert_allclose(U[None], np.sum(np.sin(xs) * xs * xs), rtol=0, atol=1e-12)


@pytest.mark.parametrize("where", ["one thread", "no Tape", "no_grad"])
def test_no_head_start_where_no_backward_will_run_it_or_no_second_thread(where, monkeypatch):
    xs, x, U, energy = _energy(1 if where == "one thread" else 2)
    seen = _jobs_at_first_launch(monkeypatch, energy)
    if where == "one thread":
        with fs.ad.Tape(loss=U):
            energy()
        np.testing.assert_allclose(x.grad.to_numpy(), _expected_grad(xs), rtol=1e-12,
                                   atol=1e-12)
    elif where == "no Tape":
        energy()
    else:
        @fs.ad.no_grad
        def untaped():
            energy()
        with fs.ad.Tape(loss=U):
            untaped()
    assert seen == [(False, True)]


def test_kernel_grad_outside_a_tape_uses_a_job_begun_on_an_earlier_tape():
    xs, x, U, energy = _energy(2)
    with fs.ad.Tape(loss=U):
        energy()
    first = x.grad.to_numpy().copy()
    x.grad.fill(0.0)
    U.grad[None] = 1.0
    energy.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), first, rtol=0, atol=0)
    np.testing.assert_allclose(first, _expected_grad(xs), rtol=1e-12, atol=1e-12)


def _overwrite_on_tape(threads):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    x = fs.field(fs.f32, shape=8, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def overwrite():
        for i in x:
            x[i] = x[i] * x[i]  # read, then written again: its adjoint would be wrong

    x.from_numpy(np.arange(8, dtype=np.float32))
    with pytest.raises(AccessRuleError) as err, fs.ad.Tape(loss=loss):
        overwrite()
    (ck,) = overwrite._cache.values()
    return str(err.value), ck, x.to_numpy()


def test_a_refused_kernel_is_refused_as_on_one_thread_and_its_job_dropped():
    message_1, ck_1, x_1 = _overwrite_on_tape(1)
    message_2, ck_2, x_2 = _overwrite_on_tape(2)
    assert message_2 == message_1
    assert "test_compile_head_start.py" in message_2
    assert ck_2.adjoint is None and ck_2.adjoint_job is None  # never used, not kept
    np.testing.assert_array_equal(x_2, np.arange(8))  # refused before it ran: data as it was
    np.testing.assert_array_equal(x_1, x_2)


def _atomic_result_used(threads):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    count = fs.field(fs.f32, shape=(), needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def tally():
        for i in x:
            old = fs.atomic_add(count[None], x[i])
            loss[None] += old * 0.0 + x[i]

    x.from_numpy(np.ones(4, dtype=np.float32))
    with pytest.raises(AccessRuleError) as err, fs.ad.Tape(loss=loss):
        tally()
    return str(err.value), count[None]


def test_a_kernel_reverse_ad_refuses_is_refused_by_the_checker_as_on_one_thread():
    """Reverse AD cannot replay an atomic's old value: on two threads making the adjoint fails
    quietly while the forward compiles, and the launch is refused by the access-rule checker
    with the same message as on one thread, before anything ran."""
    message_1, count_1 = _atomic_result_used(1)
    message_2, count_2 = _atomic_result_used(2)
    assert message_2 == message_1
    assert "atomic_add" in message_2
    assert count_1 == count_2 == 0.0


@pytest.mark.parametrize("threads", [1, 2])
def test_an_adjoint_that_cannot_be_made_fails_where_it_is_needed(threads, monkeypatch):
    """Reverse AD raises (here by a stand-in): the forward runs, and the backward reports the
    error, on two threads as on one (the head start keeps its failure quiet)."""
    def refuse(kernel, *_options):
        raise FieldsimCompilationError("this kernel cannot be differentiated (test)", None)
    monkeypatch.setattr(pipeline, "make_adjoint", refuse)
    xs, x, U, energy = _energy(threads)
    with pytest.raises(FieldsimCompilationError, match="cannot be differentiated"):
        with fs.ad.Tape(loss=U):
            energy()
            forward_value = U[None]
    np.testing.assert_allclose(forward_value, np.sum(np.sin(xs) * xs * xs), rtol=0, atol=1e-12)


def test_a_failed_job_is_built_again_where_the_adjoint_is_needed(monkeypatch):
    """The head start's LLVM work fails (a compile thread's error): nothing is kept, and the
    backward builds the adjoint itself."""
    xs, x, U, energy = _energy(2)
    real = cpu.CpuBackend._build
    calls = []

    def flaky(self, text, symbol, info, rt):
        calls.append(info.name)
        if info.name == "energy.grad" and calls.count("energy.grad") == 1:
            raise RuntimeError("LLVM says no, once")
        return real(self, text, symbol, info, rt)
    monkeypatch.setattr(cpu.CpuBackend, "_build", flaky)
    with fs.ad.Tape(loss=U):
        energy()
    assert calls.count("energy.grad") == 2
    np.testing.assert_allclose(x.grad.to_numpy(), _expected_grad(xs), rtol=1e-12, atol=1e-12)


def test_the_wait_for_the_head_start_is_counted_as_compile_time(monkeypatch):
    xs, x, U, energy = _energy(2)
    waits = []
    real = pipeline._settle_adjoint

    def spy(ck):
        t0 = time.perf_counter()
        real(ck)
        waits.append(time.perf_counter() - t0)
    monkeypatch.setattr(pipeline, "_settle_adjoint", spy)
    with fs.ad.Tape(loss=U) as tape:
        energy()
        before = fs.lang.runtime.get().stats["compile_s"]
    assert tape.done and len(waits) == 1
    assert fs.lang.runtime.get().stats["compile_s"] - before >= waits[0]


def test_a_unit_kernel_refused_at_the_backward_never_gets_its_begun_adjoint(monkeypatch):
    """A launch inside a `grad_replaced` unit is judged when the backward makes the adjoints
    (`compile_adjoints`): one that breaks the rules drops its begun job there, before any
    adjoint is set, and the unit's backward reports the refusal."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    p = unit_that_overwrites()
    begun = []
    real = pipeline.compile_adjoints

    def spy(wanted, rt):
        begun.extend(ck.adjoint_job is not None for ck in p.overwrite._cache.values())
        real(wanted, rt)
    monkeypatch.setattr(pipeline, "compile_adjoints", spy)
    with pytest.raises(AccessRuleError), fs.ad.Tape(loss=p.loss):
        p.step()
        p.total()
    (ck,) = p.overwrite._cache.values()
    assert begun == [True]
    assert ck.adjoint is None and ck.adjoint_job is None


@pytest.mark.parametrize("threads", [1, 2])
def test_fwd_mode_makes_the_tangent_with_the_compile(threads, monkeypatch):
    """In FwdMode the launch runs the tangent program, not the primal: on two threads it is
    made during the compile, while the primal's LLVM work runs; the JVP is the analytic one."""
    xs, x, U, energy = _energy(threads)
    made_in_compile = []
    real = pipeline.Driver.compile

    def spy(self, kernel, rt, templates, dtypes, ret):
        ck = real(self, kernel, rt, templates, dtypes, ret)
        made_in_compile.append(ck.tangent is not None)
        return ck
    monkeypatch.setattr(pipeline.Driver, "compile", spy)
    seed = np.cos(3.0 * xs)
    with fs.ad.FwdMode(loss=U, param=x, seed=seed):
        energy()
        jvp = float(U.dual[None])
    assert made_in_compile == [threads == 2]
    np.testing.assert_allclose(jvp, float(np.dot(_expected_grad(xs), seed)), rtol=1e-12)
    np.testing.assert_allclose(U[None], np.sum(np.sin(xs) * xs * xs), rtol=0, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_tangent_that_cannot_be_made_fails_at_the_launch_as_before(threads, monkeypatch):
    from fieldsim.ad import forward

    def refuse(kernel, *args):
        raise FieldsimCompilationError("no tangent for this kernel (test)", None)
    monkeypatch.setattr(forward, "make_tangent", refuse)
    xs, x, U, energy = _energy(threads)
    with pytest.raises(FieldsimCompilationError, match="no tangent"):
        with fs.ad.FwdMode(loss=U, param=x, seed=np.ones_like(xs)):
            energy()
    (ck,) = energy._cache.values()  # the primal compiled and kept, as on one thread
    assert ck.program is not None and (ck.tangent is None or not ck.tangent.made)
