"""The ``.irbc`` file: a compiled program on disk, safe to load from anyone.

A file is a zip archive (never pickle: loading cannot run code) whose first member,
stored uncompressed, is named ``irvm-bytecode``, so every file starts with the same
bytes (``PK\\x03\\x04`` ... ``irvm-bytecode`` at offset 30).  Members:

- ``irvm-bytecode``: JSON header: format version, producer, and the SHA-256 of the rest;
- ``program.json``: functions (instructions as ``[opcode, x, n]``), operator tables
  (``OpRef`` fields), constant tables, spans and names, the entry, input names/types;
  and the operator every node of the optimized IR resolved to (``node_operators``, a
  table, and ``node_ops``, one index per node, -1 for none), which the static runtime
  binds without resolving (``Program.node_refs``; optional);
- ``arrays/K.npy``: tensor constants, read with ``allow_pickle=False``;
- ``source.ir``: the IR text the program was compiled from, and the compile options, so
  that a newer irvm's command line can compile an old file again (options include the
  module attribute values folded into the program, when it was compiled with weights);
- ``ir.json``: the optimized IR as tables (``vm.ir.tables``), for the static runtime
  (which runs the IR, and decodes them only when one is built, ``vm.static.ir_text``:
  data, no parser) and ``irc viz``, and ``spans.json``, the original span of each of its
  nodes;
- ``checks.json``: the check table, the few nodes of the IR that binding weights and the
  checks before a run read (``vm.program.check_graph``), so that running a program with weights
  parses no IR either.

The file is the compiled program: loading runs no pass, resolves no overload and
parses no IR (fusion groups are stored resolved, ``vm.fusion.kernels.FusionSpec``; ``%self``'s
attribute reads as a table, ``vm.program.self_reads``; the checks' nodes, ``vm.program.check_graph``).
Format 4 (format 3 carried the optimized IR as printed text, which only the IR parser
could read back; format 2 had no check table).

Loading checks, in order: the magic, the format version (a newer or an older format is
refused in one line, ``OlderFormatError`` carrying the older file's IR text so that the
command line can compile it again: the VM itself never compiles), the hash, the JSON's shape, and then
``verify``: opcodes known; register, constant, operator and function indices in range;
jump targets inside the function; the stack depth the same on every path into an
instruction, never negative, and equal to the outputs at RET; operator names resolvable
with a consistent arity; then the other tables (``vm.program.irbc_tables``: ``self_reads``,
node spans).  Every failure is a ``BytecodeError`` naming the file and what
is wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from vm.binding.folded import folds_from_stored, stored_folds
from vm.binding.strict import keys_from_stored, stored_keys
from vm.core.errors import BytecodeError, IRError, RunError, Span
from vm.core.gc_pause import gc_paused
from vm.files.arrays import check_npy_bytes
from vm.files.atomic import atomic_write
from vm.files.kinds import MAGIC_MEMBER, has_magic, is_irbc
from vm.ops.registry import OpRef
from vm.program.bytecode import (
    Function,
    Instruction,
    Opcode,
    Operand,
    Program,
    loop_exit_effect,
    stack_effect,
)
from vm.program.irbc_tables import check_counts, check_tables, operator_problem, read_checks, read_state

FORMAT_VERSION = 4
PRODUCER = "irvm 0.1.0"


# ---------------------------------------------------------------------------------------
# Writing


@gc_paused()  # the tables are ~10^5 small lists while the program's IR is alive: see vm.core.gc_pause
def save(program: Program, path: Path | str, options: dict[str, Any] | None = None) -> None:
    """Write ``program`` to ``path`` (see the module docstring for the layout)."""
    arrays: dict[str, np.ndarray] = {}
    body = {
        "entry": program.entry,
        "input_names": list(program.input_names),
        "input_types": list(program.input_types),
        "n_outputs": program.n_outputs,
        "output_types": list(program.output_types),
        "input_defaults": [_encode(v, arrays) for v in program.input_defaults],
        "functions": [_function_json(f, arrays) for f in program.functions],
        "self_reads": [list(r) for r in program.self_reads],
        "state": list(program.state),
        **_node_refs_json(program.node_refs, arrays),
    }
    body.update(stored_keys(program))  # the model's keys and its source's reads (vm.binding.strict)
    if program.specialized:  # the tensors its folds made, and what from (vm.binding.folded)
        body["specialized"] = stored_folds(program, lambda value: _encode(value, arrays))
    members: list[tuple[str, bytes]] = [("program.json", json.dumps(body).encode())]
    for name, array in arrays.items():
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        members.append((name, buf.getvalue()))
    loaded = program.module_if_loaded
    folded = dict(loaded.attributes) if loaded is not None else dict(program.folded)
    if folded:  # compiled with weights: recompiling needs the same attribute values
        options = {**(options or {}), "attributes": folded}
    source = json.dumps({"text": program.source, "options": options or {}}).encode()
    members.append(("source.ir", source))
    members.append(("ir.json", json.dumps(_ir_table(program)).encode()))
    members.append(("spans.json", json.dumps(list(program.node_spans)).encode()))
    members.append(("checks.json", json.dumps(program.check_table()).encode()))
    header = {"format": FORMAT_VERSION, "producer": PRODUCER, "sha256": _digest(members)}

    def write(f: Any) -> None:
        with zipfile.ZipFile(f, "w") as zf:
            zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
            for name, data in members:
                # the fastest deflate level: a 40k-node program's members are ~60 MB of text and
                # arrays, which level 6 took a second to squeeze by a few percent more
                zf.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)

    atomic_write(path, write)  # a fresh temporary file, renamed: never half a file, never another's file


def _ir_table(program: Program) -> dict[str, Any] | None:
    """The optimized IR as tables: the module's, or, read from a file and not decoded
    since, the table it was read with (None: a program without one)."""
    from vm.ir.tables import module_table

    module = program.module_if_loaded
    return module_table(module) if module is not None else program.ir_table


def _digest(members: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(members):
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _opref_json(r: OpRef, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "name": r.name,
        "n_inputs": r.n_inputs,
        "n_outputs": r.n_outputs,
        "defaults": [_encode(d, arrays) for d in r.defaults],
        "attrs": [[k, _encode(v, arrays)] for k, v in r.attrs],
    }


def _node_refs_json(refs: tuple[Any, ...], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The operator of every IR node (``Program.node_refs``): a table of distinct
    operators and one index per node (-1: none)."""
    if not refs:
        return {}
    table: dict[Any, int] = {}
    distinct: list[OpRef] = []
    index = []
    for r in refs:
        if r is None:
            index.append(-1)
            continue
        key: Any = r
        try:
            hash(r)
        except TypeError:  # an operator with an array among its defaults or attributes
            key = id(r)
        if key not in table:
            table[key] = len(distinct)
            distinct.append(r)
        index.append(table[key])
    return {"node_operators": [_opref_json(r, arrays) for r in distinct], "node_ops": index}


def _function_json(f: Function, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "name": f.name,
        "n_inputs": f.n_inputs,
        "n_outputs": f.n_outputs,
        "n_registers": f.n_registers,
        "code": [[int(i.op), i.x, i.n] for i in f.instructions],
        "constants": [_encode(c, arrays) for c in f.constants],
        "operators": [_opref_json(r, arrays) for r in f.operators],
        # instructions of one node share its span and text: each is stored once, in a table
        "spans": _tabled([None if s is None else (s.file, s.line, s.col, s.source_line) for s in f.spans]),
        "nodes": _tabled(list(f.nodes)),
        "register_names": list(f.register_names),
        "constant_names": list(f.constant_names),
    }


def _tabled(items: list[Any]) -> dict[str, list[Any]]:
    """``items`` as a table of the distinct ones and an index into it per item."""
    table: dict[Any, int] = {}
    index = [table.setdefault(item, len(table)) for item in items]
    return {"table": list(table), "index": index}


def _untabled(stored: Any, convert: Any) -> tuple[Any, ...]:
    table = [convert(item) for item in stored["table"]]
    return tuple([table[i] for i in stored["index"]])


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """Tagged JSON for a constant: scalars and strings as themselves, the rest in a dict."""
    from vm.binding.unbound import UnboundTensor
    from vm.core.enum_values import EnumValue
    from vm.core.types import Type

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        name = f"arrays/{len(arrays)}.npy"
        arrays[name] = np.asarray(value)
        return {"npy": name}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, UnboundTensor):
        return {"unbound": value.name}
    if isinstance(value, Type):
        return {"irtype": str(value)}
    if isinstance(value, EnumValue):
        # its value too, when known and storable (int, float or str: prim::EnumValue's results)
        known = isinstance(value.value, (int, float, str)) and not isinstance(value.value, bool)
        return {"enum": [value.qualname, value.name, *([value.value] if known else [])]}
    raise BytecodeError(f"cannot store a constant of type {type(value).__name__} in an .irbc file: {value!r}")


# ---------------------------------------------------------------------------------------
# Reading


def load(path: Path | str) -> Program:
    """Read, check and verify an ``.irbc`` file; BytecodeError when anything is wrong."""
    where = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise
    except OSError as err:
        raise BytecodeError(f"{where}: cannot read: {err.strerror or err}") from None
    try:
        with gc_paused():  # a big program is ~10^5 small objects: see vm.core.gc_pause
            return _load_bytes(data, where)
    except IRError as err:
        if isinstance(err, BytecodeError):
            raise
        raise BytecodeError(f"{where}: malformed irvm bytecode file ({err})") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as err:
        raise BytecodeError(f"{where}: not a readable irvm bytecode file (damaged archive: {err})") from None
    except (KeyError, ValueError, TypeError, IndexError, AttributeError, UnicodeDecodeError, RecursionError) as err:
        # zlib.error and json.JSONDecodeError are ValueErrors (or subclasses of them)
        raise BytecodeError(f"{where}: malformed irvm bytecode file ({type(err).__name__}: {err})") from None
    except Exception as err:  # noqa: BLE001  (zlib.error and other codec failures on a damaged member)
        raise BytecodeError(f"{where}: malformed irvm bytecode file ({type(err).__name__}: {err})") from None


def _load_bytes(data: bytes, where: str) -> Program:
    if not has_magic(data):
        raise BytecodeError(f"{where}: not an irvm bytecode file (bad magic bytes)")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        if not names or names[0] != MAGIC_MEMBER:
            raise BytecodeError(f"{where}: not an irvm bytecode file (first member is not {MAGIC_MEMBER})")
        header = json.loads(zf.read(MAGIC_MEMBER))
        if not isinstance(header, dict) or not isinstance(header.get("format"), int):
            raise BytecodeError(f"{where}: damaged header (no format version)")
        members = [(n, zf.read(n)) for n in names[1:]]
    version = header["format"]
    if version > FORMAT_VERSION:
        raise BytecodeError(
            f"{where} was written by a newer irvm ({header.get('producer', '?')}, bytecode format {version}); "
            f"this irvm reads format {FORMAT_VERSION}: upgrade irvm, or recompile the program's IR with this irc"
        )
    if _digest(members) != header.get("sha256"):
        raise BytecodeError(f"{where}: the content does not match its hash (the file is corrupt or was edited)")
    files = dict(members)
    source = json.loads(files["source.ir"])
    if version < FORMAT_VERSION:
        raise _older(version, source, where)
    body = json.loads(files["program.json"])
    program = _program_from_json(body, files, where, source)
    verify(program, where)
    check_counts(program, where)  # registers, arities, fusion specs against the code
    check_tables(program, where)  # self_reads, node spans: vm.program.irbc_tables
    return program


def recorded_examples(path: Path | str) -> list[Any] | None:
    """The example inputs ``irc compile --example-inputs`` recorded in the file's compile
    options: per input, ``(dtype name, shape)`` for a tensor, else None; None when it
    recorded none (or the file cannot say: it only describes the inputs)."""
    try:
        with zipfile.ZipFile(path) as zf:
            options = json.loads(zf.read("source.ir")).get("options", {})
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, AttributeError):
        return None
    examples = options.get("example_inputs") if isinstance(options, dict) else None
    if not isinstance(examples, list):
        return None
    return [(str(e[0]), [None if d is None else int(d) for d in e[1]])
            if isinstance(e, list) and len(e) == 2 and isinstance(e[1], list) else None for e in examples]


class OlderFormatError(BytecodeError):
    """An ``.irbc`` of an older format: refused by ``load`` (the VM compiles nothing), with
    the IR text and options it was compiled from, so that a command line can compile it
    again (``vm.cli`` does, saying so)."""

    def __init__(self, message: str, text: str, options: dict[str, Any], weights: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.text, self.options, self.weights = text, options, weights


def _older(version: int, source: dict[str, Any], where: str) -> OlderFormatError:
    options = {k: v for k, v in source.get("options", {}).items() if k in ("fusion", "passes")}
    return OlderFormatError(
        f"{where} was written by an older irvm (bytecode format {version}; this irvm reads format "
        f"{FORMAT_VERSION}): compile its IR again with `irc compile` (`irvm run` does that by itself)",
        str(source.get("text", "")), options, _folded(source),
    )


def _folded(source: dict[str, Any]) -> dict[str, Any] | None:
    """The module attribute values a program was compiled for (None: compiled without weights)."""
    folded = source.get("options", {}).get("attributes")
    return dict(folded) if isinstance(folded, dict) else None


def _program_from_json(body: dict[str, Any], files: dict[str, bytes], where: str, source: dict[str, Any]) -> Program:
    functions = tuple(_function_from_json(f, files, where) for f in body["functions"])
    return Program(
        functions=functions,
        entry=int(body["entry"]),
        input_names=tuple(str(n) for n in body["input_names"]),
        input_types=tuple(str(t) for t in body["input_types"]),
        n_outputs=int(body["n_outputs"]),
        source=str(source["text"]),
        output_types=tuple(str(t) for t in body["output_types"]),
        input_defaults=tuple(_decode(v, files, where) for v in body.get("input_defaults", ())),
        ir_table=json.loads(files["ir.json"]),  # checked and decoded when a static runtime is built
        node_spans=tuple(None if s is None else tuple(s) for s in json.loads(files["spans.json"])),
        node_refs=_node_refs_from_json(body, files, where),
        checks=read_checks(files["checks.json"], where),  # the few nodes the checks before a run read
        folded=_folded(source) or {},
        state=read_state(body.get("state", []), where),
        **keys_from_stored(body, where),
        **folds_from_stored(body.get("specialized"), lambda value: _decode(value, files, where), where),
        self_reads=tuple(
            (int(parent), str(name), str(type_text), bool(required), None if span is None else tuple(span))
            for parent, name, type_text, required, span in body["self_reads"]
        ),
    )


_OPCODES = {int(op): op for op in Opcode}


def _function_from_json(f: dict[str, Any], files: dict[str, bytes], where: str) -> Function:
    code = []
    opcodes = _OPCODES
    for k, (op, x, n) in enumerate(f["code"]):
        opcode = opcodes.get(op) if type(op) is int else None
        if opcode is None:
            raise BytecodeError(f"{where}: function {f.get('name')!r}, instruction {k}: unknown opcode {op}")
        if type(x) is not int or type(n) is not int:
            raise BytecodeError(f"{where}: function {f.get('name')!r}, instruction {k}: operands {x!r}, {n!r} are not integers")
        code.append(Instruction(opcode, x, n))

    def decode(v: Any) -> Any:
        return _decode(v, files, where)

    return Function(
        name=str(f["name"]),
        instructions=tuple(code),
        n_inputs=int(f["n_inputs"]),
        n_outputs=int(f["n_outputs"]),
        n_registers=int(f["n_registers"]),
        constants=tuple(decode(c) for c in f["constants"]),
        operators=tuple(_opref_from_json(r, decode) for r in f["operators"]),
        spans=_untabled(f["spans"], lambda s: None if s is None else Span(str(s[0]), int(s[1]), int(s[2]), s[3])),
        nodes=_untabled(f["nodes"], str),
        register_names=tuple(str(n) for n in f["register_names"]),
        constant_names=tuple(str(n) for n in f["constant_names"]),
    )


def _opref_from_json(r: dict[str, Any], decode: Any) -> OpRef:
    return OpRef(
        str(r["name"]),
        int(r["n_inputs"]),
        int(r["n_outputs"]),
        tuple(decode(d) for d in r["defaults"]),
        tuple((str(k), decode(v)) for k, v in r["attrs"]),
    )


def _node_refs_from_json(body: dict[str, Any], files: dict[str, bytes], where: str) -> tuple[Any, ...]:
    """``Program.node_refs`` back (empty when the file has none: the static runtime then
    resolves); an index out of the table is a ``BytecodeError``."""
    if "node_ops" not in body:
        return ()
    table = [_opref_from_json(r, lambda v: _decode(v, files, where)) for r in body["node_operators"]]
    refs = []
    for i in body["node_ops"]:
        if type(i) is not int or not -1 <= i < len(table):
            raise BytecodeError(f"{where}: node operator index {i!r} out of range")
        refs.append(None if i < 0 else table[i])
    return tuple(refs)


def _decode(value: Any, files: dict[str, bytes], where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise BytecodeError(f"{where}: malformed constant {value!r}")
    (tag, payload), = value.items()
    if tag == "npy":
        try:  # the header's shape is checked against the member before numpy allocates
            check_npy_bytes(files[payload], f"{where}: constant {payload}")
        except RunError as err:
            raise BytecodeError(str(err)) from None
        return np.load(io.BytesIO(files[payload]), allow_pickle=False)
    if tag == "list":
        return [_decode(v, files, where) for v in payload]
    if tag == "tuple":
        return tuple(_decode(v, files, where) for v in payload)
    if tag == "dict":
        return {_decode(k, files, where): _decode(v, files, where) for k, v in payload}
    if tag == "unbound":
        from vm.binding.unbound import UnboundTensor

        return UnboundTensor(str(payload))
    if tag == "irtype":
        return _parse_type(str(payload), where)
    if tag == "enum" and isinstance(payload, list) and len(payload) in (2, 3) and all(isinstance(p, str) for p in payload[:2]):
        from vm.core.enum_values import EnumValue

        value = payload[2] if len(payload) == 3 else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
            raise BytecodeError(f"{where}: malformed enum constant {payload!r}")
        return EnumValue(payload[0], payload[1], value)
    raise BytecodeError(f"{where}: unknown constant tag {tag!r}")


def _parse_type(text: str, where: str) -> Any:
    from vm.core.type_text import parse_type_text

    try:
        return parse_type_text(text)
    except BytecodeError:
        raise BytecodeError(f"{where}: malformed type {text!r}") from None


# ---------------------------------------------------------------------------------------
# Verification


def verify(program: Program, where: str = "<program>") -> None:
    """Refuse a malformed program before anything runs (see the module docstring)."""
    n_functions = len(program.functions)
    if not 0 <= program.entry < n_functions:
        raise BytecodeError(f"{where}: entry function {program.entry} does not exist ({n_functions} functions)")
    main = program.functions[program.entry]
    if len(program.input_names) != main.n_inputs or len(program.input_types) != main.n_inputs:
        raise BytecodeError(f"{where}: {len(program.input_names)} input names for {main.n_inputs} inputs")
    if program.n_outputs != main.n_outputs:
        raise BytecodeError(f"{where}: the program declares {program.n_outputs} outputs, its entry {main.n_outputs}")
    for function in program.functions:
        _verify_tables(program, function, where)
        _verify_operands(program, function, where)
        _verify_stack(program, function, where)
    for ref in {id(r): r for r in program.node_refs if r is not None}.values():
        problem = operator_problem(ref)
        if problem is not None:
            raise BytecodeError(f"{where}: the static runtime's table of node operators: {problem}")


def _fail(where: str, function: Function, pc: int | None, message: str) -> BytecodeError:
    at = f", instruction {pc}" if pc is not None else ""
    return BytecodeError(f"{where}: function {function.name!r}{at}: {message}")


def _verify_tables(program: Program, f: Function, where: str) -> None:
    n = len(f.instructions)
    if f.n_registers < 0 or f.n_inputs < 0 or f.n_outputs < 0:
        raise _fail(where, f, None, "negative register, input or output count")
    if len(f.spans) not in (0, n) or len(f.nodes) not in (0, n):
        raise _fail(where, f, None, f"{len(f.spans)} spans / {len(f.nodes)} node texts for {n} instructions")
    if len(f.constant_names) not in (0, len(f.constants)):
        raise _fail(where, f, None, "constant names do not match the constant table")
    for ref in f.operators:
        problem = operator_problem(ref)
        if problem is not None:
            raise _fail(where, f, None, problem)


def _verify_operands(program: Program, f: Function, where: str) -> None:
    limits = {
        Operand.REG: f.n_registers,
        Operand.CONST: len(f.constants),
        Operand.OP: len(f.operators),
        Operand.FUNC: len(program.functions),
        Operand.TARGET: len(f.instructions) + 1,
    }
    operands = _OPERAND_KINDS
    special = _CHECKED_APART
    for pc, ins in enumerate(f.instructions):
        kind, no_count = operands[ins.op]
        limit = limits.get(kind)
        if limit is not None and not 0 <= ins.x < limit:
            raise _fail(where, f, pc, f"{ins.op.name} operand {ins.x} is out of range (0..{limit - 1})")
        if ins.n < 0 or (no_count and ins.n != 0):
            raise _fail(where, f, pc, f"{ins.op.name} has a bad count operand {ins.n}")
        if ins.op not in special:
            continue
        if ins.op is Opcode.STOREN and ins.x + ins.n > f.n_registers:
            raise _fail(where, f, pc, f"STOREN {ins.x} {ins.n} runs past the {f.n_registers} registers")
        if ins.op is Opcode.OPN and ins.n != f.operators[ins.x].n_inputs:
            raise _fail(where, f, pc, f"OPN passes {ins.n} values to an operator taking {f.operators[ins.x].n_inputs}")
        if ins.op is Opcode.LOOP and ins.n < 2:
            raise _fail(where, f, pc, f"LOOP needs at least 2 header values, has {ins.n}")


# per opcode: the kind of its x operand, and whether it takes no count (n must be 0)
_OPERAND_KINDS = {op: (op.x, op.n is Operand.NONE) for op in Opcode}
_CHECKED_APART = frozenset({Opcode.STOREN, Opcode.OPN, Opcode.LOOP})  # checks of their own below

_SIMPLE_EFFECTS = {Opcode.LOAD: 1, Opcode.MOVE: 1, Opcode.LOADC: 1, Opcode.STORE: -1, Opcode.DROP: -1, Opcode.DROPR: 0}


def _verify_stack(program: Program, f: Function, where: str) -> None:
    """Abstract interpretation of stack depths over the control-flow graph (each
    instruction visited once; straight-line code followed without the work list)."""
    code = f.instructions
    n_code = len(code)
    simple = _SIMPLE_EFFECTS
    depth_at: dict[int, int] = {0: f.n_inputs}
    work = [0]
    while work:
        pc = work.pop()
        depth = depth_at[pc]
        while True:
            if pc >= n_code:
                raise _fail(where, f, pc, "control falls off the end of the function (no RET)")
            ins = code[pc]
            delta = simple.get(ins.op)
            if delta is not None:  # pops at most one: LOAD/MOVE/LOADC push, STORE/DROP pop
                if delta < 0 and depth < 1:
                    raise _fail(where, f, pc, f"{ins.op.name} pops 1 values from a stack of {depth}")
                depth += delta
                pc += 1
                seen = depth_at.get(pc)
                if seen is None:
                    depth_at[pc] = depth
                    continue
                if seen != depth:
                    raise _fail(where, f, pc, f"the stack holds {seen} values on one path into it and {depth} on another")
                break
            successors = _successors(program, f, pc, ins, depth, where)
            for target, d in successors:
                seen = depth_at.get(target)
                if seen is None:
                    depth_at[target] = d
                    work.append(target)
                elif seen != d:
                    raise _fail(where, f, target, f"the stack holds {seen} values on one path into it and {d} on another")
            break


def _successors(program: Program, f: Function, pc: int, ins: Instruction, depth: int, where: str) -> list[tuple[int, int]]:
    """Where control goes after ``ins`` (at stack ``depth``), with the depth there."""
    pops, pushes = stack_effect(program, f, ins)
    if pops > depth:
        raise _fail(where, f, pc, f"{ins.op.name} pops {pops} values from a stack of {depth}")
    after = depth - pops + pushes
    if ins.op is Opcode.RET:
        if depth != f.n_outputs:
            raise _fail(where, f, pc, f"RET with {depth} values on the stack, the function returns {f.n_outputs}")
        return []
    if ins.op is Opcode.JMP:
        return [(ins.x, after)]
    if ins.op is Opcode.JF:
        return [(pc + 1, after), (ins.x, after)]
    if ins.op is Opcode.LOOP:
        return [(pc + 1, after), (ins.x, depth + loop_exit_effect(ins))]
    return [(pc + 1, after)]


__all__ = ["FORMAT_VERSION", "MAGIC_MEMBER", "OlderFormatError", "is_irbc", "load", "save", "verify"]
