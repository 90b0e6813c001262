"""Order keys of strings (``engine/string_order.py``): compiled code orders interned strings by
them, so strings that order differently byte-wise must never get keys in the opposite order,
and strings whose first 8 bytes (padded with zero bytes) differ must get different keys."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from grizzly_py.engine.string_order import order_keys

texts = st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from("ab\x00é€zZ"), max_size=12)), max_size=30)


def _check(strings: list, keys: list) -> None:
    for a, ka in zip(strings, keys):
        if a is None:
            continue
        for b, kb in zip(strings, keys):
            if b is None:
                continue
            ba, bb = a.encode(), b.encode()
            if ba < bb:
                assert ka <= kb, (a, b)
            if ba[:8].ljust(8, b"\0") != bb[:8].ljust(8, b"\0"):
                assert ka != kb, (a, b)


@given(texts, st.integers(0, 5))
def test_order_keys_follow_byte_order(strings, cut):
    array = pa.array(strings, pa.string()).slice(min(cut, len(strings)))
    keys = order_keys(array)
    assert keys.type == pa.int64() and keys.null_count == array.null_count
    _check(array.to_pylist(), keys.to_pylist())
    large = order_keys(array.cast(pa.large_string()))
    assert large.equals(keys)
    assert order_keys(array.dictionary_encode()).equals(keys)
