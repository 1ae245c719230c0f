"""Helpers shared by the CUDA tests: the AD corpus, its gradient run, and an IR-capturing CPU
backend (every kernel IR the pipeline compiles, adjoints included, is kept for PTX emission)."""
import os
import sys

import fieldsim as fs
from fieldsim.codegen.cpu import CpuBackend

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ad_corpus() -> list:
    """tests/ad/corpus.py's entries."""
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from ad.corpus import CORPUS
    return list(CORPUS)


def ad_gradients(entry):
    """Build an AD-corpus entry in the current runtime, run it under a Tape; returns
    (loss, {input name: gradient})."""
    case = entry.build()
    values = entry.values()
    for name, f in case.inputs.items():
        f.from_numpy(values[name].astype(f.to_numpy().dtype))
    if case.reset is not None:
        case.reset()
    with fs.ad.Tape(loss=case.loss):
        case.run()
    return float(case.loss[None]), {name: f.grad.to_numpy() for name, f in case.inputs.items()}


class CaptureBackend(CpuBackend):
    """The CPU backend, keeping every kernel IR it is asked to compile."""

    def __init__(self, rt):
        super().__init__(rt)
        self.irs = []

    def compile(self, kernel, rt):
        self.irs.append(kernel)
        return super().compile(kernel, rt)

    def start_compile(self, kernel, rt):  # on a compile thread: a Tape's adjoints, and kernels
        job = super().start_compile(kernel, rt)  # compiled on a Tape with their adjoints
        if job is not None:
            self.irs.append(kernel)
        return job


def capture_runtime(**init):
    rt = fs.init(arch=fs.cpu, **init)
    rt.device = CaptureBackend(rt)
    return rt
