"""IRBuilder.clone: the one statement cloner every pass uses."""
from support.ir_kit import KB

from fieldsim.ir import dtypes as T
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import CustomGradInfo, Op


def test_operands_and_custom_grad_outputs_are_remapped():
    b = KB()
    with b.serial():
        out = b.alloca(T.f64)
        x = b.c(2.0)
        region = b.emit(Op.CUSTOM_GRAD, None, (x,), attr=CustomGradInfo("f", (out,)),
                        blocks=[[], []])
    new_block = []
    nb = IRBuilder(new_block)
    remap = {}
    new_out = nb.clone(out, remap)
    new_x = nb.clone(x, remap)
    new_region = nb.clone(region, remap)
    assert new_region.args == (new_x,)
    assert new_region.attr.outputs == (new_out,) and new_region.attr.name == "f"
    assert new_region.blocks == [[], []] and new_region.loc == region.loc
    assert remap[id(region)] is new_region and region.attr.outputs == (out,)


def test_operand_fallback_for_values_outside_the_map():
    b = KB()
    with b.serial():
        x = b.c(1.0)
        y = b.unary(Op.NEG, x)
    elsewhere = b.c(3.0)
    copy = IRBuilder([]).clone(y, {}, operand=lambda a: elsewhere)
    assert copy.args == (elsewhere,) and copy.op == Op.NEG
