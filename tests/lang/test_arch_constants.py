"""Arch constants behave as Taichi's `ti.Arch` members where programs look at them: printed,
named (`getattr(ti, ti.cfg.arch.name)` re-inits on the same arch), compared and pickled."""
import pickle

import fieldsim as fs


def test_cfg_arch_prints_and_names_like_taichi():
    fs.init(arch=fs.cpu)
    arch = fs.cfg.arch
    assert str(arch) == "Arch.x64" and f"{arch}" == "Arch.x64"
    assert repr(arch) == "<Arch.x64: 0>"
    assert arch.name == "x64" and arch.value == 0
    assert arch == fs.cpu == fs.x64 and arch != fs.cuda
    rt = fs.init(arch=getattr(fs, arch.name))
    assert rt.arch == fs.cpu


def test_arch_constants_keep_their_string_identity():
    assert fs.cuda == "cuda" and hash(fs.cuda) == hash("cuda")
    assert {fs.cpu: 1}["cpu"] == 1
    assert fs.cuda.name == "cuda" and fs.cuda.value == 3 and fs.vulkan.value == 10
    again = pickle.loads(pickle.dumps(fs.vulkan))
    assert again == fs.vulkan and str(again) == "Arch.vulkan"


def test_an_arch_given_as_taichi_member_name_string_resolves():
    assert fs.init(arch="x64").arch == fs.cpu
    fs.init(arch=fs.cpu)
