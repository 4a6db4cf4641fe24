"""The plain-value format between candidate and judge: exact round trips, and a decoder that trusts nothing."""

from __future__ import annotations

import math
import random
import struct

import pytest

from pytest_humaneval.sandbox import _wire as wire


@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**63, -(2**200) + 7, 10**5000, 0.1, -0.0, math.inf, -math.inf,
    1e-320, complex(1.5, -0.0), "", "héllo", "\ud800 lone surrogate", "\x00\x1b[2J", b"", b"\x00\xff",
    [], (), {}, set(), frozenset(), [1, [2, (3, {4: "x"})]], {(1, 2): frozenset({3}), "k": [None, True]},
    {1, 2.5, "s", (1, 2)}, (None,) * 3, [[[[[]]]]],
], ids=lambda value: type(value).__name__)
def test_plain_values_round_trip_exactly(value):
    decoded = wire.decode(wire.encode(value))
    assert decoded == value
    assert type(decoded) is type(value)
    if isinstance(value, float):
        assert math.copysign(1.0, decoded) == math.copysign(1.0, value)


def test_nan_and_singletons():
    """NaN round-trips as NaN, and singletons keep their identity."""
    assert math.isnan(wire.decode(wire.encode(float("nan"))))
    none, true, false = wire.decode(wire.encode([None, True, False]))
    assert none is None and true is True and false is False


def test_subclasses_become_builtins():
    """Subclasses become their exact builtin base, without their own methods."""
    class Rigged(int):
        def __eq__(self, other):
            return True

        def __int__(self):
            return 999

    class Items(list):
        def __iter__(self):
            return iter([999])

    value = wire.decode(wire.encode([Rigged(7), Items([1, 2])]))
    assert value == [7, [1, 2]] and type(value[0]) is int and type(value[1]) is list


@pytest.mark.parametrize("value", [object(), lambda: 1, bytearray(b"x"), range(3), {1: object()}])
def test_others_refused_with_type(value):
    """Anything else is refused, with its type."""
    with pytest.raises(wire.NotPlain, match="a value of type"):
        wire.encode(value)


def test_nesting_is_capped_on_both_sides():
    deep: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.NotPlain, match="nested"):
        wire.encode(deep)
    crafted = b"l\x00\x00\x00\x01" * (wire.MAX_DEPTH + 5) + b"l\x00\x00\x00\x00"
    with pytest.raises(wire.WireError, match="nested"):
        wire.decode(crafted)


def test_lazy_iterators_become_handles():
    """Lazy iterators become handles, only where allowed."""
    iterators: dict = {}
    data = wire.encode((i for i in range(3)), iterators)
    assert list(iterators) == [1]
    assert wire.decode(data, iterator=lambda handle: ("handle", handle)) == ("handle", 1)
    with pytest.raises(wire.WireError, match="handle"):
        wire.decode(data)
    with pytest.raises(wire.NotPlain):
        wire.encode(iter([1]))  # no registry: an iterator cannot cross


@pytest.mark.parametrize("data", [
    b"", b"?", b"i\x00", b"s\x00\x00\x00\x05ab", b"s\x00\x00\x00\x01\xff", b"l\xff\xff\xff\xff",
    b"d\x00\x00\x00\x01l\x00\x00\x00\x00N",  # an unhashable key
    b"S\x00\x00\x00\x01d\x00\x00\x00\x00",  # an unhashable member
    b"NN",  # trailing bytes
    b"A" + wire.encode("O") + wire.encode((1,)) + wire.encode([1]),  # an object dtype
])
def test_malformed_bytes_wire_error(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_random_bytes_only_wire_errors():
    """Random bytes never raise anything but a wire error."""
    rng = random.Random(20261130)
    seeds = [wire.encode(v) for v in ([1, "a", (2.5, None)], {"k": {1, 2}}, 10**30, b"xyz")]
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            wire.decode(bytes(data))
        except wire.WireError:
            pass


def test_frames_round_trip(tmp_path):
    """Frames round-trip, and oversized or cut frames are refused."""
    import os

    read_end, write_end = os.pipe()
    try:
        wire.write_frame(write_end, b"V", wire.encode([1, 2]))
        wire.write_frame(write_end, b"R")
        pending = bytearray()
        assert wire.read_frame(read_end, pending) == (b"V", wire.encode([1, 2]))
        assert wire.read_frame(read_end, pending) == (b"R", b"")
        os.write(write_end, struct.pack(">I", wire.MAX_FRAME + 1))
        with pytest.raises(wire.WireError, match="limit"):
            wire.read_frame(read_end)
        os.write(write_end, struct.pack(">I", 10) + b"V12")
        os.close(write_end)
        write_end = -1
        with pytest.raises(wire.WireError, match="cut short"):
            wire.read_frame(read_end)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_numpy_values_cross():
    """NumPy values cross as NumPy would compare them."""
    numpy = pytest.importorskip("numpy")
    assert wire.decode(wire.encode(numpy.int64(7))) == 7
    assert type(wire.decode(wire.encode(numpy.float32(0.5)))) is float
    array = wire.decode(wire.encode(numpy.arange(6, dtype=numpy.int32).reshape(2, 3)))
    assert type(array) is numpy.ndarray and array.dtype == numpy.int32 and array.shape == (2, 3)
    with pytest.raises(wire.NotPlain):
        wire.encode(numpy.array([object()], dtype=object))
