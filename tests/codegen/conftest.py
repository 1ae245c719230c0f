"""Fixtures of the code generator's tests."""
import pytest

from fieldsim.codegen import cpu


@pytest.fixture
def llvm_texts(monkeypatch):
    """The LLVM IR text of each kernel the CPU backend compiles from now on, as it hands it
    to LLVM (a list that fills as kernels compile)."""
    seen = []
    real = cpu.CpuBackend._optimise_and_emit

    def spy(self, ir_text):
        seen.append(ir_text)
        return real(self, ir_text)
    monkeypatch.setattr(cpu.CpuBackend, "_optimise_and_emit", spy)
    return seen
