"""Taichi's public enums that programs compare against: `extension` (what a backend supports),
`AutodiffMode` (a kernel's differentiation mode) and `SNodeGradType` (what a field holds)."""
import enum


class extension(enum.Enum):
    """Optional backend features (`ti.extension.adstack`); the CPU backend has those listed in
    `CPU_EXTENSIONS`."""

    sparse = "sparse"
    quant = "quant"
    quant_basic = "quant_basic"
    data64 = "data64"
    adstack = "adstack"
    bls = "bls"
    assertion = "assertion"
    extfunc = "extfunc"
    mesh = "mesh"


CPU_EXTENSIONS = frozenset({extension.data64, extension.adstack, extension.assertion,
                            extension.extfunc})


# IntEnums: a program that imports `taichi.lang.enums` while fieldsim stands in for Taichi may
# load this module a second time under that name; int values keep the two copies' members equal.
class AutodiffMode(enum.IntEnum):
    NONE = 0
    VALIDATION = 1
    FORWARD = 2
    REVERSE = 3


class SNodeGradType(enum.IntEnum):
    PRIMAL = 0
    ADJOINT = 1
    DUAL = 2
    ADJOINT_CHECKBIT = 3

    # A program may load this module twice under two names (an `import fieldsim as taichi`
    # alias re-imports `taichi.lang.enums`): members of either copy compare equal by name.
    def __eq__(self, other):
        return isinstance(other, enum.Enum) and type(other).__name__ == "SNodeGradType" and \
            other.name == self.name

    def __hash__(self):
        return hash(("SNodeGradType", self.name))
