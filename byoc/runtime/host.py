"""The host plan: `@main` flattened once into a list of steps over value slots.

Planning walks the IR a single time; running a plan never touches the IR:

- `kernel` steps call a numpy kernel from `byoc.interpreters.kernels` with the op's
  properties bound in advance;
- `call` steps call a partition function of a target's runtime module
  (destination passing: outputs are allocated by the host and written by
  the partition);
- constants are loaded into their slots once, when the plan is bound;
- calls to other (host) functions, `byoc.region` and `byoc.composite` bodies
  are inlined at planning time.

A plan is plain data (ints, strings, lists): it is what an exported artifact
stores as the host graph, as JSON, with no pickle and no IR to re-parse.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.dialects.byoc import CompositeOp, RegionOp, YieldOp, partition_target
from byoc.interpreters.kernels import KERNELS
from byoc.runtime.tensor import TensorSpec, fresh_outputs

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Step:
    kind: str
    """'kernel' (a numpy kernel on the host) or 'call' (a partition function)."""
    name: str
    """The op name for a kernel; the partition symbol for a call."""
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """Kernel keyword arguments (JSON-able Python values)."""
    target: str = ""
    """The target of a call step."""
    out_specs: tuple[TensorSpec, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "attrs": {k: list(v) if isinstance(v, tuple) else v for k, v in self.attrs.items()},
            "target": self.target,
            "out_specs": [s.to_json() for s in self.out_specs],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Step:
        return Step(
            kind=str(data["kind"]),
            name=str(data["name"]),
            inputs=tuple(int(i) for i in data["inputs"]),
            outputs=tuple(int(i) for i in data["outputs"]),
            attrs={k: tuple(v) if isinstance(v, list) else v for k, v in data["attrs"].items()},
            target=str(data.get("target", "")),
            out_specs=tuple(TensorSpec.from_json(s) for s in data.get("out_specs", [])),
        )


@dataclass
class HostPlan:
    num_slots: int
    input_names: list[str]
    input_specs: list[TensorSpec]
    input_slots: list[int]
    output_slots: list[int]
    output_specs: list[TensorSpec]
    constant_slots: dict[int, int]
    """slot -> index into the constant table."""
    steps: list[Step]

    def to_json(self) -> dict[str, Any]:
        return {
            "num_slots": self.num_slots,
            "input_names": self.input_names,
            "input_specs": [s.to_json() for s in self.input_specs],
            "input_slots": self.input_slots,
            "output_slots": self.output_slots,
            "output_specs": [s.to_json() for s in self.output_specs],
            "constant_slots": [[s, c] for s, c in sorted(self.constant_slots.items())],
            "steps": [s.to_json() for s in self.steps],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> HostPlan:
        return HostPlan(
            num_slots=int(data["num_slots"]),
            input_names=[str(n) for n in data["input_names"]],
            input_specs=[TensorSpec.from_json(s) for s in data["input_specs"]],
            input_slots=[int(s) for s in data["input_slots"]],
            output_slots=[int(s) for s in data["output_slots"]],
            output_specs=[TensorSpec.from_json(s) for s in data["output_specs"]],
            constant_slots={int(s): int(c) for s, c in data["constant_slots"]},
            steps=[Step.from_json(s) for s in data["steps"]],
        )


class PlanError(ValueError):
    pass


def _spec_type(spec: TensorSpec, what: str) -> TensorType[Any]:
    try:
        return nn.tensor(spec.shape, nn.element_type_of(spec.dtype))
    except ValueError as exc:
        raise PlanError(f"{what}: {exc}") from None


def check_input_shapes(
    plan: HostPlan, constants: Sequence[Array], shapes: Sequence[tuple[int, ...]]
) -> str | None:
    """Why the plan cannot run inputs of `shapes`, or None.

    For a plan whose inputs have `?` dims: the types are propagated from the
    concrete input shapes through every kernel step (the op's type relation,
    strictly, as `verify` does for static shapes), so a dim that disagrees with a
    static dim further on (`?x4` fed to a dense whose weight is `3x5`) is named here
    instead of failing inside a numpy kernel. A partition call's results keep their
    recorded types; steps that read a value of unknown type are not checked."""
    types: dict[int, TensorType[Any] | None] = {}
    for slot, spec, shape in zip(plan.input_slots, plan.input_specs, shapes, strict=True):
        types[slot] = nn.tensor(shape, nn.element_type_of(spec.dtype))
    for slot, cid in plan.constant_slots.items():
        arr = constants[cid]
        types[slot] = nn.tensor(arr.shape, nn.element_type_of(arr.dtype))
    for k, step in enumerate(plan.steps):
        operands = [types.get(i) for i in step.inputs]
        results: list[TensorType[Any] | None]
        if step.kind == "kernel" and all(t is not None for t in operands):
            try:
                results = list(nn.NN_OPS[step.name].check_call(operands, step.attrs))  # type: ignore[arg-type]
            except VerifyException as exc:
                return f"'{step.name}' rejects them: {exc} (host step {k})"
        elif step.kind == "kernel":
            results = [None] * len(step.outputs)
        else:
            results = [
                None if nn.DYNAMIC in spec.shape else _spec_type(spec, f"step {k}")
                for spec in step.out_specs
            ]
        types.update(zip(step.outputs, results, strict=False))
    return None


def check_plan(plan: HostPlan, constants: Sequence[Array]) -> None:
    """Raise PlanError unless the plan is what planning a verified module gives.

    Run on a plan read from an artifact, before it is bound: every step reads
    slots written before it; every kernel step names an nn op whose attributes
    have their properties' kinds and whose operand types verify (the op's type
    relation, `NNOp.check_call`); each step writes as many slots as it has
    results; the outputs have their recorded types. A step whose attributes were
    edited is then an artifact error at load, never a TypeError at run time.
    """
    types: dict[int, TensorType[Any]] = {}
    for slot, spec in zip(plan.input_slots, plan.input_specs, strict=True):
        types[slot] = _spec_type(spec, f"input '{spec.name}'")
    for slot, cid in plan.constant_slots.items():
        arr = constants[cid]
        types[slot] = _spec_type(TensorSpec(arr.shape, arr.dtype), f"constant {cid}")
    for k, step in enumerate(plan.steps):
        where = f"step {k} ('{step.name}')"
        unwritten = [i for i in step.inputs if i not in types]
        if unwritten:
            raise PlanError(f"{where} reads slot {unwritten[0]} before any step writes it")
        if step.kind == "kernel":
            op = nn.NN_OPS.get(step.name)
            if op is None or step.name not in KERNELS:
                raise PlanError(f"{where}: there is no host kernel of that name")
            try:
                results = op.check_call([types[i] for i in step.inputs], step.attrs)
            except VerifyException as exc:
                raise PlanError(f"{where}: {exc}") from None
        else:
            results = [_spec_type(s, where) for s in step.out_specs]
        if len(results) != len(step.outputs):
            raise PlanError(f"{where} has {len(results)} results but writes {len(step.outputs)} slots")
        types.update(zip(step.outputs, results, strict=True))
    for slot, spec in zip(plan.output_slots, plan.output_specs, strict=True):
        if slot not in types:
            raise PlanError(f"output '{spec.name}' reads slot {slot}, which nothing writes")
        if types[slot] != _spec_type(spec, f"output '{spec.name}'"):
            raise PlanError(f"output '{spec.name}' is recorded as {spec}, its step gives {types[slot]}")


class _Planner:
    def __init__(self, module: ModuleOp):
        self.funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
        self.slots: dict[SSAValue, int] = {}
        self.num_slots = 0
        self.steps: list[Step] = []
        self.constants: list[Array] = []
        self.constant_slots: dict[int, int] = {}
        self._const_ids: dict[int, int] = {}
        self._inlining: list[str] = []

    def new_slot(self, value: SSAValue) -> int:
        slot = self.num_slots
        self.num_slots += 1
        self.slots[value] = slot
        return slot

    def slot(self, value: SSAValue) -> int:
        try:
            return self.slots[value]
        except KeyError:
            raise PlanError(f"value {value} is used before it is defined") from None

    def plan_block_ops(self, ops: Sequence[Operation]) -> list[SSAValue]:
        """Plan ops; return the values of the terminator (func.return / byoc.yield)."""
        for op in ops:
            if isinstance(op, ReturnOp | YieldOp):
                return list(op.operands)
            self.plan_op(op)
        raise PlanError("block has no terminator")

    def plan_op(self, op: Operation) -> None:
        if isinstance(op, nn.ConstantOp):
            arr = op.ndarray()
            key = id(op)
            cid = self._const_ids.get(key)
            if cid is None:
                cid = len(self.constants)
                self.constants.append(arr)
                self._const_ids[key] = cid
            self.constant_slots[self.new_slot(op.result)] = cid
        elif isinstance(op, nn.NNOp):
            self.steps.append(
                Step(
                    kind="kernel",
                    name=op.name,
                    inputs=tuple(self.slot(v) for v in op.operands),
                    outputs=tuple(self.new_slot(r) for r in op.results),
                    attrs=op.attr_values(),
                )
            )
        elif isinstance(op, CallOp):
            self.plan_call(op)
        elif isinstance(op, RegionOp):
            results = self.plan_block_ops(list(op.body.block.ops))
            for r, v in zip(op.results, results, strict=True):
                self.slots[r] = self.slot(v)
        elif isinstance(op, CompositeOp):
            for arg, operand in zip(op.body.block.args, op.args, strict=True):
                self.slots[arg] = self.slot(operand)
            results = self.plan_block_ops(list(op.body.block.ops))
            for r, v in zip(op.results, results, strict=True):
                self.slots[r] = self.slot(v)
        else:
            raise PlanError(f"the host executor cannot run '{op.name}'")

    def plan_call(self, op: CallOp) -> None:
        name = op.callee.string_value()
        callee = self.funcs.get(name)
        if callee is None:
            raise PlanError(f"call to unknown function @{name}")
        target = partition_target(callee)
        if target is not None:
            self.steps.append(
                Step(
                    kind="call",
                    name=name,
                    target=target,
                    inputs=tuple(self.slot(v) for v in op.arguments),
                    outputs=tuple(self.new_slot(r) for r in op.results),
                    out_specs=tuple(TensorSpec.of(r.type) for r in op.results),
                )
            )
            return
        if name in self._inlining:
            raise PlanError(f"recursive call to @{name} cannot be planned")
        self._inlining.append(name)
        for arg, operand in zip(callee.body.block.args, op.arguments, strict=True):
            self.slots[arg] = self.slot(operand)
        results = self.plan_block_ops(list(callee.body.block.ops))
        for r, v in zip(op.results, results, strict=True):
            self.slots[r] = self.slot(v)
        self._inlining.pop()


def input_name(func: FuncOp, i: int) -> str:
    """The input's `onnx.name` argument attribute (the ONNX importer's, when the SSA name
    differs: xDSL drops a `_<digits>` suffix), else its SSA name, else `arg<i>`."""
    if func.arg_attrs is not None:
        name = func.arg_attrs.data[i].data.get("onnx.name")
        if isinstance(name, StringAttr):
            return name.data
    return func.body.block.args[i].name_hint or f"arg{i}"


def plan_function(module: ModuleOp, function: str = "main") -> tuple[HostPlan, list[Array]]:
    """Flatten `@function` into a HostPlan and its constant table."""
    planner = _Planner(module)
    func = planner.funcs.get(function)
    if func is None:
        raise PlanError(f"no function @{function} in the module")
    block = func.body.block
    names = [input_name(func, i) for i in range(len(block.args))]
    input_slots = [planner.new_slot(a) for a in block.args]
    planner._inlining.append(function)
    results = planner.plan_block_ops(list(block.ops))
    plan = HostPlan(
        num_slots=planner.num_slots,
        input_names=names,
        input_specs=[TensorSpec.of(a.type) for a in block.args],
        input_slots=input_slots,
        output_slots=[planner.slot(v) for v in results],
        output_specs=[TensorSpec.of(v.type) for v in results],
        constant_slots=planner.constant_slots,
        steps=planner.steps,
    )
    return plan, planner.constants


# --------------------------------------------------------------------------
# Binding a plan to callables, and running it
# --------------------------------------------------------------------------

Runner = Callable[[list[Any]], None]


def kernel_runner(step: Step) -> Runner:
    """A `kernel` step as a closure over the slots, its attributes bound once."""
    fn = functools.partial(KERNELS[step.name], **step.attrs)
    ins, outs = step.inputs, step.outputs
    if len(outs) == 1:
        (o,) = outs

        def run(slots: list[Any]) -> None:
            slots[o] = fn(*[slots[i] for i in ins])

    else:

        def run(slots: list[Any]) -> None:
            results = fn(*[slots[i] for i in ins])
            for slot, value in zip(outs, results, strict=True):
                slots[slot] = value

    return run


def _call_runner(step: Step, function: Callable[..., Any]) -> Runner:
    ins, outs = step.inputs, step.outputs
    specs = [(s.shape, s.dtype) for s in step.out_specs]

    def run(slots: list[Any]) -> None:
        results = [np.empty(shape, dtype) for shape, dtype in specs]
        function(*[slots[i] for i in ins], *results)
        for slot, value in zip(outs, results, strict=True):
            slots[slot] = value

    return run


@dataclass
class BoundPlan:
    """A plan with its callables resolved: running it is a loop over closures."""

    plan: HostPlan
    runners: list[Runner]
    initial: list[Any]
    """Slot values at the start of a call (constants filled in, the rest None)."""
    constant_ids: frozenset[int] = frozenset()
    """ids of the constant arrays in `initial`: an output that is one of them is copied."""

    @staticmethod
    def bind(
        plan: HostPlan,
        constants: Sequence[Array],
        functions: Callable[[str, str], Callable[..., Any]],
    ) -> BoundPlan:
        """`functions(target, symbol)` returns the partition function of a call step."""
        runners: list[Runner] = []
        for step in plan.steps:
            if step.kind == "kernel":
                if step.name not in KERNELS:
                    raise PlanError(f"no host kernel for '{step.name}'")
                runners.append(kernel_runner(step))
            elif step.kind == "call":
                runners.append(_call_runner(step, functions(step.target, step.name)))
            else:
                raise PlanError(f"unknown step kind '{step.kind}'")
        initial: list[Any] = [None] * plan.num_slots
        for slot, cid in plan.constant_slots.items():
            initial[slot] = constants[cid]
        return BoundPlan(plan, runners, initial, frozenset(id(v) for v in initial if v is not None))

    def start(self, inputs: Sequence[Array]) -> list[Any]:
        """The slots of a new call: constants and `inputs` filled in."""
        slots = list(self.initial)
        for slot, value in zip(self.plan.input_slots, inputs, strict=True):
            slots[slot] = value
        return slots

    def run(self, inputs: Sequence[Array]) -> list[Array]:
        slots = self.start(inputs)
        for runner in self.runners:
            runner(slots)
        return self._outputs(slots, inputs)

    def _outputs(self, slots: list[Any], inputs: Sequence[Array]) -> list[Array]:
        """Fresh arrays the caller owns: never an input, a view of one, or a shared constant."""
        return fresh_outputs([slots[s] for s in self.plan.output_slots], inputs, self.constant_ids)

    def run_profiled(self, inputs: Sequence[Array]) -> tuple[list[Array], list[float]]:
        """Like run, and also the wall time of each step (seconds)."""
        slots = list(self.initial)
        for slot, value in zip(self.plan.input_slots, inputs, strict=True):
            slots[slot] = value
        times: list[float] = []
        clock = time.perf_counter
        for runner in self.runners:
            t0 = clock()
            runner(slots)
            times.append(clock() - t0)
        return self._outputs(slots, inputs), times
