"""The language: types, fields, the IR and its passes, the frontend, kernels and funcs."""
