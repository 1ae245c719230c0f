"""The benchmark harness's own logic (issue #13): the full-size diffmpm robot, the checksum table
that every backend reports, and run.py's cross-backend comparison. No timing here."""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples" / "simulation"))

import diffmpm
import programs
import run


def test_full_size_robot_has_6400_particles_inside_the_example_rectangles():
    pos, act = programs.diffmpm_full_particles()
    assert pos.shape == (6400, 2) and act.shape == (6400,)
    inside = np.zeros(len(pos), dtype=bool)
    for x0, y0, w, h, a in diffmpm.ROBOT:
        here = ((pos[:, 0] >= x0) & (pos[:, 0] <= x0 + w) & (pos[:, 1] >= y0)
                & (pos[:, 1] <= y0 + h) & (act == a))
        inside |= here
        # each rectangle's share of the particles follows its area (within one particle)
        area = w * h / sum(r[2] * r[3] for r in diffmpm.ROBOT)
        assert abs((act == a).sum() - area * 6400) <= 1
    assert inside.all()
    again, _ = programs.diffmpm_full_particles()
    assert np.array_equal(pos, again)  # seeded: every backend gets the same robot


def test_every_program_has_checksums():
    assert set(programs.CHECKSUMS) == set(programs.PROGRAMS)


def test_compare_checks_flags_a_mismatch_and_passes_rounding():
    checks = {("p", "fieldsim"): {"loss": -0.152, "g": 1.0},
              ("p", "warp"): {"loss": -0.152 * (1 + 1e-5), "g": 1.1}}
    assert run.compare_checks(checks, ["p"], 1e-3) == ["p/warp/g"]
