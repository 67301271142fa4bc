"""The text builders of the known-body templates: IR lines as TorchScript prints them.

A graph (``graph``; ``method`` for a module's forward, whose ``%self`` is typed later), a
constant, a setting read from ``%self``, an ``int[]`` of constants, a guarded raise, a
two-armed ``prim::If``, an Optional unwrapped to a default, a call of another known
function.  Each returns lines indented by two spaces (a graph's top level), so a template
reads as the IR it produces; ``indent`` moves lines into a block.  Every template in
``compiler.known`` (functions and modules alike) writes its IR with these, and the fixed
bodies in ``compiler/known/bodies/*.ir`` were written with them too.

Example: ``graph("%x : Tensor", "  %out : Tensor = aten::relu(%x)\\n")`` is::

    graph(%x : Tensor):
      %out : Tensor = aten::relu(%x)
      return (%out)
"""

from __future__ import annotations

SELF = "$SELF"  # the type of a method's %self, filled in with the class's qualname


def graph(params: str, body: str, result: str = "%out") -> str:
    """The text of ``graph(params): body return (result)``; ``body`` lines are indented by
    two spaces already."""
    return f"graph({params}):\n{body}  return ({result})\n"


def method(params: str, body: str, result: str = "%out") -> str:
    """``graph`` for a module method: ``%self`` (of type ``SELF``) comes first."""
    return graph(f"%self : {SELF}, {params}", body, result)


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


def attr(name: str, type_: str, *, required: bool = False) -> str:
    """``%name = self.name`` (``required=1``: the weights must hold it, see
    ``vm.binding.weights.bind_self``)."""
    flag = ", required=1" if required else ""
    return f'  %{name} : {type_} = prim::GetAttr[name="{name}"{flag}](%self)\n'


def ints(name: str, values: list[int]) -> str:
    """``%name : int[]``, a list of int constants ``%name_0``, ``%name_1``..."""
    consts = "".join(const(f"{name}_{i}", "int", v) for i, v in enumerate(values))
    items = ", ".join(f"%{name}_{i}" for i in range(len(values)))
    return consts + f"  %{name} : int[] = prim::ListConstruct({items})\n"


def indent(lines: str) -> str:
    """``lines`` moved two levels in (into a ``prim::If`` arm)."""
    return "".join("    " + line + "\n" for line in lines.splitlines())


def raise_if(cond: str, message: str, tag: str, cls: str | None = "builtins.ValueError") -> str:
    """Lines that raise ``cls(message)`` when the bool value ``cond`` is true (``cls``
    None: a None class, as TorchScript prints ``raise Exception(message)``, the class
    named in the message itself)."""
    return (
        const(f"{tag}_msg", "str", message)
        + (const(f"{tag}_cls", "NoneType") if cls is None else const(f"{tag}_cls", "str", cls))
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


def call(out: str, type_: str, function: str, args: str, before: str = "") -> str:
    """``%out = function(args)`` as TorchScript prints a call of a scripted function: a
    ``Function`` constant and a ``prim::CallFunction`` (``before``: lines that define the
    arguments).  The callee is a known function, inlined in turn."""
    return (
        before
        + f'  %{out}_fn : Function = prim::Constant[name="{function}"]()\n'
        + f"  %{out} : {type_} = prim::CallFunction(%{out}_fn, {args})\n"
    )
