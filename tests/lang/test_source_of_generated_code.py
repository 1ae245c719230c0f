"""A kernel compiled from text under a file name that cannot be read (`exec(compile(text,
"gen.py", "exec"))` in a script or notebook tool) has no source to parse: Python looks its lines
up in the running `__main__` module's file instead, where the same line may hold another function
(compiled in its place: silently wrong values) or none (an internal StopIteration). Both give a
located "cannot read the source" error; code registered in linecache (as IPython does for its
cells) still compiles."""
import linecache
import subprocess
import sys
import textwrap

import numpy as np

import fieldsim as fs

_KERNEL = textwrap.dedent("""\
    import fieldsim as fs
    x = fs.field(fs.f32, shape=4)
    @fs.kernel
    def k():
        for i in x:
            x[i] = 1.0
    k()
    print("values", x.to_numpy().tolist())
""")


def _run_main(tmp_path, main_text):
    (tmp_path / "gen_src.txt").write_text(_KERNEL)
    main = tmp_path / "main.py"
    main.write_text(main_text)
    root = str(__import__("pathlib").Path(fs.__file__).parents[1])
    return subprocess.run([sys.executable, str(main)], cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": root, "PATH": ""}, timeout=300)


def test_a_function_at_the_same_line_of_main_is_not_compiled_in_its_place(tmp_path):
    # main.py line 3 starts `def decoy` where the generated kernel's decorator is
    out = _run_main(tmp_path, textwrap.dedent("""\
        import fieldsim as fs
        fs.init(arch=fs.cpu)
        def decoy():
            for i in x:
                x[i] = 7.0
        try:
            exec(compile(open("gen_src.txt").read(), "gen.py", "exec"))
        except fs.FieldsimSyntaxError as e:
            print("refused", "cannot read the source" in str(e), "k" in str(e))
    """))
    assert "values" not in out.stdout, out.stdout + out.stderr
    assert "refused True True" in out.stdout, out.stdout + out.stderr


def test_no_function_at_that_line_is_a_located_error_not_stopiteration(tmp_path):
    out = _run_main(tmp_path, textwrap.dedent("""\
        import fieldsim as fs
        fs.init(arch=fs.cpu)
        # no definition on this line or above
        try:
            exec(compile(open("gen_src.txt").read(), "gen.py", "exec"))
        except Exception as e:
            print("refused", type(e).__name__, "cannot read the source" in str(e))
    """))
    assert "refused FieldsimSyntaxError True" in out.stdout, out.stdout + out.stderr


def test_code_registered_in_linecache_compiles():
    text = "@fs.kernel\ndef k2(a: fs.f32):\n    for i in y:\n        y[i] = a * i\n"
    name = "/tmp/ipykernel_0/cell_k2_fieldsim_test.py"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    y = fs.field(fs.f32, shape=4)
    scope = {"fs": fs, "y": y, "__name__": __name__}
    exec(compile(text, name, "exec"), scope)
    scope["k2"](2.0)
    np.testing.assert_array_equal(y.to_numpy(), [0.0, 2.0, 4.0, 6.0])


class _Holder:
    @staticmethod
    def scaled(__v, w):  # a mangled parameter name (`_Holder__v` in the code object)
        return __v * w


def test_a_mangled_parameter_name_still_matches():
    z = fs.field(fs.f32, shape=3)
    scaled = fs.func(_Holder.scaled)

    @fs.kernel
    def fill():
        for i in z:
            z[i] = scaled(i, 3.0)

    fill()
    np.testing.assert_array_equal(z.to_numpy(), [0.0, 3.0, 6.0])
