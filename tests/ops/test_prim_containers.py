"""Lists, dicts and strings against TorchScript: each body is scripted by torch, its graph
resolved and run by irvm, and both must give the same value (mutations included, since
every case returns the mutated container) or both must raise."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.against_torch import outcome, same
from tests.support.prim_torch import Scripted

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@functools.cache
def scripted(src: str) -> Scripted:
    return Scripted(src)


def check(src: str, *args: object) -> None:
    fn = scripted(src)
    theirs, ours = outcome(fn.theirs, *args), outcome(fn.ours, *args)
    assert theirs[0] == ours[0], f"{src}\n{args}: torch {theirs}, irvm {ours} via {fn.kinds()}"
    assert same(theirs[1], ours[1]), f"{src}\n{args}: torch {theirs[1]!r}, irvm {ours[1]!r} via {fn.kinds()}"


small = st.integers(-4, 4)

INT_LIST_BODIES = [
    "l.append(x)\n    return l", "l.extend([x, i])\n    return l", "l.insert(i, x)\n    return l",
    "y = l.pop(i)\n    return y, l", "y = l.pop()\n    return y, l", "l.remove(x)\n    return l",
    "l.reverse()\n    return l", "l.sort()\n    return l", "l.sort(reverse=True)\n    return l",
    "return l.index(x)", "return l.count(x)", "l.clear()\n    return l", "return l[i:x]",
    "return l[::-1]", "return l[i::2]", "return l + [x]", "return l * i", "l[i] = x\n    return l",
    "return l[i]", "return x in l", "return len(l)", "return min(l)", "return max(l)", "return sum(l)",
    "return sorted(l)", "return l == [x, i]", "return l != [x]", "return list(l)", "return l.copy()",
    "return min(l, [x])", "return max(l, [x, i])", "del l[i]\n    return l", "return any(l)",
    "return all(l)",
]  # fmt: skip


@given(xs=st.lists(small, max_size=5), x=small, i=small)
def test_int_list_methods_match_torchscript(xs: list[int], x: int, i: int) -> None:
    for body in INT_LIST_BODIES:
        check(f"def f(l: List[int], x: int, i: int):\n    {body}", xs, x, i)


FLOAT_LIST_BODIES = ["l.remove(x)\n    return l", "return x in l", "return l.index(x)", "l.sort()\n    return l",
                     "return min(l)", "return sum(l)", "return l == [x]", "return str(l)"]  # fmt: skip


@given(xs=st.lists(st.sampled_from([0.0, -1.5, 2.0, 1e-3, 3.0]), max_size=4), x=st.sampled_from([0.0, 2.0, 7.5]))
def test_float_list_methods_match_torchscript(xs: list[float], x: float) -> None:
    for body in FLOAT_LIST_BODIES:
        check(f"def f(l: List[float], x: float):\n    {body}", xs, x)


def chars(alphabet: str, min_size: int = 0, max_size: int = 5) -> st.SearchStrategy[str]:
    # lists of characters rather than st.text: hypothesis's text shrinker trips over some alphabets
    return st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size).map("".join)


words = chars("ab ,X1")
STR_LIST_BODIES = ["return s in l", "l.remove(s)\n    return l", "l.sort()\n    return l", "return ','.join(l)",
                   "return l.index(s)", "return l.count(s)", "return l == [s]", "return sorted(l)"]  # fmt: skip


@given(xs=st.lists(words, max_size=4), s=words)
def test_str_list_methods_match_torchscript(xs: list[str], s: str) -> None:
    for body in STR_LIST_BODIES:
        check(f"def f(l: List[str], s: str):\n    {body}", xs, s)


def test_tensor_lists_compare_elements_like_torchscript() -> None:
    import numpy as np

    a, b = np.array([1.0], dtype=np.float32), np.array([2.0], dtype=np.float32)
    check("def f(l: List[torch.Tensor], t: torch.Tensor):\n    return l.count(t)", [a, b, a.copy()], a)
    check("def f(l: List[torch.Tensor], t: torch.Tensor):\n    return l.index(t)", [b, a], a.copy())
    check("def f(l: List[torch.Tensor], t: torch.Tensor):\n    l.append(t)\n    return len(l)", [a], b)
    check("def f(l: List[torch.Tensor], t: torch.Tensor):\n    return l.count(t)", [np.ones(2, np.float32)], a)


DICT_BODIES = [
    "d[k] = v\n    return d", "return d[k]", "return d.get(k)", "return d.get(k, v)", "return d.keys()",
    "return d.values()", "return d.items()", "return len(d)", "return k in d", "y = d.pop(k)\n    return y, d",
    "y = d.pop(k, v)\n    return y, d", "y = d.setdefault(k, v)\n    return y, d", "d.clear()\n    return d",
    "return d.copy()", "d.update({k: v})\n    return d", "y = d.popitem()\n    return y, d", "return dict(d)",
    "del d[k]\n    return d", "return str(d)", "return {k: v, 'z': 1}",
]  # fmt: skip


@given(d=st.dictionaries(st.sampled_from("abcz"), small, max_size=3), k=st.sampled_from("abc"), v=small)
def test_str_dict_methods_match_torchscript(d: dict[str, int], k: str, v: int) -> None:
    for body in DICT_BODIES:
        check(f"def f(d: Dict[str, int], k: str, v: int):\n    {body}", d, k, v)


INT_DICT_BODIES = ["d[k] = v\n    return d", "return d[k]", "return k in d", "return d.keys()",
                   "y = d.pop(k, v)\n    return y, d", "return d.items()"]  # fmt: skip


@given(d=st.dictionaries(small, st.floats(-2, 2), max_size=3), k=small, v=st.floats(-2, 2))
def test_int_dict_methods_match_torchscript(d: dict[int, float], k: int, v: float) -> None:
    for body in INT_DICT_BODIES:
        check(f"def f(d: Dict[int, float], k: int, v: float):\n    {body}", d, k, v)


STR_BODIES = [
    "return s + t", "return s == t", "return s < t", "return s >= t", "return s[i]", "return s[i:j]",
    "return s[::-1]", "return len(s)", "return s.split()", "return s.split(',')", "return s.split(' ', 1)",
    "return s.strip()", "return s.strip('a')", "return s.lstrip()", "return s.rstrip(' ,')",
    "return s.startswith(t)", "return s.endswith(t)", "return s.startswith(t, i, j)", "return s.endswith(t, i)",
    "return s.find(t)", "return s.find(t, i, j)", "return s.rfind(t)", "return s.count(t)",
    "return s.count(t, i, j)", "return s.replace(t, 'Q')", "return s.replace('a', 'bb', 1)", "return s.lower()",
    "return s.upper()", "return t.join([s, s])", "return s.isdigit()", "return s.isspace()", "return s.title()",
    "return s.capitalize()", "return s.center(abs(j))", "return s.zfill(abs(j))", "return s.ljust(abs(j), '*')", "return list(s)",
    "return str(i)", "return '{}-{}'.format(s, i)", "return s.partition(',')", "return s.rpartition(',')",
    "return s.splitlines()", "return s.index(t)", "return s.rsplit(' ', 1)", "return s.isalpha()",
    "return s.swapcase()", "return s.expandtabs()", "return s.islower()", "return s.isupper()",
]  # fmt: skip
text = chars("ab ,X1\n", max_size=6)


# t is never empty: TorchScript's own replace/count loop forever on an empty substring.
@given(s=text, t=chars("ab ,", min_size=1, max_size=2), i=st.integers(-7, 7), j=st.integers(-7, 7))
def test_str_methods_match_torchscript(s: str, t: str, i: int, j: int) -> None:
    for body in STR_BODIES:
        check(f"def f(s: str, t: str, i: int, j: int):\n    {body}", s, t, i, j)


@given(
    x=st.floats(allow_nan=True, allow_infinity=True),
    n=st.integers(-(2**63), 2**63 - 1),
    xs=st.lists(st.floats(-1e6, 1e6), max_size=3),
    b=st.booleans(),
)
def test_str_and_format_render_values_like_torchscript(x: float, n: int, xs: list[float], b: bool) -> None:
    check(
        "def f(x: float, n: int, l: List[float], b: bool):\n"
        "    return '{} {} {} {} {}'.format(x, n, l, b, (n, 'a')), str(x), str(l), str((x,)), str(None)",
        x, n, xs, b,
    )  # fmt: skip


def test_format_with_too_few_arguments_raises_in_both() -> None:
    check("def f(s: str):\n    return '{} {}'.format(s)", "a")
    check("def f(s: str):\n    return '{}'.format(s, 1, 2)", "a")
