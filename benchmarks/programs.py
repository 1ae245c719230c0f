"""The measured programs: each returns (step, sync) for one warm iteration of the example.

They import the example modules unchanged, so fieldsim and Taichi run identical source.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "simulation"))


def mpm88_substep(ti):
    import mpm88
    mpm88.setup(8192, 128)
    mpm88.reset()
    return mpm88.substep, ti.sync


PROGRAMS = {"mpm88_substep": mpm88_substep}
