"""A hypothesis strategy for programs whose outputs are what a backend finds hardest to return:
constants, containers of constants, shape-derived values that fold to constants, inputs passed
straight through, and aliases (one value returned twice, a view of an input).

``output_programs()`` draws IR text of a graph ``(%x : Tensor, %n : int)`` returning one to
four such values (a tuple when more than one).  The static runtime computes shape-derived
values once per plan and returns the recorded value; constants are bound at construction;
so each kind reaches a different path of its code generation.
"""

from __future__ import annotations

from hypothesis import strategies as st

# each entry: (lines defining %o{i} given the index i, the type of %o{i})
_SCALARS = [
    ("%o{i} : int = prim::Constant[value=7]()", "int"),
    ("%o{i} : float = prim::Constant[value=2.5]()", "float"),
    ("%o{i} : bool = prim::Constant[value=1]()", "bool"),
    ('%o{i} : str = prim::Constant[value="hi"]()', "str"),
    ("%o{i} : NoneType = prim::Constant()", "NoneType"),
]
_DERIVED = [
    # len([]): a list built from nothing, measured
    ("%e{i} : int[] = prim::ListConstruct()\n  %o{i} : int = aten::len(%e{i})", "int"),
    ("%z{i} : int = prim::Constant[value=0]()\n  %o{i} : int = aten::size(%x, %z{i})", "int"),
    ("%o{i} : int = aten::dim(%x)", "int"),
    ("%o{i} : int[] = aten::size(%x)", "int[]"),
    ("%a{i} : int = prim::Constant[value=3]()\n  %b{i} : int = prim::Constant[value=4]()\n"
     "  %o{i} : (int, int) = prim::TupleConstruct(%a{i}, %b{i})", "(int, int)"),
    ("%a{i} : int = prim::Constant[value=3]()\n  %o{i} : int[] = prim::ListConstruct(%a{i}, %a{i})", "int[]"),
    ("%a{i} : int = prim::Constant[value=1]()\n  %b{i} : int = aten::add(%n, %a{i})", None),
]
_PASSED = [
    ("", "x"),  # the input itself
    ("", "n"),
    ("%m{i} : int = prim::Constant[value=-1]()\n  %l{i} : int[] = prim::ListConstruct(%m{i})\n"
     "  %o{i} : Tensor = aten::view(%x, %l{i})", "Tensor"),
    ("%k{i} : float = prim::Constant[value=2.]()\n  %o{i} : Tensor = aten::mul(%x, %k{i})", "Tensor"),
]


@st.composite
def output_programs(draw: st.DrawFn) -> str:
    """The text of one graph whose outputs are constants, containers, folded shapes, inputs
    and aliases (see the module docstring)."""
    lines: list[str] = []
    outs: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["scalar", "derived", "passed", "alias"]))
        if kind == "alias" and outs:
            outs.append(draw(st.sampled_from(outs)))
            continue
        table = {"scalar": _SCALARS, "derived": _DERIVED, "passed": _PASSED, "alias": _PASSED}[kind]
        text, type_text = draw(st.sampled_from(table))
        if type_text is None:  # a computed int returned
            lines.append(text.format(i=i))
            outs.append(f"%b{i}")
            continue
        if text:
            lines.append(text.format(i=i))
            outs.append(f"%o{i}")
        else:
            outs.append(f"%{type_text}")
    body = "\n".join(f"  {line}" for line in lines)
    ret = f"  return ({', '.join(outs)})"
    return f"graph(%x : Tensor, %n : int):\n{body}\n{ret}\n" if body else f"graph(%x : Tensor, %n : int):\n{ret}\n"


__all__ = ["output_programs"]
