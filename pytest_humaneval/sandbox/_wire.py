"""Plain values across a process boundary: a small tagged binary format, with a decoder that trusts nothing.

The candidate process and the judge of a sample talk in it: the judge sends arguments, the candidate sends back
what its entry point returned or raised. Only plain data crosses: None, bool, int (any size), float (NaN,
infinities and -0.0 exact), complex, str (any code point, lone surrogates included), bytes, list, tuple, dict,
set, frozenset, nested; numpy scalars and numeric arrays; handles of lazy iterators that stay in the candidate;
on request, numpy's scalars, Decimal and Fraction as themselves.
No pickle and no marshal (both are documented as unsafe on hostile bytes): the decoder below builds exact
builtin objects from tags and lengths (and numpy's arrays and scalars, Decimals and Fractions from such plain
parts, checked first), bounds every size and depth, and raises :class:`WireError` on anything else, so a hostile
peer can at worst send a wrong plain value.

Standard library only, no package import: the sandbox supervisor loads this file by path.
"""

import os
import struct
import sys
from collections import Counter

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the supervisor, which loads this file, imports as little as it can
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["ALIKE_PAIRS", "MAX_DEPTH", "MAX_FRAME", "NotPlain", "RemoteArray", "WireError", "check_alike", "decode",
           "encode", "read_frame", "write_frame", "write_frames"]

MAX_FRAME = 64 << 20  # bytes in one message
MAX_DEPTH = 100  # nesting of containers
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, whose methods can be anything
_Q, _D, _DD, _L = struct.Struct(">q"), struct.Struct(">d"), struct.Struct(">dd"), struct.Struct(">I")
_NUMPY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: dtypes whose items are plain numbers
_NUMPY_ITEMS = {"b": bool, "i": int, "u": int, "f": float, "c": complex}  # the plain number of each kind's items
# Numbers that cross as themselves are rebuilt by the judge, and every operation on them runs in C there, where the
# judge's deadline (a signal) cannot stop it: a Decimal's text and a Fraction's terms are bounded so that building,
# hashing and comparing one stays within milliseconds.
DECIMAL_MAX, FRACTION_BITS = 10_000, 1 << 16


class NotPlain(Exception):
    """The value cannot cross: it is not made of plain data (the message says which type)."""


class WireError(Exception):
    """Bytes that are not a valid message: the peer broke the protocol."""


# ---------------------------------------------------------------------------------------------- encoding


def encode(value, iterators=None, numbers=False) -> bytes:
    """``value`` as bytes, through the plain-value rules: exact builtin types as they are; subclasses of
    scalars and containers converted through the *base* type's own methods (never the subclass's, possibly
    rigged, ones); numpy scalars as their Python value and numeric arrays as (dtype, shape, items); builtin lazy
    iterators (generators, map, zip...) registered in ``iterators`` (handle -> iterator) when given. Anything
    else raises NotPlain.

    ``numbers``: numbers the judge compares as EvalPlus does, with their own types, cross as themselves: numpy's
    number scalars as (dtype, value) and 0-d arrays as arrays, ``decimal.Decimal`` as its text and
    ``fractions.Fraction`` as its terms (a subclass of either through the base class's methods), each rebuilt by
    the decoder, which imports numpy, decimal or fractions only then."""
    out = bytearray()
    _encode(value, out, 0, iterators, numbers)
    return bytes(out)


def _encode(value, out, depth, iterators, numbers=False):
    kind = type(value)
    if kind is int:
        if -(1 << 63) <= value < (1 << 63):
            out += _TAG_Q.pack(b"i", value)
        else:
            size = (value.bit_length() + 8) // 8
            out += _TAG_L.pack(b"I", size)
            out += value.to_bytes(size, "big", signed=True)
    elif kind is float:
        out += _TAG_D.pack(b"f", value)
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        out += _TAG_L.pack(b"s", len(data))
        out += data
    elif value is None:
        out += b"N"
    elif value is True:
        out += b"T"
    elif value is False:
        out += b"F"
    elif kind is list or kind is tuple or kind is set or kind is frozenset:
        if depth >= MAX_DEPTH:
            raise NotPlain(f"a value nested more than {MAX_DEPTH} levels deep")
        out += _TAG_L.pack(_CONTAINER_TAGS[kind], len(value))
        for item in value:
            _encode(item, out, depth + 1, iterators, numbers)
    elif kind is dict:
        if depth >= MAX_DEPTH:
            raise NotPlain(f"a value nested more than {MAX_DEPTH} levels deep")
        out += _TAG_L.pack(b"d", len(value))
        for key, item in dict.items(value):
            _encode(key, out, depth + 1, iterators, numbers)
            _encode(item, out, depth + 1, iterators, numbers)
    elif kind is complex:
        out += b"c" + _DD.pack(value.real, value.imag)
    elif kind is bytes:
        out += _TAG_L.pack(b"b", len(value))
        out += value
    elif kind is _Handle:
        out += _TAG_L.pack(b"G", value.number)
    elif kind is RemoteArray:
        out += b"A"
        _encode(value.dtype, out, depth + 1, iterators)
        _encode(value.shape, out, depth + 1, iterators)
        _encode(value.items, out, depth + 1, iterators)
    elif kind is _Number:
        out += value.tag
        for part in value.parts:
            _encode(part, out, depth + 1, iterators)
    else:
        _encode(_exact(value, kind, iterators, numbers), out, depth, iterators, numbers)


_TAG_Q, _TAG_D, _TAG_L = struct.Struct(">cq"), struct.Struct(">cd"), struct.Struct(">cI")
_CONTAINER_TAGS: dict[type, bytes] = {list: b"l", tuple: b"t", set: b"S", frozenset: b"Z"}


def _exact(value, kind, iterators, numbers=False):
    """The exact builtin equivalent of a non-exact value (with ``numbers``, a number that crosses as itself), or
    NotPlain. Types are read with type(), never isinstance(), which a fake ``__class__`` could fool."""
    if numbers:  # first: numpy's float64 and complex128 are subclasses of float and complex
        number = _number(value, kind)
        if number is not None:
            return number
    if issubclass(kind, int):  # bool cannot be subclassed, so this is a subclass of int proper
        return int.__int__(value)
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, bytes):
        return bytes.__getitem__(value, slice(None))
    if issubclass(kind, complex):
        return complex(complex.real.__get__(value), complex.imag.__get__(value))
    if issubclass(kind, list):
        return list(list.__iter__(value))
    if issubclass(kind, tuple):
        return tuple(tuple.__iter__(value))
    if issubclass(kind, dict):
        return dict(dict.items(value))
    if issubclass(kind, set):
        return set(set.__iter__(value))
    if issubclass(kind, frozenset):
        return frozenset(frozenset.__iter__(value))
    if kind.__module__.split(".")[0] == "numpy":
        ndim = getattr(value, "ndim", None)
        if ndim == 0:
            return value.item()  # a numpy scalar: its builtin equivalent
        dtype = getattr(value, "dtype", None)
        if (type(ndim) is int and getattr(dtype, "kind", None) in tuple(_NUMPY_KINDS)
                and not kind.__flags__ & _HEAPTYPE):
            return RemoteArray(str(dtype.str),  # type: ignore[union-attr]  # a dtype: its kind was just read
                               tuple(int(n) for n in value.shape), value.ravel().tolist())
    if not kind.__flags__ & _HEAPTYPE and hasattr(kind, "__next__") and iterators is not None:
        # A builtin lazy iterator (generator, map, filter, zip...): the reference lets a test consume it, so
        # it stays here and the judge gets a handle that asks for one item at a time.
        handle = len(iterators) + 1
        iterators[handle] = value
        return _Handle(handle)
    raise NotPlain(f"a value of type {kind.__module__}.{kind.__qualname__}")


def _number(value, kind):
    """A numpy number scalar or 0-d array, a Decimal or a Fraction as it crosses with ``numbers``; None for any
    other value."""
    if kind.__module__ == "numpy" and not kind.__flags__ & _HEAPTYPE:  # numpy's own type, not a Python subclass
        dtype = getattr(value, "dtype", None)
        plain = _NUMPY_ITEMS.get(getattr(dtype, "kind", None))  # type: ignore[arg-type]  # None: not a number
        if getattr(value, "ndim", None) != 0 or plain is None:
            return None
        item = value.item()
        if type(item) is not plain:  # a longdouble's item is itself: it crosses when a float holds it exactly
            item = plain(item)
            if item != value and item == item:
                raise NotPlain(f"a value of type numpy.{kind.__name__} that no {plain.__name__} holds exactly")
        dtype_text = str(dtype.str)  # type: ignore[union-attr]  # a dtype: its kind was just read
        if kind.__name__ == "ndarray":
            return RemoteArray(dtype_text, (), [item])
        return _Number(b"n", (dtype_text, item))
    decimal = sys.modules.get("decimal")
    if decimal is not None and issubclass(kind, decimal.Decimal):
        text = decimal.Decimal.__str__(value)
        if len(text) > DECIMAL_MAX:
            raise NotPlain(f"a Decimal of more than {DECIMAL_MAX} characters")
        return _Number(b"D", (text,))
    fractions = sys.modules.get("fractions")
    if fractions is not None and issubclass(kind, fractions.Fraction):
        terms = fractions.Fraction.numerator.fget(value), fractions.Fraction.denominator.fget(value)
        if any(type(term) is not int or term.bit_length() > FRACTION_BITS for term in terms):
            raise NotPlain(f"a Fraction whose terms are not ints of at most {FRACTION_BITS} bits")
        return _Number(b"Q", terms)
    return None


class _Number:
    """A number that crosses as itself: its tag and the plain values it is rebuilt from."""

    __slots__ = ("tag", "parts")

    def __init__(self, tag, parts):
        self.tag, self.parts = tag, parts


class _Handle:
    __slots__ = ("number",)

    def __init__(self, number):
        self.number = number


class RemoteArray:
    """A numpy array on the wire: its dtype string, shape and flat items. The decoder rebuilds a real array
    (numpy imported only then), so comparisons behave exactly as numpy's do in the reference harness."""

    __slots__ = ("dtype", "shape", "items")

    def __init__(self, dtype, shape, items):
        self.dtype, self.shape, self.items = dtype, shape, items


# ---------------------------------------------------------------------------------------------- decoding


def decode(data: bytes, iterator: "Any" = None) -> "Any":
    """The value in ``data`` (bytes), built from exact builtin types only. ``iterator(handle)`` makes the
    judge's stand-in for a lazy iterator that stayed in the candidate; without it a handle is refused."""
    view = memoryview(data)
    try:
        value, end = _decode(view, 0, 0, iterator)
    except (struct.error, IndexError):  # a fixed-size field past the end
        raise WireError("a message shorter than its lengths say") from None
    if end != len(view):
        raise WireError(f"{len(view) - end} bytes after the value")
    return value


def _sized(view, pos):
    """(start, end) of a length-prefixed field at ``pos``, checked against the message."""
    size = _L.unpack_from(view, pos)[0]
    start = pos + 4
    if start + size > len(view):
        raise WireError("a message shorter than its lengths say")
    return start, start + size


def _decode(view, pos, depth, iterator):
    tag = view[pos]
    pos += 1
    if tag == 0x66:  # f
        return _D.unpack_from(view, pos)[0], pos + 8
    if tag == 0x69:  # i
        return _Q.unpack_from(view, pos)[0], pos + 8
    if tag == 0x73:  # s
        start, end = _sized(view, pos)
        try:
            return str(view[start:end], "utf-8", "surrogatepass"), end
        except UnicodeDecodeError as exc:
            raise WireError(f"a string that is not UTF-8: {exc.reason}") from None
    if tag == 0x4E:  # N
        return None, pos
    if tag == 0x54:  # T
        return True, pos
    if tag == 0x46:  # F
        return False, pos
    if tag in _CONTAINERS:
        if depth >= MAX_DEPTH:
            raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
        count = _L.unpack_from(view, pos)[0]
        pos += 4
        if tag == 0x64:
            count *= 2
        if count > len(view) - pos:  # every item takes at least one byte
            raise WireError("a message shorter than its lengths say")
        items: list = []
        append = items.append
        depth += 1
        for _ in range(count):
            item, pos = _decode(view, pos, depth, iterator)
            append(item)
        if tag == 0x6C:
            return items, pos
        if tag == 0x74:
            return tuple(items), pos
        try:
            return _hashed(tag, items), pos
        except TypeError as exc:  # an unhashable key or member
            raise WireError(f"an invalid dict key or set member: {exc}") from None
    if tag == 0x49:  # I
        start, end = _sized(view, pos)
        return int.from_bytes(view[start:end], "big", signed=True), end
    if tag == 0x63:  # c
        return complex(*_DD.unpack_from(view, pos)), pos + 16
    if tag == 0x62:  # b
        start, end = _sized(view, pos)
        return bytes(view[start:end]), end
    if tag == 0x47:  # G
        if iterator is None:
            raise WireError("an iterator handle where none may be")
        return iterator(_L.unpack_from(view, pos)[0]), pos + 4
    if tag == 0x41:  # A
        dtype, pos = _decode(view, pos, depth + 1, None)
        shape, pos = _decode(view, pos, depth + 1, None)
        items, pos = _decode(view, pos, depth + 1, None)
        return _array(dtype, shape, items), pos
    if tag == 0x6E:  # n: a numpy scalar
        dtype, pos = _decode(view, pos, depth + 1, None)
        item, pos = _decode(view, pos, depth + 1, None)
        return _scalar(dtype, item), pos
    if tag == 0x44:  # D: a Decimal
        text, pos = _decode(view, pos, depth + 1, None)
        return _decimal(text), pos
    if tag == 0x51:  # Q: a Fraction
        numerator, pos = _decode(view, pos, depth + 1, None)
        denominator, pos = _decode(view, pos, depth + 1, None)
        return _fraction(numerator, denominator), pos
    raise WireError(f"unknown tag {tag:#04x}")


_CONTAINERS = frozenset(b"ltSZd")
BULK = 1024  # members a dict or set is built from in one call
# Keys chosen to hash alike (ints a multiple of 2**61 - 1 apart, tuples and frozensets of such) make building a set
# or dict, and every lookup in it, quadratic: on 2b2788d a list of 4,000 sets of 1,024 such ints (36 MB) held the
# judge 51 s, each set one C call no signal interrupts. So a set (or a dict's keys) is refused when the pairs of
# members that share a hash, each a comparison when it is built, are more than its size + ALIKE_PAIRS: building it
# stays linear. Honest values meet it with room to spare (str and bytes hashes are salted; 200 powers of two, whose
# hashes repeat every 61, make 280 such pairs).
ALIKE_FREE, ALIKE_PAIRS = 16, 256


def check_alike(members):
    """WireError when ``members`` (a list) hold more pairs that share a hash than ``len(members) + ALIKE_PAIRS``,
    or one is unhashable. Linear: the hashes are ints below 2**61, which a set holds without collisions."""
    if len(members) <= ALIKE_FREE:
        return
    try:
        distinct = len(set(map(hash, members)))
    except TypeError as exc:
        raise WireError(f"an invalid dict key or set member: {exc}") from None
    if len(members) - distinct <= ALIKE_FREE:  # at most ALIKE_FREE + 1 alike: under ALIKE_PAIRS pairs
        return
    pairs = sum(count * (count - 1) // 2 for count in Counter(map(hash, members)).values() if count > 1)
    if pairs > len(members) + ALIKE_PAIRS:
        raise WireError(f"a set or dict of {len(members)} members with {pairs} pairs that hash alike (at most "
                        f"{len(members) + ALIKE_PAIRS}): a value made to be slow to judge")


def _hashed(tag, items):
    """A dict (``items`` alternate keys and values), set or frozenset. Keys chosen to collide make building one
    quadratic: refused past ALIKE_PAIRS (``check_alike``). A large one is built from Python code, a member at a
    time, so the judge's deadline (a signal, which Python handles between bytecodes) stops it at once."""
    check_alike(items[::2] if tag == 0x64 else items)
    if tag == 0x64:
        if len(items) <= 2 * BULK:
            return dict(zip(items[::2], items[1::2]))  # noqa: B905 (a hot path)
        return {items[index]: items[index + 1] for index in range(0, len(items), 2)}
    members = items if len(items) <= BULK else (item for item in items)
    return set(members) if tag == 0x53 else frozenset(members)


def _number_kind(dtype):
    """The kind of a dtype string that names a plain number type ("f" for "<f8"), or WireError."""
    if (type(dtype) is not str or len(dtype) > 8 or dtype.lstrip("<>|=")[:1] not in tuple(_NUMPY_KINDS)
            or not dtype.lstrip("<>|=")[1:].isdigit()):
        raise WireError(f"a numpy dtype that is not a plain number type: {dtype!r}")
    return dtype.lstrip("<>|=")[0]


def _numpy():
    try:
        import numpy
    except ImportError:
        raise WireError("a numpy value, but numpy cannot be imported here") from None
    return numpy


def _scalar(dtype, item):
    """numpy's scalar of ``dtype`` holding ``item``, which must be the plain number such a scalar's ``item()`` is."""
    if type(item) is not _NUMPY_ITEMS[_number_kind(dtype)]:
        raise WireError(f"a numpy scalar of {dtype} holding a {type(item).__name__}")
    numpy = _numpy()
    try:
        with numpy.errstate(all="ignore"):  # a value the dtype cannot hold is refused below, without a warning
            value = numpy.dtype(dtype).type(item)
    except (TypeError, ValueError, OverflowError) as exc:
        raise WireError(f"an invalid numpy scalar: {exc}") from None
    if value.item() != item and item == item:
        raise WireError(f"a numpy scalar of {dtype} that cannot hold {item!r}")
    return value


def _decimal(text):
    if type(text) is not str or len(text) > DECIMAL_MAX:
        raise WireError(f"a Decimal that is not a str of at most {DECIMAL_MAX} characters")
    import decimal

    try:
        return decimal.Decimal(text)
    except (ArithmeticError, ValueError, TypeError):
        raise WireError("a Decimal that is not a number") from None


def _fraction(numerator, denominator):
    if (type(numerator) is not int or type(denominator) is not int or denominator <= 0
            or max(numerator.bit_length(), denominator.bit_length()) > FRACTION_BITS):
        raise WireError(f"a Fraction whose terms are not ints of at most {FRACTION_BITS} bits over a positive one")
    import fractions

    return fractions.Fraction(numerator, denominator)


def _array(dtype, shape, items):
    _number_kind(dtype)
    if type(shape) is not tuple or len(shape) > 32 or any(type(n) is not int or n < 0 for n in shape):
        raise WireError("an array shape that is not a tuple of sizes")
    if type(items) is not list or any(type(item) not in (bool, int, float, complex) for item in items):
        raise WireError("array items that are not plain numbers")
    expected = 1
    for n in shape:
        expected *= n
    if expected != len(items):
        raise WireError(f"an array of shape {shape} with {len(items)} items")
    numpy = _numpy()
    try:
        return numpy.array(items, dtype=numpy.dtype(dtype)).reshape(shape)
    except (TypeError, ValueError, OverflowError) as exc:
        raise WireError(f"an invalid array: {exc}") from None


# ---------------------------------------------------------------------------------------------- framing


def write_frame(fd: int, kind: bytes, body: bytes = b"") -> None:
    """One message: 4-byte big-endian length, a one-byte kind, the body."""
    _write_all(fd, _L.pack(len(body) + 1) + kind + body)


def write_frames(fd: int, kind: bytes, bodies: "Sequence[bytes]") -> None:
    """Messages of one kind, one per body, in one write."""
    pack = _L.pack
    _write_all(fd, b"".join(pack(len(body) + 1) + kind + body for body in bodies))


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int, pending: "bytearray | None" = None) -> "tuple[bytes, bytes] | None":
    """(kind, body) of the next message, or None at end of file. WireError for a frame that is too large or
    cut short. ``pending`` (a bytearray kept by the caller between calls) lets one read take a whole small
    message, header and body together."""
    buffer = bytearray() if pending is None else pending
    if not _fill(fd, buffer, 4):
        if buffer:
            raise WireError("a message cut short")
        return None
    size = _L.unpack_from(buffer)[0]
    if not 1 <= size <= MAX_FRAME:
        raise WireError(f"a message of {size} bytes (the limit is {MAX_FRAME})")
    if not _fill(fd, buffer, 4 + size):
        raise WireError("a message cut short")
    kind = bytes(buffer[4:5])
    with memoryview(buffer) as view:  # one copy of the body (a slice of the buffer, then bytes, would be two)
        body = bytes(view[5:4 + size])
    del buffer[:4 + size]
    return kind, body


def _fill(fd, buffer, size):
    """Read until ``buffer`` holds ``size`` bytes; False at end of file first."""
    while len(buffer) < size:
        chunk = os.read(fd, max(size - len(buffer), 1 << 16))
        if not chunk:
            return False
        buffer += chunk
    return True
