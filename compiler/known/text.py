"""Text builders for the bodies of ``compiler.known.functions``: a graph, a constant, a
guarded raise, a two-armed ``prim::If``, an Optional unwrapped to a default.

The body modules (``known_functions_<family>.py``) write their IR with these; keeping them
here, below both the table and the families, lets the table import the families without
the families importing the table back.
"""

from __future__ import annotations


def graph(params: str, body: str, result: str = "%out") -> str:
    """The text of ``graph(params): body return (result)``; ``body`` lines are indented by
    two spaces already."""
    return f"graph({params}):\n{body}  return ({result})\n"


def const(name: str, type_: str, value: object = None) -> str:
    """A ``prim::Constant`` line; ``value`` None makes a None constant."""
    if value is None:
        return f"  %{name} : {type_} = prim::Constant()\n"
    if isinstance(value, str):
        text = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'  %{name} : {type_} = prim::Constant[value="{text}"]()\n'
    if isinstance(value, bool):
        return f"  %{name} : {type_} = prim::Constant[value={int(value)}]()\n"
    return f"  %{name} : {type_} = prim::Constant[value={value!r}]()\n"


def raise_if(cond: str, message: str, tag: str, cls: str = "builtins.ValueError") -> str:
    """Lines that raise ``cls(message)`` when the bool value ``cond`` is true."""
    return (
        const(f"{tag}_msg", "str", message)
        + const(f"{tag}_cls", "str", cls)
        + f"   = prim::If({cond})\n"
        + "    block0():\n"
        + f"       = prim::RaiseException(%{tag}_msg, %{tag}_cls)\n"
        + "      -> ()\n"
        + "    block1():\n"
        + "      -> ()\n"
    )


def choose(out: str, type_: str, cond: str, then: tuple[str, str], other: tuple[str, str], indent: int = 2) -> str:
    """``%out = prim::If(cond)`` whose arms run ``then[0]`` / ``other[0]`` (lines at two
    spaces, re-indented here) and yield ``then[1]`` / ``other[1]``."""
    pad = " " * indent

    def arm(lines: str) -> str:
        return "".join(f"{pad}    {line[2:]}\n" for line in lines.splitlines())

    return (
        f"{pad}%{out} : {type_} = prim::If({cond})\n"
        f"{pad}  block0():\n{arm(then[0])}{pad}    -> ({then[1]})\n"
        f"{pad}  block1():\n{arm(other[0])}{pad}    -> ({other[1]})\n"
    )


def unwrap(name: str, optional: str, type_: str, default: str) -> str:
    """``%name = optional if optional is not None else default`` (``default`` a value)."""
    return (
        const(f"{name}_none", "NoneType")
        + f"  %{name}_is_none : bool = aten::__is__(%{optional}, %{name}_none)\n"
        + choose(
            name,
            type_,
            f"%{name}_is_none",
            ("", default),
            (f"  %{name}_given : {type_} = prim::unchecked_cast(%{optional})\n", f"%{name}_given"),
        )
    )
