"""`ir.walk` (iterative) visits statements depth first, parents before children, every block of
a statement in order; the CPU backend's while-loop scan finds a LOOP at any depth."""
from fieldsim.codegen.cpu import _contains_loop
from fieldsim.ir.ir import Op, Stmt, walk


def _s(tag, *blocks, op=Op.CONST):
    return Stmt(op, None, attr=tag, blocks=[list(b) for b in blocks])


def test_walk_order_preorder_all_blocks():
    body = [
        _s("a", [_s("a0", [_s("a00")]), _s("a1")], [_s("a2")]),
        _s("b"),
        _s("c", [], [_s("c0", [], [_s("c00"), _s("c01")])]),
    ]
    assert [s.attr for s in walk(body)] == ["a", "a0", "a00", "a1", "a2", "b", "c", "c0", "c00",
                                             "c01"]
    assert list(walk([])) == []


def test_walk_deep_nesting_has_no_recursion_limit():
    s = _s("leaf")
    for i in range(3000):  # deeper than Python's default recursion limit
        s = _s(i, [s])
    assert sum(1 for _ in walk([s])) == 3001


def test_contains_loop_at_any_depth():
    deep = [_s("x", [_s("y"), _s("z", [_s("w", op=Op.LOOP)])])]
    assert _contains_loop([deep])
    assert not _contains_loop([[_s("x", [_s("y")], [_s("z")])]])
    assert _contains_loop([[_s("top", op=Op.LOOP)]])
