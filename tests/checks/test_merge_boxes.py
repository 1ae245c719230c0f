"""`boxes.merge_boxes` keeps exactly the elements it is given, in fewer boxes."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from fieldsim.checks.boxes import Comp, merge_boxes


class _Access:
    def __init__(self, field, is_write):
        self.field, self.is_write = field, is_write


FIELDS = ("a", "b")


def _elements(box):
    return set(itertools.product(*(range(c.lo, c.hi + 1, c.step) if c.step else [c.lo]
                                   for c in box)))


def _cover(entries):
    return {(a.field, a.is_write, len(box), e) for a, box in entries for e in _elements(box)}


comp = st.one_of(
    st.integers(0, 6).map(lambda v: Comp(v, v, 0, True)),
    st.tuples(st.integers(0, 4), st.integers(1, 2), st.integers(1, 3)).map(
        lambda t: Comp(t[0], t[0] + t[1] * t[2], t[1], True)))
entry = st.tuples(st.sampled_from(FIELDS), st.booleans(),
                  st.lists(comp, min_size=1, max_size=3).map(tuple))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(entry, max_size=14, unique_by=lambda e: e))
def test_merged_boxes_cover_the_same_elements(raw):
    entries = [(_Access(f, w), box) for f, w, box in raw]
    merged = merge_boxes(entries)
    assert _cover(merged) == _cover(entries)
    assert len(merged) <= len(entries)


def test_an_unrolled_row_becomes_one_box():
    w = _Access("w", False)
    entries = [(w, (Comp(0, 15, 1, True), Comp(k, k, 0, True))) for k in range(42)]
    assert merge_boxes(entries) == [(w, (Comp(0, 15, 1, True), Comp(0, 41, 1, True)))]


def test_inexact_boxes_are_kept_apart():
    x = _Access("x", False)
    entries = [(x, (Comp(0, 9, 1, False),)), (x, (Comp(10, 10, 0, True),))]
    assert merge_boxes(entries) == entries
