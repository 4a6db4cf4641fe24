"""MBPP+ (EvalPlus): the inputs JSON cannot hold, rebuilt as EvalPlus rebuilds them, and its special oracles.

JSON has no tuple, set or complex number, so EvalPlus's MBPP+ release stores them as lists (complex numbers as
strings) and EvalPlus rebuilds them by task before judging (``mbpp_deserialize_inputs`` in
``evalplus/data/mbpp.py``, 0.3.1; the shared data's ``mbppplus/PROVENANCE.md``). A harness that skips this judges
other inputs than EvalPlus does: ``Mbpp/2``'s canonical solution returns ``tuple(set(a) & set(b))`` either way,
but ``Mbpp/63``'s indexes tuples and ``Mbpp/115`` tests for empty sets. The rules below are EvalPlus's, written
as a table of shapes (``bench/compare_evalplus.py --dataset mbppplus`` checks them against EvalPlus's own code
on every input of the release).

They apply to an EvalPlus-format file whose every task id is ``Mbpp/<number>``: as EvalPlus applies them to any
file it is given as MBPP+ (``MBPP_OVERRIDE_PATH``), keyed by the task's number.

EvalPlus also judges some MBPP+ entry points by a rule of their own instead of ``out == exp`` (its
``_special_oracle.py`` and ``eval/__init__.py``): :func:`oracle` names it for the judge (``sandbox/_suite.py``).

No pytest import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TASK_ID", "is_mbpp", "oracle", "rebuild_inputs"]

TASK_ID = re.compile(r"^Mbpp/(\d+)$")

Args = Sequence[Any]


def _each_tuple(args: Args) -> list[Any]:
    """Every argument (a list) a tuple."""
    return [tuple(arg) for arg in args]


def _each_item_tuple(args: Args) -> list[Any]:
    """Every argument a list of tuples."""
    return [[tuple(item) for item in arg] for arg in args]


def _first_items_tuples(args: Args) -> list[Any]:
    """The first argument a list of tuples; the second as it is (and nothing after it, as EvalPlus's rule)."""
    return [[tuple(item) for item in args[0]], args[1]]


def _second_tuple(args: Args) -> list[Any]:
    return [args[0], tuple(args[1])]


def _first_tuple_with_second(args: Args) -> list[Any]:
    return [tuple(args[0]), args[1]]


def _first_tuple_with_two(args: Args) -> list[Any]:
    return [tuple(args[0]), args[1], args[2]]


def _sets(args: Args) -> list[Any]:
    """Mbpp/115: a list of sets; an empty list (or anything not a list) becomes ``{}``, an empty *dict*, as
    EvalPlus's rule makes it."""
    return [[set(item) if isinstance(item, list) and len(item) else {} for item in args[0]]]


def _float_and_complex(args: Args) -> tuple[Any, ...]:
    return (float(args[0]), complex(args[1]))


def _complex(args: Args) -> list[Any]:
    return [complex(args[0])]


def _tuples_of_tuples(args: Args) -> list[Any]:
    """Every argument a tuple of tuples."""
    return [tuple(tuple(item) for item in arg) for arg in args]


def _mixed_then_tuples(args: Args) -> list[Any]:
    """Mbpp/278: the lists inside the first argument tuples, then every argument a tuple."""
    return [tuple(tuple(item) if isinstance(item, list) else item for item in args[0])]


def _dict_of_tuples(args: Args) -> list[Any]:
    return [{key: tuple(value) for key, value in args[0].items()}, *args[1:]]


def _all_tuples(value: Any) -> Any:
    """Every list, at any depth, a tuple (the argument list itself included)."""
    if isinstance(value, list):
        return tuple(_all_tuples(item) for item in value)
    return value


_SHAPES: dict[Callable[[Args], Any], tuple[int, ...]] = {
    _each_tuple: (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726, 740,
                  744, 809),
    _each_item_tuple: (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780),
    _first_items_tuples: (75, 413, 444, 753),
    _second_tuple: (106, 750),
    _sets: (115,),
    _float_and_complex: (124,),
    _first_tuple_with_second: (250, 405, 446, 617, 720, 763, 808),
    _tuples_of_tuples: (259, 401, 445),
    _mixed_then_tuples: (278,),
    _first_tuple_with_two: (307,),
    _dict_of_tuples: (722,),
    _complex: (252,),
    _all_tuples: (580, 615, 791),
}
_BY_TASK = {number: shape for shape, numbers in _SHAPES.items() for number in numbers}

# EvalPlus's oracles by entry point (MBPP+ only): the judge's names for them.
_ORACLES = {
    "are_equivalent": "any_output",  # Mbpp/164: any output passes (EvalPlus: exact or True)
    "sum_div": "or_zero",  # Mbpp/295: the output, or 0
    "surface_Area": "surface_area",  # Mbpp/581: |out - round(the pyramid's area, height as the apex's)| <= atol
    "digit_distance_nums": "digit_distance",  # Mbpp/558: or the distance of the zero-padded numbers
    # the output's set equals the expected output's set
    **dict.fromkeys(("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly", "larg_nnum",
                     "intersection_array", "find_dissimilar", "Diff"), "set_equal"),
    # only whether the output is None (a bool output is compared as it is): the canonical solutions return
    # re.Match objects, which no harness can compare
    **dict.fromkeys(("check_str", "text_match_three", "text_starta_endb"), "not_none"),
}


def is_mbpp(task_ids: Sequence[str]) -> bool:
    """Whether a dataset is MBPP+ by EvalPlus's naming: every task id ``Mbpp/<number>``."""
    return bool(task_ids) and all(TASK_ID.match(task_id) for task_id in task_ids)


def rebuild_inputs(task_id: str, inputs: Sequence[Args]) -> tuple[Any, ...]:
    """The argument lists of an MBPP+ task as EvalPlus judges them (tuples, sets, complex numbers rebuilt)."""
    match = TASK_ID.match(task_id)
    shape = _BY_TASK.get(int(match.group(1))) if match else None
    if shape is None:
        return tuple(inputs)
    return tuple(shape(args) for args in inputs)


def oracle(entry_point: str) -> str | None:
    """EvalPlus's special oracle for an MBPP+ entry point, or None: compare with the expected output."""
    return _ORACLES.get(entry_point)
