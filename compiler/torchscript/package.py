"""torch.package archives (``torch.package.PackageExporter``) holding TorchScript modules.

    <top>/.data/version, extern_modules...     the package's records
    <top>/<package>/<resource>                 what ``save_pickle(package, resource, obj)`` wrote
    <top>/.data/ts_code/<id>/data.pkl          a scripted module's object (and constants.pkl)
    <top>/.data/ts_code/code/__torch__/...py   the TorchScript source of every scripted module
    <top>/.data/<key>.storage                  the tensors' storages, shared by all of them

A pickle whose value is a scripted module is a single persistent id, ``('reduce_package',
<object id>, torch.jit._script.unpackage_script_module, ('<id>',))``.  irvm recognizes that
shape from the pickle's opcodes alone (``pickletools.genops``: nothing is unpickled, no
global is resolved), then reads ``.data/ts_code/<id>`` as the ``data.pkl`` and ``code/`` of a
``torch.jit.save`` archive (``select``: the archive's members seen so), through the same
restricted unpickler and bounds.  Any other pickle holds Python objects whose classes are
the package's own Python code (an eager ``nn.Module``, a dict holding a module...): irvm
runs no Python, so such an entry is listed with the classes it needs and refused by name.

A module is named by its path in the package, ``models/net.pkl`` (``vm.load(path,
module="models/net.pkl")``, ``irvm run --module``); ``contents`` lists them all
(``irvm info``).
"""

from __future__ import annotations

import pickletools
from collections.abc import Callable, Mapping

import attrs

from compiler.torchscript.unpickle import ArchiveError

_SCRIPT_LOADER = "torch.jit._script unpackage_script_module"
_MEMO = {"BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE", "FRAME", "PROTO"}


@attrs.frozen
class Packaged:
    """One pickle of a package: its name, the id of the scripted module it is (None when it is
    not one), and why irvm cannot run it (empty when it can)."""

    name: str
    script_id: str | None
    reason: str = ""


def is_package(members: Mapping[str, str]) -> bool:
    """True when an archive's members (relative to its top folder) are a torch.package's."""
    return ".data/extern_modules" in members or any(m.startswith(".data/ts_code/") for m in members)


def contents(members: Mapping[str, str], read: Callable[[str], bytes]) -> list[Packaged]:
    """Every pickle the package holds (``read`` reads a member, bounded), in name order."""
    found = []
    for member in sorted(members):
        if member.startswith(".data/") or not member.endswith(".pkl"):
            continue
        found.append(_classify(member, read(member)))
    return found


def _classify(name: str, data: bytes) -> Packaged:
    ops: list[tuple[str, object]] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name not in _MEMO:
                ops.append((op.name, arg))
    except (ValueError, EOFError) as err:
        return Packaged(name, None, f"not a readable pickle ({err})")
    names = [str(arg) for op, arg in ops if op == "GLOBAL"]
    stacked = [i for i, (op, _) in enumerate(ops) if op == "STACK_GLOBAL"]
    for i in reversed(stacked):  # protocol 4: the module and name strings, then STACK_GLOBAL
        if i >= 2:
            module, attr = ops[i - 2][1], ops[i - 1][1]
            ops[i - 2 : i + 1] = [("GLOBAL", f"{module} {attr}")]
            names.append(f"{module} {attr}")
    if _SCRIPT_LOADER in names:
        shape = [op for op, _ in ops]
        if (len(shape) == 9 and shape[:2] == ["MARK", "BINUNICODE"] and ops[1][1] == "reduce_package"
                and shape[2] in ("BININT", "BININT1", "BININT2", "LONG1", "LONG4")
                and ops[3] == ("GLOBAL", _SCRIPT_LOADER) and shape[4] in ("BINUNICODE", "SHORT_BINUNICODE")
                and shape[5:] == ["TUPLE1", "TUPLE", "BINPERSID", "STOP"]):
            return Packaged(name, str(ops[4][1]))
        return Packaged(name, None, "a Python object holding a TorchScript module: irvm runs only a pickle that is "
                                    "the scripted module itself (save_pickle(package, resource, scripted_module))")
    classes = sorted({n.replace(" ", ".") for n in names})
    shown = ", ".join(classes[:5]) + (", ..." if len(classes) > 5 else "")
    return Packaged(name, None, f"a Python object ({shown or 'plain data'}), not TorchScript: irvm runs no Python "
                                "code; save a torch.jit.script'ed module in the package")


def select(members: Mapping[str, str], read: Callable[[str], bytes], module: str | None, where: str) -> dict[str, str]:
    """The members of ``module`` seen as a ``torch.jit.save`` archive's (``data.pkl``,
    ``constants.pkl``, ``code/``, storages under ``data/`` and ``constants/``); an
    ``ArchiveError`` naming the package's modules when ``module`` is None or not one of them,
    and saying why when it cannot run."""
    found = contents(members, read)
    runnable = [p.name for p in found if p.script_id is not None]
    if module is None or module not in {p.name for p in found}:
        listed = ", ".join(runnable) if runnable else "none"
        said = "choose" if module is None else f"it holds no {module!r}; choose"
        raise ArchiveError(f"{where} is a torch.package archive: {said} one of its TorchScript modules ({listed}) "
                           f"with module= (irvm, irc: --module NAME)")
    chosen = next(p for p in found if p.name == module)
    if chosen.script_id is None:
        raise ArchiveError(f"{where}: {module} is {chosen.reason}")
    base = f".data/ts_code/{chosen.script_id}/"
    if base + "data.pkl" not in members:
        raise ArchiveError(f"{where}: {module} names TorchScript module {chosen.script_id}, which the package lacks")
    seen = {"version": members.get(".data/version", members.get("version", ""))}
    seen = {k: v for k, v in seen.items() if v}
    for member, full in members.items():
        if member.startswith(".data/ts_code/code/"):
            seen[member[len(".data/ts_code/"):]] = full
        elif member.startswith(base):
            seen[member[len(base):]] = full
        elif member.startswith(".data/") and member.endswith(".storage"):
            key = member[len(".data/"):]
            seen[f"data/{key}"] = seen[f"constants/{key}"] = full
    return seen


__all__ = ["Packaged", "contents", "is_package", "select"]
