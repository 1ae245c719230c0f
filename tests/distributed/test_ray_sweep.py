"""examples/distributed/ray_sweep.py on a local 2-CPU Ray cluster: the distributed run equals
the serial one bit for bit, a worker killed mid-task still yields every result (Ray's task
retries), and a bad configuration (no Ray, an unreachable address) is a clear error."""
import importlib
import os
import pathlib
import sys

import pytest

ray = pytest.importorskip("ray")

HERE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "distributed"
N, ITERS, STEPS = 2, 6, 40


@pytest.fixture(scope="module")
def sweep():
    sys.path.insert(0, str(HERE))
    module = importlib.import_module("ray_sweep")
    yield module
    sys.path.remove(str(HERE))


@pytest.fixture(scope="module")
def local_ray(sweep):
    sweep.connect(None, num_cpus=2)
    yield ray
    ray.shutdown()


def test_distributed_equals_serial_bit_for_bit(sweep, local_ray, tmp_path):
    cfgs = sweep.configs(N, ITERS, STEPS)
    distributed = sweep.run_ray(cfgs, progress=False)
    serial = sweep.run_serial(cfgs, progress=False)
    assert sweep.same_results(distributed, serial)
    assert {r["pid"] for r in distributed} != {os.getpid()}  # they really ran in workers
    for r in serial:
        assert r["losses"][-1] < 0.5 * r["losses"][0]  # each optimisation makes progress
    # one setup (and compile) per worker process, however many tasks it ran
    for pid in {r["pid"] for r in distributed}:
        assert sum(r["compiled_here"] for r in distributed if r["pid"] == pid) <= 1
    paths = sweep.report(distributed, str(tmp_path))
    assert os.path.getsize(paths["plot"]) > 1000
    with open(paths["table"]) as f:
        assert len(f.read().splitlines()) == N + 1


def test_a_worker_killed_mid_run_still_yields_every_result(sweep, local_ray, tmp_path):
    marker = tmp_path / "killed"
    cfgs = sweep.configs(N, ITERS, STEPS, crash_marker=str(marker))
    results = sweep.run_ray(cfgs, max_retries=3, progress=False)
    assert marker.exists()  # the first try of task 0 did kill its worker
    clean = [{k: v for k, v in c.items() if k != "crash_marker"} for c in cfgs]
    assert sweep.same_results(results, sweep.run_serial(clean, progress=False))


def test_unreachable_address_is_a_clear_error(sweep):
    with pytest.raises(sweep.SweepConfigError, match="cannot reach the Ray cluster at '127.0.0.1:1'"):
        sweep.connect("127.0.0.1:1")
    with pytest.raises(sweep.SweepConfigError, match="HOST:PORT"):
        sweep.connect("nonsense")


def test_missing_ray_is_a_clear_error(sweep, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(sweep.SweepConfigError, match=r"pip install 'fieldsim\[ray\]'"):
        sweep.connect(None)
