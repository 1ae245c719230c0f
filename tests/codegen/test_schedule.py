"""Adaptive splitting (fieldsim.codegen.schedule): the faster mode wins after the warm-up, the
other is re-measured every PROBE launches, and a split launch chosen either way computes the
same result."""
import numpy as np

import fieldsim as fs
from fieldsim.codegen.schedule import PROBE, WARMUP, SplitStats


def drive(stats, split_s, alone_s, launches):
    modes = []
    for _ in range(launches):
        w = stats.choose(2)
        stats.record(w, split_s if w > 1 else alone_s)
        modes.append(w)
    return modes


def test_warmup_keeps_split_then_the_faster_mode_wins():
    s = SplitStats()
    modes = drive(s, split_s=1.0, alone_s=3.0, launches=200)
    assert modes[:WARMUP] == [2] * WARMUP
    probes = sum(1 for n in range(101, 201) if n % PROBE == 0)  # modes[i] is launch i + 1
    assert modes[100:].count(1) == probes  # only the probes run alone
    s = SplitStats()
    modes = drive(s, split_s=3.0, alone_s=1.0, launches=200)
    probes = sum(1 for n in range(101, 201) if n % PROBE == PROBE // 2)
    assert modes[100:].count(2) == probes  # only the probes run split


def test_a_change_of_load_is_noticed():
    s = SplitStats()
    drive(s, split_s=1.0, alone_s=3.0, launches=100)
    modes = drive(s, split_s=5.0, alone_s=3.0, launches=200)  # helpers now run late
    assert modes[-50:].count(1) > 40


def test_many_launches_of_a_scatter_kernel_stay_exact(monkeypatch):
    from fieldsim.codegen import cpu
    fs.init(arch=fs.cpu, cpu_max_num_threads=2)
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)
    bins = 97
    hist = fs.field(fs.i32, shape=bins, name="hist")

    @fs.kernel
    def count():
        for i in range(20_000):
            hist[i * 13 % bins] += 1

    launches = 3 * PROBE + WARMUP  # both modes run
    for _ in range(launches):
        count()
    want = launches * np.bincount(np.arange(20_000) * 13 % bins, minlength=bins)
    np.testing.assert_array_equal(hist.to_numpy(), want)
