"""The language: types, fields, the IR and its passes, the frontend, kernels and funcs."""


def __getattr__(name):
    # `ti.lang.Vector`, `ti.lang.Matrix`, `ti.lang.Field` as Taichi's package exports them; loaded
    # on first use, as `fieldsim.lang.matrix` imports most of the package
    if name in ("Vector", "Matrix"):
        from fieldsim.lang import matrix
        return getattr(matrix, name)
    if name == "Field":
        from fieldsim.lang.field import Field
        return Field
    raise AttributeError(f"module 'fieldsim.lang' has no attribute {name!r}")
