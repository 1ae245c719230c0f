"""Taichi reads a TI_<OPTION> environment variable for every option of its config, typed as
that option; the options fieldsim only accepts read back (`ti.cfg.x`, the runtime) as given, as
set in the environment, else as Taichi's documented default, never None."""
import pytest

import fieldsim as fs
from fieldsim.lang import runtime


def test_print_ir_from_the_environment_prints_the_ir(monkeypatch, capsys):
    monkeypatch.setenv("TI_PRINT_IR", "1")
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def shown_by_env():
        for i in x:
            x[i] = 1.0

    shown_by_env()
    assert "shown_by_env" in capsys.readouterr().out
    assert fs.cfg.print_ir is True


@pytest.mark.parametrize("key,env,expected", [
    ("check_out_of_bound", "1", True), ("advanced_optimization", "0", False),
    ("default_cpu_block_dim", "64", 64), ("device_memory_fraction", "0.5", 0.5),
    ("offline_cache_cleaning_policy", "never", "never")])
def test_environment_values_are_typed_as_the_option(monkeypatch, key, env, expected):
    monkeypatch.setenv("TI_" + key.upper(), env)
    with pytest.warns(runtime.IgnoredOptionWarning, match=key):
        rt = fs.init(arch=fs.cpu)
    assert getattr(fs.cfg, key) == expected and type(getattr(rt, key)) is type(expected)


def test_an_init_argument_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("TI_FLATTEN_IF", "1")
    with pytest.warns(runtime.IgnoredOptionWarning):
        fs.init(arch=fs.cpu, flatten_if=False)
    assert fs.cfg.flatten_if is False


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("TI_OPT_LEVEL", "high")
    with pytest.raises(ValueError, match="TI_OPT_LEVEL=high"):
        fs.init(arch=fs.cpu)


@pytest.mark.parametrize("key", ["simplify_before_lower_access", "print_accessor_ir",
                                 "print_kernel_llvm_ir", "opt_level", "max_block_dim"])
def test_options_not_given_read_back_as_taichis_defaults(monkeypatch, key):
    monkeypatch.delenv("TI_" + key.upper(), raising=False)
    rt = fs.init(arch=fs.cpu)
    taichi_default = {"simplify_before_lower_access": True, "print_accessor_ir": False,
                      "print_kernel_llvm_ir": False, "opt_level": 1, "max_block_dim": 1024}[key]
    assert getattr(rt, key) == taichi_default and getattr(fs.cfg, key) == taichi_default
