"""`fs.algorithms` (Taichi's `ti.algorithms`): the prefix sum against numpy's cumsum, the sort
against numpy's sort and against a plain-Python run of Taichi's compare-exchange network."""
import doctest

import numpy as np
import pytest

import fieldsim as fs


def test_prefix_sum_is_inclusive_and_in_place_over_the_first_length_items():
    fs.init(arch=fs.cpu)
    rng = np.random.default_rng(3)
    data = rng.integers(-1000, 1000, 1000).astype(np.int32)
    data[7] = 2**31 - 1  # i32 additions wrap
    a = fs.field(fs.i32, shape=1000)
    a.from_numpy(data)
    fs.algorithms.PrefixSumExecutor(700).run(a)
    with np.errstate(over="ignore"):
        want = np.concatenate([np.cumsum(data[:700], dtype=np.int32), data[700:]])
    np.testing.assert_array_equal(a.to_numpy(), want)


def test_prefix_sum_refuses_other_types_as_taichi():
    fs.init(arch=fs.cpu)
    with pytest.raises(RuntimeError, match="Only ti.i32"):
        fs.algorithms.PrefixSumExecutor(4).run(fs.field(fs.f32, shape=4))


def _taichi_network(keys, values):
    """Taichi's parallel_sort/sort_stage loops, run one compare-exchange at a time."""
    n = len(keys)
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for inv in range(int((n - k - k % p) / (2 * k)) + 1):
                j = k % p + inv * 2 * k
                for i in range(0, min(k, n - j - k)):
                    a, b = i + j, i + j + k
                    if int(a / (p * 2)) == int(b / (p * 2)) and keys[a] > keys[b]:
                        keys[a], keys[b] = keys[b], keys[a]
                        values[a], values[b] = values[b], values[a]
            k = int(k / 2)
        p *= 2


@pytest.mark.parametrize("n", [1, 2, 5, 64, 300])
def test_parallel_sort_sorts_and_moves_values_as_taichis_network(n):
    fs.init(arch=fs.cpu)
    rng = np.random.default_rng(n)
    keys_np = rng.integers(0, 20, n).astype(np.int32)  # many equal keys
    vals_np = rng.random((n, 2)).astype(np.float32)
    keys, values = fs.field(fs.i32, shape=n), fs.Vector.field(2, fs.f32, shape=n)
    keys.from_numpy(keys_np)
    values.from_numpy(vals_np)
    fs.algorithms.parallel_sort(keys, values)
    want_k, want_v = list(keys_np), [tuple(r) for r in vals_np]
    _taichi_network(want_k, want_v)
    np.testing.assert_array_equal(keys.to_numpy(), np.sort(keys_np))
    np.testing.assert_array_equal(keys.to_numpy(), want_k)
    np.testing.assert_array_equal(values.to_numpy(), np.array(want_v, np.float32).reshape(n, 2))


def test_examples_run():
    fs.init(arch=fs.cpu)
    r = doctest.testmod(fs.algorithms, extraglobs={"fs": fs, "np": np}, optionflags=doctest.ELLIPSIS)
    assert r.failed == 0 and r.attempted >= 6


@pytest.mark.parametrize("special", [None, "nan", "signed_zero"])
def test_parallel_sort_of_distinct_keys_and_of_nan_or_signed_zeros_is_taichis_network(special):
    # distinct keys take numpy's sort (the network's output is the same); NaN and -0.0/0.0
    # compare as the network compares them, so those go through the network
    fs.init(arch=fs.cpu)
    rng = np.random.default_rng(7)
    n = 300
    keys_np = rng.permutation(n).astype(np.float32) - 150.0
    if special == "nan":
        keys_np[[3, 100, 250]] = np.nan
    elif special == "signed_zero":
        keys_np[keys_np == 0.0] = -0.0
        keys_np[5] = 0.0
    vals_np = np.arange(n, dtype=np.int32)
    keys, values = fs.field(fs.f32, shape=n), fs.field(fs.i32, shape=n)
    keys.from_numpy(keys_np)
    values.from_numpy(vals_np)
    fs.algorithms.parallel_sort(keys, values)
    want_k, want_v = list(keys_np), list(vals_np)
    _taichi_network(want_k, want_v)
    np.testing.assert_array_equal(keys.to_numpy(), np.array(want_k, np.float32))
    np.testing.assert_array_equal(np.signbit(keys.to_numpy()), np.signbit(np.array(want_k, np.float32)))
    np.testing.assert_array_equal(values.to_numpy(), want_v)


def test_algorithms_called_in_a_kernel_are_refused_by_name():
    # they launch on the host between kernels; in Taichi they launch kernels of their own,
    # which a kernel cannot do: the message names the call, not a helper it would have made
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=8)
    ex = fs.algorithms.PrefixSumExecutor(8)

    @fs.kernel
    def scan_inside():
        for i in a:
            a[i] = i
        ex.run(a)

    @fs.kernel
    def sort_inside():
        fs.algorithms.parallel_sort(a)

    for kernel, name in ((scan_inside, "PrefixSumExecutor.run"), (sort_inside, "parallel_sort")):
        with pytest.raises(fs.errors.PythonScopeError) as info:
            kernel()
        message = str(info.value)
        assert name in message and "to_numpy" not in message
        assert "test_algorithms.py" in message
