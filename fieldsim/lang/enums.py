"""Taichi's public enums that programs compare against: `extension` (what a backend supports),
`AutodiffMode` (a kernel's differentiation mode), `SNodeGradType` (what a field holds), and
those they only name: `Layout` (a field's layout argument), `DeviceCapability`."""
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


class Layout(enum.IntEnum):
    """`ti.Layout`: the `layout=` of a vector or matrix field or ndarray. Accepted and not
    acted on: fieldsim chooses its own layout (results do not depend on it)."""

    AOS = 0
    SOA = 1
    NULL = 2


class DeviceCapability:
    """`ti.DeviceCapability`: the names of Vulkan (SPIR-V) device capabilities, for Taichi's
    graphics backends, which fieldsim does not have; programs may name them."""

    spirv_version_1_3 = "spirv_version_1_3"
    spirv_version_1_4 = "spirv_version_1_4"
    spirv_version_1_5 = "spirv_version_1_5"
    spirv_has_int8 = "spirv_has_int8"
    spirv_has_int16 = "spirv_has_int16"
    spirv_has_int64 = "spirv_has_int64"
    spirv_has_float16 = "spirv_has_float16"
    spirv_has_float64 = "spirv_has_float64"
    spirv_has_atomic_int64 = "spirv_has_atomic_int64"
    spirv_has_atomic_float16 = "spirv_has_atomic_float16"
    spirv_has_atomic_float16_add = "spirv_has_atomic_float16_add"
    spirv_has_atomic_float16_minmax = "spirv_has_atomic_float16_minmax"
    spirv_has_atomic_float = "spirv_has_atomic_float"
    spirv_has_atomic_float_add = "spirv_has_atomic_float_add"
    spirv_has_atomic_float_minmax = "spirv_has_atomic_float_minmax"
    spirv_has_atomic_float64 = "spirv_has_atomic_float64"
    spirv_has_atomic_float64_add = "spirv_has_atomic_float64_add"
    spirv_has_atomic_float64_minmax = "spirv_has_atomic_float64_minmax"
    spirv_has_variable_ptr = "spirv_has_variable_ptr"
    spirv_has_physical_storage_buffer = "spirv_has_physical_storage_buffer"
    spirv_has_subgroup_basic = "spirv_has_subgroup_basic"
    spirv_has_subgroup_vote = "spirv_has_subgroup_vote"
    spirv_has_subgroup_arithmetic = "spirv_has_subgroup_arithmetic"
    spirv_has_subgroup_ballot = "spirv_has_subgroup_ballot"
    spirv_has_non_semantic_info = "spirv_has_non_semantic_info"
    spirv_has_no_integer_wrap_decoration = "spirv_has_no_integer_wrap_decoration"
