"""The interpreter VM: frames, a register file, an operand stack.

``Interpreter(program, weights)`` does all its work up front: it binds ``%self`` and the
tensor constants from the weights, binds every operator-table entry to its kernel and
pre-decodes every function into register form (``vm.interpreter.decode``).  A call then only runs
the dispatch loop, so the first call costs what the hundredth does.

The loop (``_run``) keeps everything in locals: ``code``/``pc``/``regs`` of the current
frame, the shared operand ``stack`` and a list of saved caller frames.  Its cases are
the decoded instructions (``vm.interpreter.decode.DecodedOp``, compared as plain int constants): operators in register form first (most executed), then the
superinstructions (loop header and back edge, CALLR/RET1, COPY), then the stack forms.
A call saves the caller and starts the callee with a fresh copy of its register
template, the arguments put straight into its registers; a return restores the caller
and puts the results where the call said (registers, or the stack).  No Python recursion
happens per call, so
a deep or runaway recursion ends in a ``RunError`` at ``max_depth`` frames, never in
Python's RecursionError.  The ``Program`` is immutable and every call has its own
frames, registers and stack, so one interpreter may be called from many threads.

``run_traced`` and ``debug=True`` use a second loop, ``vm.interpreter.reference.run``, which executes
the bytecode itself one instruction at a time, exactly as ``vm.program.bytecode`` defines it:
it records every value stored into a register under its IR name, and with ``debug``
prints the stack and registers before each instruction (clox's DEBUG_TRACE_EXECUTION).

Any exception raised by a kernel (including a script's ``raise``, ``ScriptException``)
surfaces as ONE ``RunError`` naming the operator, the node's ``file:line:col`` and the
stack of IR functions that were running.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vm.interpreter import decode as D
from vm.program.bytecode import Program

# The opcode names stay a grid (isort would put one name per line).
# isort: off
from vm.interpreter.decode import (  # the decoded opcodes (vm.interpreter.decode.DecodedOp) as plain ints
    CALL, CALLR, COPY, DROP, DROPR, JF, JFR, JMP, LOOP, LOOPB, LOOPE, OP1, OP1M, OP2, OP2M, OPGM, PUSH, PUSHM,
    RET, RET1, STORE, STOREN,
)  # fmt: skip
# isort: on

from vm.binding.inputs import InputChecker
from vm.binding.session import Engines, bind
from vm.binding.weights import ModuleObject
from vm.core.errors import BytecodeError, IRError, RunError
from vm.core.gc_pause import gc_paused
from vm.fusion.kernels import enable_fuser
from vm.interpreter.outcome import depth_error, failure_error, stack_results
from vm.ops import registry
from vm.ops.quantized.arith import current_setting, using_quantized
from vm.ops.random import RANDOM_KINDS, using_generator
from vm.ops.registry import OpRef

DEFAULT_MAX_DEPTH = 1000


class _DepthExceeded(Exception):
    pass


class Interpreter:
    """Runs a ``Program``: ``Interpreter(program, weights)(*inputs)``.

    Returns the value, or a tuple when the graph returns several.  ``weights`` is a
    mapping of dotted names to arrays (a state_dict) or a ``ModuleObject``; it provides
    ``%self`` and ``<Tensor>`` constants (array constants are made read-only: every run
    shares them).  ``trace=True`` makes ``__call__`` keep the values of the last run in
    ``last_trace`` (one attribute: use ``run_traced`` from several threads);
    ``debug=True`` prints every instruction.  ``fuser="numba"`` compiles the fused kernels
    with numba now (``vm.fusion.kernels``); ``"blocked"`` (the default) uses numpy alone.
    Random operators draw from ``self.generator``, a numpy Generator seeded by ``seed``
    (None: from the OS), so the same seed gives the same draws call after call.
    ``strict`` (the default) refuses weights with keys the program does not read, as
    ``load_state_dict(strict=True)`` does (``vm.binding.strict``).
    """

    @gc_paused()  # decoding builds ~10^5 small lists and tuples: see vm.core.gc_pause
    def __init__(
        self,
        program: Program,
        weights: Mapping[str, Any] | ModuleObject | None = None,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        trace: bool = False,
        debug: bool = False,
        fuser: str = "blocked",
        seed: int | None = None,
        strict: bool = True,
        quantized_engine: str | None = None,
        quantized_kernel: str | None = None,
        self_object: ModuleObject | None = None,
    ):
        from vm.program.accept import refuse_non_program, unwrap_model

        program, weights = unwrap_model(program, weights)  # a vm.Model: its program and weights
        refuse_non_program(program, "vm.Interpreter")
        self.program = program
        # the binding session (vm.binding.session): strict keys, folded check, %self (``self_object``:
        # the module object %self is, shared, as a vm.Model's methods and threads run on one),
        # constants, dtype guard; then this runtime's engines
        bound = bind(_ProgramBinding(program), weights, strict=strict, shared=self_object)
        self.self_object, self.constants, self.dtype_guard = bound.self_object, bound.constants, bound.dtype_guard
        draws = any(ref.name.split(".")[0] in RANDOM_KINDS for f in program.functions for ref in f.operators)
        self.engines = Engines(seed, quantized_engine, quantized_kernel, draws)
        self.generator, self.quantized = self.engines.generator, self.engines.quantized
        self._engines = None if self.engines.idle else self.engines
        self.max_depth = max_depth
        self.trace, self.debug = trace, debug
        self.last_trace: dict[str, Any] | None = None
        self.kernels = [[_bind(ref, f.name) for ref in f.operators] for f in program.functions]
        self.fuser_problems = enable_fuser(fuser, (k for ks in self.kernels for k in ks))
        self.decoded = tuple(
            D.decode(program, f, self.kernels[i], self.constants[i]) for i, f in enumerate(program.functions)
        )
        self.n_outputs = program.functions[program.entry].n_outputs
        self.use_decoded(self.decoded)
        self.checker = InputChecker(program)
        self._takes_self = program.takes_self
        # the argument types that need no checking (arrays for Tensors, ints for ints...)
        # (an int must also fit int64: those go through the checker)
        fast = self.checker.fast
        self._fast_kinds = None if trace or debug or None in fast or int in fast else fast

    def use_decoded(self, decoded: tuple[D.Decoded, ...]) -> None:
        """Run ``decoded`` from now on (tools that instrument kernels re-decode with them)."""
        self.decoded = decoded
        entry = decoded[self.program.entry]
        self._entry = (self.program.entry, entry.code, entry.template, entry.start, self.max_depth)

    def __call__(self, *args: Any) -> Any:
        engines = self._engines  # this runtime's generator and quantized arithmetic (None: nothing to enter)
        if engines is not None and not engines.current():
            with engines.entered():
                return self(*args)
        if self._fast_kinds is not None and tuple(map(type, args)) == self._fast_kinds:
            if self.dtype_guard is not None:
                self.dtype_guard(args)
            return self._run([self.self_object, *args] if self._takes_self else list(args))
        if self.trace or self.debug:
            result, values = self.run_traced(*args)
            self.last_trace = values
            return result
        return self._run(self._arguments(args))

    def run_traced(self, *args: Any) -> tuple[Any, dict[str, Any]]:
        """Run on the reference loop; returns the result and every value stored, keyed by
        IR name (``%x.1``; ``fib/%n`` for a value of another function)."""
        from vm.interpreter import reference
        stack = self._arguments(args)
        values: dict[str, Any] = {}
        with using_generator(self.generator), using_quantized(self.quantized or current_setting()):
            result = reference.run(self, stack, values, debug=self.debug)
        return result, values

    def run_reference(self, *args: Any) -> Any:
        """Run on the reference loop without recording (the fast loop's oracle in tests)."""
        from vm.interpreter import reference
        with using_generator(self.generator), using_quantized(self.quantized or current_setting()):
            return reference.run(self, self._arguments(args), None, debug=self.debug)

    def _arguments(self, args: tuple[Any, ...]) -> list[Any]:
        values = self.checker(args)
        if self.dtype_guard is not None:
            self.dtype_guard(values)
        return [self.self_object, *values] if self.self_object is not None else values

    # -- the fast loop -------------------------------------------------------------------

    def _run(self, args: list[Any]) -> Any:
        functions = self.decoded
        fid, code, template, pc, max_depth = self._entry
        regs = list(template)
        if pc:
            regs[: len(args)] = args
            stack: list[Any] = []
        else:
            stack = args
        frames: list[tuple[Any, ...]] = []
        try:
            while True:
                ins = code[pc]
                pc += 1
                op = ins[0]
                if op <= OPGM:  # operators in register form (OP1..OPGM)
                    if op == OP2M:  # regs[o] = f(regs[a], regs[b]); clear the moved ones
                        regs[ins[4]] = ins[1](regs[ins[2]], regs[ins[3]])
                        regs[ins[5]] = None
                        regs[ins[6]] = None
                    elif op == OP2:
                        regs[ins[4]] = ins[1](regs[ins[2]], regs[ins[3]])
                    elif op == OP1M:
                        regs[ins[3]] = ins[1](regs[ins[2]])
                        regs[ins[2]] = None
                    elif op == OP1:
                        regs[ins[3]] = ins[1](regs[ins[2]])
                    else:  # OPG, OPGM: any arity, any number of results
                        result = ins[1](*[regs[r] for r in ins[2]])
                        for r in ins[5]:
                            regs[r] = None
                        if ins[4] == 1:
                            regs[ins[3]] = result
                        elif ins[4]:
                            regs[ins[3] : ins[3] + ins[4]] = result
                elif op >= LOOPE:  # loop, call and copy superinstructions
                    if op == LOOPB:  # back edge; the stack holds [trip, max]
                        carried = [regs[r] for r in ins[2]]
                        cond = regs[ins[1]]
                        for r in ins[3]:
                            regs[r] = None
                        trip = stack[-2]
                        if trip < stack[-1] and cond:
                            stack[-2] = trip + 1
                            regs[ins[4]] = trip
                            regs[ins[4] + 1 : ins[4] + 1 + len(carried)] = carried
                            pc = ins[5]
                        else:
                            del stack[-2:]
                            stack += carried
                            pc = ins[6]
                    elif op == COPY:  # an If branch's outputs into the If's registers
                        values = [regs[r] for r in ins[1]]
                        for r in ins[2]:
                            regs[r] = None
                        regs[ins[3] : ins[3] + len(values)] = values
                        pc = ins[4]
                    elif op == RET1:  # return one register's value
                        value = regs[ins[1]]
                        if not frames:
                            return value
                        code, pc, regs, fid, out, n = frames.pop()
                        if out >= 0:
                            regs[out] = value
                        else:
                            stack.append(value)
                    elif op == CALLR:  # arguments from registers, results into registers
                        if len(frames) >= max_depth:
                            raise _DepthExceeded
                        frames.append((code, pc, regs, fid, ins[4], ins[5]))
                        args = [regs[r] for r in ins[2]]
                        for r in ins[3]:
                            regs[r] = None
                        fid = ins[1]
                        fn = functions[fid]
                        code, regs, pc = fn.code, list(fn.template), fn.start
                        regs[: len(args)] = args
                    else:  # LOOPE: [trip, max, cond, carried...] -> body or exit
                        n = ins[2]
                        base = len(stack) - n - 1
                        trip = stack[base]
                        if trip < stack[base + 1] and stack[base + 2]:
                            regs[ins[3]] = trip
                            regs[ins[3] + 1 : ins[3] + n - 1] = stack[base + 3 :]
                            del stack[base + 2 :]
                            stack[base] = trip + 1
                            pc = ins[4]
                        else:
                            del stack[base : base + 3]
                            pc = ins[1]
                elif op == JFR:
                    if not regs[ins[1]]:
                        pc = ins[2]
                    if ins[3]:
                        regs[ins[1]] = None
                elif op == PUSH:
                    stack.append(regs[ins[1]])
                elif op == PUSHM:
                    stack.append(regs[ins[1]])
                    regs[ins[1]] = None
                elif op == STORE:
                    regs[ins[1]] = stack.pop()
                elif op == STOREN:
                    n = ins[2]
                    regs[ins[1] : ins[1] + n] = stack[-n:]
                    del stack[-n:]
                elif op == DROPR:
                    regs[ins[1]] = None
                elif op == JMP:
                    pc = ins[1]
                elif op == RET:  # results on the stack, or into the CALLR's registers
                    if not frames:
                        break
                    code, pc, regs, fid, out, n = frames.pop()
                    if n == 1:
                        regs[out] = stack.pop()
                    elif n:
                        regs[out : out + n] = stack[-n:]
                        del stack[-n:]
                elif op == CALL:  # a new frame, the arguments on the stack
                    if len(frames) >= max_depth:
                        raise _DepthExceeded
                    frames.append((code, pc, regs, fid, -1, 0))
                    fid = ins[1]
                    fn = functions[fid]
                    code, regs, pc = fn.code, list(fn.template), fn.start
                    if pc:
                        n = fn.n_inputs
                        regs[:n] = stack[-n:]
                        del stack[-n:]
                elif op == JF:
                    if not stack.pop():
                        pc = ins[1]
                elif op == LOOP:  # [trip, max, cond, carried...]
                    base = len(stack) - ins[2] - 1
                    trip = stack[base]
                    if trip < stack[base + 1] and stack[base + 2]:
                        stack[base + 2] = trip
                        stack[base] = trip + 1
                    else:
                        del stack[base : base + 3]
                        pc = ins[1]
                elif op == DROP:
                    stack.pop()
                else:  # OPS: an operator taking its inputs from the stack
                    n = ins[2]
                    args = stack[len(stack) - n :]
                    del stack[len(stack) - n :]
                    result = ins[1](*args)
                    if ins[3] == 1:
                        stack.append(result)
                    elif ins[3]:
                        stack.extend(result)
        except _DepthExceeded:
            raise self.depth_error(fid, frames) from None
        except IRError as err:
            if isinstance(err, RunError) and "IR call stack" in err.message:
                raise
            raise self.failure(err, fid, self.decoded[fid].origin[pc - 1], frames) from err
        except Exception as err:
            raise self.failure(err, fid, self.decoded[fid].origin[pc - 1], frames) from err
        return stack_results(self.n_outputs, stack)

    # -- errors ------------------------------------------------------------------------

    def failure(self, err: BaseException, fid: int, at: int, frames: list[tuple[Any, ...]]) -> RunError:
        """The one error a failing instruction becomes (see the module docstring)."""
        callers = [(f[3], self.decoded[f[3]].origin[f[1] - 1]) for f in frames]
        return failure_error(self.program, err, fid, at, callers)

    def depth_error(self, fid: int, frames: list[tuple[Any, ...]]) -> RunError:
        callers = [(f[3], self.decoded[f[3]].origin[f[1] - 1]) for f in frames]
        return depth_error(self.program, fid, callers, self.max_depth)


# ---------------------------------------------------------------------------------------
# Binding weights


def _bind(ref: OpRef, function: str) -> Any:
    """``registry.bind``; attributes the compiler never writes (an edited .irbc file) are a
    BytecodeError naming the operator, not whatever its factory raised."""
    try:
        return registry.bind(ref)
    except IRError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
        raise BytecodeError(
            f"function {function}: operator {ref.name} has malformed attributes ({type(err).__name__}: {err})"
        ) from None


def _bind_self(
    program: Program, weights: Mapping[str, Any] | ModuleObject | None, shared: ModuleObject | None = None
) -> ModuleObject:
    """%self: ``shared`` with what the program reads of it bound in place, else built
    from the weights."""
    from vm.binding import weights as W
    if shared is None and isinstance(weights, ModuleObject):
        return weights
    from vm.program.self_reads import self_graph

    graph = self_graph(program) if program.takes_self else None
    if graph is not None and hasattr(W, "bind_self"):
        module = program.module_if_loaded
        return W.bind_self(graph, shared if shared is not None else weights,
                           module.attributes if module is not None else program.folded)
    if shared is not None:
        return shared
    return weights if isinstance(weights, ModuleObject) else ModuleObject.from_state_dict(weights or {})


class _ProgramBinding:
    """The ``Program`` as the binding session asks it (``vm.binding.session.Bindable``): its
    recorded reads, folds, %self graph, constant tables and check graph."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.folded_from, self.folded_tensors = program.folded_from, program.folded_tensors

    def reads(self) -> Any:
        from vm.binding.strict import program_reads

        return program_reads(self.program)

    def bind_self(self, weights: Any, shared: Any) -> Any:
        return _bind_self(self.program, weights, shared) if self.program.takes_self else None

    def bind_constants(self, flat: Mapping[str, Any]) -> list[list[Any]]:
        return _bind_constants(self.program, flat)

    def guard(self, self_object: Any, flat: Mapping[str, Any]) -> Any:
        return _dtype_guard(self.program, self_object, flat)


def _dtype_guard(program: Program, self_object: Any, weights: Any) -> Any:
    """Check the weights against the shapes and dtypes the graph declares (``vm.binding.preflight``,
    ``vm.binding.weights.bind_constants``); return the guard of the inputs' dtypes, or None.  The
    checks read the compiler's IR when it is in memory, else the program's check table
    (``vm.program.check_graph``): a program read from a file parses no IR."""
    module = program.module_if_loaded
    reaches = None
    main: Any  # the compiler's IR graph, or the check graph (vm.program.check_graph): same attributes
    functions: list[Any]
    if module is not None:
        main, functions = module.main, list(module.functions.values())
    else:
        table = program.check_table()
        if table is None:
            return None
        from vm.program.check_graph import from_table

        tables = from_table(table)
        main, functions, reaches = tables.main, list(tables.functions), tables.reaches_strict
    from vm.binding.preflight import check_weights, make_guard
    from vm.binding.weights import bind_constants

    flat = weights if isinstance(weights, Mapping) else None
    nodes = list(main.walk())  # one walk for both checks
    bind_constants(main, flat or {}, nodes)
    for graph in functions:
        bind_constants(graph, flat or {})
    check_weights(main, self_object, flat, program.takes_self, nodes)
    # module state (Program.state) may change dtype from call to call: the guard knows none
    return make_guard(main, self_object, flat, program.takes_self, reaches, state=program.state)


def _bind_constants(program: Program, weights: Any) -> list[list[Any]]:
    """Each function's constants, ``<Tensor>`` ones (and rounded literals when the
    weights have them) taken from the weights by name; one RunError lists every miss."""
    from vm.binding.unbound import UnboundTensor

    flat = weights if isinstance(weights, Mapping) else {}
    missing: list[str] = []
    tables: list[list[Any]] = []
    for function in program.functions:
        table = list(function.constants)
        for k, value in enumerate(table):
            name = function.constant_names[k] if k < len(function.constant_names) else ""
            if isinstance(value, UnboundTensor):
                key = next((key for key in value.keys() if key in flat), None)
                if key is None:
                    missing.append(f"%{value.name} in {function.name} (tried {', '.join(value.keys())})")
                else:
                    table[k] = _as_array(flat[key])
            elif name and hasattr(value, "dtype") and hasattr(value, "shape"):
                key = next((key for key in UnboundTensor(name).keys() if key in flat), None)
                if key is not None and getattr(flat[key], "shape", None) == value.shape:
                    table[k] = _as_array(flat[key]).astype(value.dtype, copy=False)
        tables.append([_read_only(v) for v in table])
    if missing:
        listing = "\n  ".join(missing)
        raise RunError(f"the weights lack {len(missing)} tensor constant(s):\n  {listing}")
    return tables


def _read_only(value: Any) -> Any:
    """A read-only view of an array constant: every run and thread shares it, so an in-place
    kernel on a constant must fail (RunError) rather than change the program."""
    import numpy as np

    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def _as_array(value: Any) -> Any:
    import numpy as np

    from vm.core.quantized import PACKED_TYPES, QTensor

    if isinstance(value, (QTensor, *PACKED_TYPES)):
        return value  # a quantized tensor or a frozen packed-parameters object(0x...)
    return np.asarray(value)


__all__ = ["DEFAULT_MAX_DEPTH", "Interpreter", "depth_error", "failure_error"]
