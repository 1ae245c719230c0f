"""The benchmark harness's own logic (issue #13): the full-size diffmpm robot, the checksum table
that every backend reports, and run.py's cross-backend comparison. No timing here."""
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples" / "simulation"))

import diffmpm
import programs
import run


def test_full_size_robot_has_about_6400_particles_inside_the_example_rectangles():
    pos, act = programs.diffmpm_full_particles()
    assert 6300 <= len(pos) <= 6500 and act.shape == (len(pos),)
    inside = np.zeros(len(pos), dtype=bool)
    for x0, y0, w, h, a in diffmpm.ROBOT:
        inside |= ((pos[:, 0] >= x0) & (pos[:, 0] <= x0 + w) & (pos[:, 1] >= y0)
                   & (pos[:, 1] <= y0 + h) & (act == a))
    assert inside.all()
    again, _ = programs.diffmpm_full_particles()
    assert np.array_equal(pos, again)  # deterministic: every backend gets the same robot


def test_every_program_has_checksums():
    assert set(programs.CHECKSUMS) == set(programs.PROGRAMS)


def test_compare_checks_flags_a_mismatch_and_passes_rounding():
    checks = {("p", "fieldsim"): {"loss": -0.152, "g": 1.0},
              ("p", "warp"): {"loss": -0.152 * (1 + 1e-5), "g": 1.1}}
    assert run.compare_checks(checks, ["p"], 1e-3) == ["p/warp/g"]


def test_roofline_counts_divider_ops_after_shared_divisors():
    """roofline.kernel_counts: two divisions by one sum per element are one divider op (the
    second multiplies by the first's reciprocal); divisions by an f32 square root that nothing
    else uses are none (a refined estimate); FLOPs count every op."""
    import roofline
    from support.ir_kit import compiled_ir

    import fieldsim as fs

    fs.init(arch=fs.cpu, offline_cache=False)
    n = 96
    a, b, out = (fs.field(fs.f32, shape=n) for _ in range(3))

    @fs.kernel
    def quotients():
        for i in a:
            s = a[i] + 1.0
            out[i] = b[i] / s + 2.0 / s

    @fs.kernel
    def root_quotients():
        for i in a:
            s = fs.sqrt(a[i])
            out[i] = b[i] / s + 2.0 / s

    @fs.kernel
    def root_kept():
        for i in a:
            s = fs.sqrt(a[i])
            out[i] = b[i] / s + s

    flops, nbytes, atomic, divider = roofline.kernel_counts(compiled_ir(quotients).body)
    assert (flops, divider, atomic) == (4 * n, n, 0)
    assert nbytes == 3 * 4 * n  # two loads and a store of f32 per element
    flops, _, _, divider = roofline.kernel_counts(compiled_ir(root_quotients).body)
    assert (flops, divider) == (4 * n, 0)
    flops, _, _, divider = roofline.kernel_counts(compiled_ir(root_kept).body)
    assert (flops, divider) == (3 * n, n)  # the square root itself is still taken


def test_gpu_measure_parts_run_small_on_the_cpu(monkeypatch):
    """benchmarks/gpu_measure.py (run on a GPU by gpu.sh) at toy sizes on the CPU backend: the
    parts run, gravity's energy is the example's, the byte counts are consistent and mpm88's
    step is restored afterwards."""
    import gpu_measure
    import mpm88

    import fieldsim as fs

    monkeypatch.setattr(gpu_measure, "init", lambda: fs.init(arch=fs.cpu, offline_cache=False))
    dt = mpm88.DT
    grav = gpu_measure.gravity(64, 2)
    assert grav["n"] == 64 and grav["fwd_ms"] > 0 and grav["adj_ms"] > 0 and grav["U"] < 0
    mpm = gpu_measure.mpm88_large(2, n_particles=2048, n_grid=64)
    assert mpm88.DT == dt
    for order in ("random", "by_cell"):
        assert mpm[order]["finite"]
        p2g = mpm[order]["kernels"]["particle_to_grid"]
        assert p2g["access_bytes"] > p2g["compulsory_bytes"] > 0 and p2g["ms"] > 0


def test_gpu_variants_take_turns_and_restore_the_target(monkeypatch, tmp_path, capsys):
    """benchmarks/gpu_variants.py: every variant runs with its CudaTarget attributes set, the
    attributes are restored afterwards, and the medians land in --out."""
    import gpu_measure
    import gpu_variants

    from fieldsim.codegen.ptx import CudaTarget

    before = {k: getattr(CudaTarget, k) for k in ("rsqrt_estimates", "refine_rsqrt", "flush_subnormals",
                                                   "narrow_counters")}
    seen = []

    def fake_gravity(n, reps):
        seen.append((n, {k: getattr(CudaTarget, k) for k in before}))
        ms = 1.0 + CudaTarget.refine_rsqrt + 2 * (not CudaTarget.flush_subnormals)
        return {"n": n, "fwd_ms": ms, "adj_ms": 2 * ms, "tape_step_ms": 3 * ms, "U": -1.5}

    monkeypatch.setattr(gpu_measure, "gravity", fake_gravity)
    monkeypatch.setattr(gpu_measure, "device_info", lambda: {"device": "none"})
    out = tmp_path / "v.json"
    gpu_variants.main(["--rounds", "2", "--reps", "1", "--out", str(out)])
    assert {k: getattr(CudaTarget, k) for k in before} == before
    assert len(seen) == 2 * 2 * len(gpu_variants.VARIANTS)
    assert {tuple(sorted(a.items())) for _, a in seen} == \
        {tuple(sorted(v.items())) for v in gpu_variants.VARIANTS.values()}
    medians = json.loads(out.read_text())["medians"]
    assert medians["rsqrt_refined_no_ftz/16384"]["fwd_ms"] == 4.0
    assert medians["rsqrt/2048"]["adj_ms"] == 2.0
    assert "| rsqrt | 16384 |" in capsys.readouterr().out


def test_warp_wheel_trim_drops_examples_tests_and_their_record_lines(tmp_path):
    """benchmarks/warp_wheel.py's trim: what makes Warp's wheel fit a device call."""
    import zipfile

    import warp_wheel
    src, dst = tmp_path / "w.whl", tmp_path / "out.whl"
    record = "".join(f"{n},sha256=x,1\n" for n in
                     ("warp/__init__.py", "warp/bin/warp.so", "warp/examples/a.usd",
                      "warp/tests/t.py", "warp_lang-1.2.2.dist-info/RECORD"))
    with zipfile.ZipFile(src, "w") as z:
        for name in ("warp/__init__.py", "warp/bin/warp.so", "warp/examples/a.usd",
                     "warp/tests/t.py"):
            z.writestr(name, "x")
        z.writestr("warp_lang-1.2.2.dist-info/RECORD", record)
    warp_wheel.trim(src, dst)
    with zipfile.ZipFile(dst) as z:
        assert sorted(z.namelist()) == ["warp/__init__.py", "warp/bin/warp.so",
                                        "warp_lang-1.2.2.dist-info/RECORD"]
        kept = z.read("warp_lang-1.2.2.dist-info/RECORD").decode()
    assert "examples" not in kept and "tests" not in kept and "warp/bin/warp.so" in kept


def test_gpu_sh_parses_and_every_documented_stage_has_a_function_and_a_limit():
    import re
    import subprocess
    script = ROOT / "benchmarks" / "gpu.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    documented = re.findall(r"^#   (\w+) ", text, re.MULTILINE)
    assert "warp" in documented and "peers" in documented
    limits = re.search(r"declare -A LIMIT=\((.*)\)", text).group(1)
    for stage in documented:
        assert f"\nstage_{stage}() {{" in text and f"[{stage}]=" in limits, stage
