"""The restricted unpickler (`logicval_hf.serve.unpickling`): plain values load unchanged, nothing else loads, and
nothing a refused pickle says ever runs."""

from __future__ import annotations

import os
import pickle

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.serve.unpickling import UnsafePickleError, restricted_loads

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.binary(max_size=64),
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=examples(200), deadline=None)
@given(value=plain, protocol=st.integers(3, 5))
def test_plain_values_round_trip_for_protocols_3_to_5(value, protocol):
    assert restricted_loads(pickle.dumps(value, protocol=protocol)) == value


def test_a_flow_grpo_request_loads_unchanged():
    request = {"images": [os.urandom(3000) for _ in range(4)],
               "meta_datas": [{"tag": "counting", "include": [{"class": "dog", "count": 2}], "prompt": "two dogs"}] * 4,
               "only_strict": False}
    assert restricted_loads(pickle.dumps(request)) == request


class _Shell:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def test_a_reduce_calling_os_system_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    body = pickle.dumps({"images": [b"x"], "meta_datas": [_Shell(marker)], "only_strict": False})
    with pytest.raises(UnsafePickleError, match="STACK_GLOBAL"):
        restricted_loads(body)
    assert not marker.exists()
    with pytest.raises(UnsafePickleError, match=r"REDUCE|GLOBAL"):  # protocol 0 spells the global out
        restricted_loads(pickle.dumps(_Shell(marker), protocol=0))
    assert not marker.exists()


@pytest.mark.parametrize("value, what", [
    ({1, 2}, "EMPTY_SET"), (frozenset({1}), "FROZENSET"), (bytearray(b"ab"), "BYTEARRAY8"),
    (complex(1, 2), "GLOBAL"), (range(3), "GLOBAL"),
])
def test_types_outside_the_admitted_ones_are_refused(value, what):
    with pytest.raises(UnsafePickleError, match=what):
        restricted_loads(pickle.dumps(value, protocol=5))


def test_protocols_0_to_2_bytes_are_refused_with_the_fix():
    for protocol in (0, 1, 2):
        with pytest.raises(UnsafePickleError, match="protocol 3 or higher"):
            restricted_loads(pickle.dumps({"images": [b"\xff\xd8"]}, protocol=protocol))
    assert restricted_loads(pickle.dumps({"n": [1, "a"]}, protocol=2)) == {"n": [1, "a"]}  # no bytes: no global


@pytest.mark.parametrize("data", [b"", b"garbage", pickle.dumps({"a": [1, 2]})[:-4], b"\x80\x05\x95"])
def test_broken_bytes_are_a_clear_error(data):
    with pytest.raises(UnsafePickleError, match=r"pickle|empty"):
        restricted_loads(data)


def test_shared_references_cannot_blow_up_the_check():
    layer = [b"x"]
    for _ in range(40):  # 2**40 paths through 40 shared lists: the node budget stops the walk
        layer = [layer, layer]
    with pytest.raises(UnsafePickleError, match=r"more than|nests deeper"):
        restricted_loads(pickle.dumps(layer))
