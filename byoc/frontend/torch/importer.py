"""The PyTorch importer: a `torch.export` program in core ATen becomes `nn` IR in `func.func @main`.

    module = from_torch(model, (x,))                                  # exports, then imports
    module = from_torch(model, (x,), dynamic_shapes={"x": {0: Dim("batch")}})
    module = from_torch(torch.export.load("model.pt2"))               # an ExportedProgram

Contract:
- The program is brought to the core ATen opset with `run_decompositions()` (a closed
  list of ops; `KEPT_OPS` stay whole); `CONVERTERS` maps each ATen overload it converts
  to an nn lowering.
- The graph signature says what each placeholder is: the user inputs (tensors) become the
  arguments of `@main`, in the order of the flattened inputs; parameters, buffers and
  lifted constants become `nn.constant`s (numpy payloads), and ops whose operands are all
  known at import time are folded with the numpy kernels (a `permute` of a weight is a
  transposed constant, not an op). The user outputs (the pytree leaves of what `forward`
  returns, a HuggingFace `ModelOutput` too) are the results, in order.
- A dim that `dynamic_shapes` makes symbolic is `?` (nn.DYNAMIC) in the types, unless
  `input_shapes` gives the input a static shape; a converter that needs its value fails
  naming it.
- Each nn op carries the `FileLineColLoc` of the Python line the FX node came from (the
  innermost frame of its stack trace), so a verifier or pass error points at the model.
- Every node that cannot be converted is reported, with its source line, in one
  `TorchImportError`; the import never stops at the first one.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.dialects.nn import logic_ops
from byoc.frontend.torch.base import (
    CONVERTERS,
    Call,
    Deferred,
    SymDim,
    Tensor,
    dim_of,
    is_sym,
)
from byoc.frontend.torch.errors import (
    Problem,
    SourceLocation,
    TorchImportError,
    UnsupportedTorchError,
    location_of,
)
from byoc.interpreters.kernels import KERNELS

IGNORED_OPS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten._assert_async.msg",
        "aten.sym_constrain_range_for_size.default",
        "aten.sym_constrain_range.default",
        "aten._functional_assert_async.msg",
    }
)
"""Checks that export inserts and that have no value: dropped."""

_SYM_OPERATORS = {
    operator.add: operator.add,
    operator.sub: operator.sub,
    operator.mul: operator.mul,
    operator.floordiv: operator.floordiv,
    operator.mod: operator.mod,
    operator.neg: operator.neg,
}


class _Failed:
    """The value of a node that failed, or that reads one (reported once, at the cause)."""


FAILED = _Failed()


def from_torch(
    model: Any,
    example_args: Sequence[Any] = (),
    *,
    example_kwargs: Mapping[str, Any] | None = None,
    dynamic_shapes: Any = None,
) -> ModuleOp:
    """Export `model` (an `nn.Module`) with `torch.export.export` and import it; or import
    an `ExportedProgram` as it is (`example_args` then unused). Returns a verified module
    holding `func.func @main` in the nn dialect."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        ep = model
    else:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"from_torch takes an nn.Module or an ExportedProgram, got {type(model).__name__}"
            )
        ep = torch.export.export(
            model,
            tuple(example_args),
            kwargs=dict(example_kwargs) if example_kwargs else None,
            dynamic_shapes=dynamic_shapes,
        )
    return import_exported_program(ep)


def import_exported_program(
    ep: Any,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    relocate: Callable[[SourceLocation], SourceLocation | None] | None = None,
) -> ModuleOp:
    """Import an `ExportedProgram` (decomposed to core ATen first). `input_shapes` gives
    user inputs with dynamic dims a static shape (by input name). `relocate` maps a
    node's source line to the one to report (the backend maps lines of a captured graph's
    generated code back to the user's)."""
    return Importer(decompose(ep), input_shapes or {}, relocate).run()


KEPT_OPS = ("aten.scaled_dot_product_attention.default",)
"""Ops left whole by the decomposition (each has a converter): attention stays one op, which
the importer lowers itself (decomposing it re-traces layouts that fail for some models,
GPT-2 of `transformers` among them)."""


def decompose(ep: Any) -> Any:
    """`ep` in the core ATen opset, but for `KEPT_OPS`."""
    import torch

    table = torch.export.default_decompositions()
    for name in KEPT_OPS:
        packet, overload = name.removeprefix("aten.").rsplit(".", 1)
        table.pop(getattr(getattr(torch.ops.aten, packet), overload), None)
    return ep.run_decompositions(table)


def torch_dtype_to_numpy(dtype: Any) -> np.dtype[Any]:
    import torch

    table = {
        torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
        torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
        torch.uint8: np.uint8, torch.bool: np.bool_,
    }  # fmt: skip
    if dtype not in table:
        raise UnsupportedTorchError(f"element type {dtype} has no nn element type")
    return np.dtype(table[dtype])


def to_numpy(t: Any) -> np.ndarray[Any, Any]:
    """A torch tensor's values as a numpy array (a copy, C-contiguous)."""
    torch_dtype_to_numpy(t.dtype)
    return np.array(t.detach().cpu().numpy(), order="C")  # keeps 0-d arrays 0-d


def _ssa_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_$." else "_" for c in name)
    cleaned = re.sub(r"_(\d+)$", r"\1", cleaned)  # xDSL would drop a `_<digits>` suffix
    return cleaned if cleaned and not cleaned[0].isdigit() else "v" + cleaned


class Importer:
    """One import: the FX value environment, the nn ops emitted so far, and the helpers the
    converters call (the `base.Importer` protocol)."""

    def __init__(
        self,
        ep: Any,
        input_shapes: Mapping[str, Sequence[int]],
        relocate: Callable[[SourceLocation], SourceLocation | None] | None = None,
    ) -> None:
        self.ep = ep
        self.relocate = relocate
        self.input_shapes = {k: tuple(int(d) for d in v) for k, v in input_shapes.items()}
        self.env: dict[Any, Any] = {}
        self.ops: list[Operation] = []
        self.unflattened: dict[SSAValue, SSAValue] = {}
        """A value whose `?` dims merge a dynamic size with other dims -> the same elements
        with those dims apart. nn types cannot say that `?` is 8 times another `?`, so a
        view that splits such a dim goes from that value, and a linear layer on the merged
        rows runs on it (`views`)."""
        self.sym_shapes: dict[SSAValue, tuple[Any, ...]] = {}
        """A value with `?` dims -> its shape as ints and SymDims (from the metadata)."""
        self.symbol_at: dict[str, tuple[int, int]] = {}
        """A dynamic size's symbol -> (user input #, axis) where an input has it."""
        self._args: list[SSAValue] = []
        self.bindings: dict[Any, int] = {}
        """Sympy symbol -> size, for dynamic dims that `input_shapes` makes static."""
        self._constants: dict[int, tuple[Any, SSAValue]] = {}
        self.fold_limit_bytes = nn.FOLD_LIMIT_BYTES
        import torch

        self.library_dirs = (os.path.dirname(torch.__file__) + os.sep,)
        """Frames in these directories are PyTorch's; an op's location is the user's line."""

    # ---- values -------------------------------------------------------------------
    def constant(self, array: Any) -> SSAValue:
        arr = np.asarray(array)
        cached = self._constants.get(id(array))
        if cached is not None and cached[0] is array:
            return cached[1]
        op = nn.ConstantOp.from_array(arr if arr.flags.c_contiguous else np.array(arr, order="C"))
        self.ops.append(op)
        self._constants[id(array)] = (array, op.result)
        return op.result

    def ssa(self, v: Tensor) -> SSAValue:
        return v if isinstance(v, SSAValue) else self.constant(v)

    @staticmethod
    def shape(v: Tensor) -> tuple[int, ...]:
        if isinstance(v, SSAValue):
            return nn.shape_of(v.type)
        return tuple(np.shape(v))

    def rank(self, v: Tensor) -> int:
        return len(self.shape(v))

    @staticmethod
    def dtype(v: Tensor) -> np.dtype[Any]:
        if isinstance(v, SSAValue):
            assert isinstance(v.type, TensorType)
            return nn.numpy_dtype(v.type.element_type)
        return np.asarray(v).dtype

    def tensor(self, v: Any, dtype: Any) -> Tensor:
        if isinstance(v, SSAValue | np.ndarray):
            return v
        if is_sym(v):
            raise UnsupportedTorchError(f"the dynamic size {v!r} is used as a value")
        return np.asarray(v, dtype=dtype)

    def cast(self, v: Tensor, dtype: Any) -> Tensor:
        dt = np.dtype(dtype)
        if self.dtype(v) == dt:
            return v
        if not isinstance(v, SSAValue):
            return np.asarray(v).astype(dt)
        return self.emit(nn.CastOp, v, dtype=nn.DTYPE_NAMES[nn.element_type_of(dt)])

    def reshape(self, v: Tensor, shape: Sequence[Any]) -> Tensor:
        """`v` reshaped to `shape`, whose dims are ints, -1 (the rest) or SymDims; one
        unknown dim passes through as numpy's -1."""
        dims = [-1 if is_sym(d) or d in (-1, nn.DYNAMIC) else int(d) for d in shape]
        if dims.count(-1) > 1:
            raise UnsupportedTorchError(
                f"a reshape to {list(shape)} has more than one dynamic dim; export with at most "
                "one dynamic dim per reshaped tensor"
            )
        if tuple(nn.DYNAMIC if d == -1 else d for d in dims) == self.shape(v):
            return v  # the same shape (a `?` dim in the same place stays)
        return self.emit(nn.ReshapeOp, v, newshape=tuple(dims))

    def carrier(self, d: SymDim, rank: int, axis: int) -> SSAValue | None:
        """An all-true bool tensor of rank `rank`, the dynamic size `d` on `axis` and 1
        elsewhere: what broadcasting a known value to `d` needs (`nn.where` of it). It is
        cut from the user input that has `d`; None when no input has it as such."""
        where = self.symbol_at.get(d.expr)
        if where is None:
            return None
        x: Tensor = self._args[where[0]]
        in_axis = where[1]
        for other in reversed(range(self.rank(x))):
            if other != in_axis:
                x = self.emit(nn.TakeOp, x, np.asarray(0, np.int64), axis=other)
        true = np.ones((), np.bool_)
        mask = self.emit(logic_ops.LogicalOrOp, self.emit(logic_ops.EqualOp, x, x), true)
        shape = [1] * rank
        shape[axis] = -1
        out = self.reshape(mask, shape)
        assert isinstance(out, SSAValue)
        return out

    # ---- emitting nn ops --------------------------------------------------------------
    def emit_all(self, cls: type[nn.NNOp], *operands: Tensor, **attrs: Any) -> list[Tensor]:
        """Apply an nn op: folded with its kernel when every operand is known (and the
        result is at most `fold_limit_bytes`), else emitted."""
        defaults = cls.prop_defaults()
        props = {k: nn.from_python(v, defaults[k]) for k, v in attrs.items() if v is not None}
        if operands and all(not isinstance(o, SSAValue) for o in operands) and self._may_fold(cls, operands, props):
            out = KERNELS[cls.name](*[np.asarray(o) for o in operands], **cls.python_attrs(props))
            return [np.asarray(r) for r in out] if isinstance(out, tuple) else [np.asarray(out)]
        values = [self.ssa(o) for o in operands]
        op = cls.build(*values, **attrs)
        op.check_dtypes([v.type for v in values])  # type: ignore[misc]
        self.ops.append(op)
        return list(op.results)

    def _may_fold(self, cls: type[nn.NNOp], operands: Sequence[Tensor], props: Mapping[str, Any]) -> bool:
        types = [nn.tensor(np.shape(o), nn.element_type_of(np.asarray(o).dtype)) for o in operands]
        results = cls.infer(types, cls.python_attrs(props))
        return all(
            int(np.prod(nn.shape_of(t), dtype=np.int64)) * nn.numpy_dtype(t.element_type).itemsize
            <= self.fold_limit_bytes
            for t in results
        )

    def emit(self, cls: type[nn.NNOp], *operands: Tensor, **attrs: Any) -> Tensor:
        (out,) = self.emit_all(cls, *operands, **attrs)
        return out

    # ---- sizes ----------------------------------------------------------------------------
    def size(self, d: Any) -> int | SymDim:
        """A dim of the metadata: an int, or a SymDim unless `input_shapes` fixed it."""
        import torch

        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if self.bindings:
                expr = expr.subs(self.bindings)
            if getattr(expr, "is_number", False):
                return int(expr)
            return SymDim(str(expr), expr)
        return int(d)

    def _meta(self, node: Any) -> tuple[list[np.dtype[Any] | None], list[tuple[Any, ...] | None]]:
        import torch

        val = node.meta.get("val")
        vals = list(val) if isinstance(val, list | tuple) else [val]
        dtypes: list[np.dtype[Any] | None] = []
        shapes: list[tuple[Any, ...] | None] = []
        for v in vals:
            if isinstance(v, torch.Tensor):
                try:
                    dtypes.append(torch_dtype_to_numpy(v.dtype))
                except UnsupportedTorchError:
                    dtypes.append(None)
                shapes.append(tuple(self.size(d) for d in v.shape))
            else:
                dtypes.append(None)
                shapes.append(None)
        return dtypes, shapes

    # ---- the graph ----------------------------------------------------------------------------
    def _resolve(self, a: Any) -> Any:
        import torch.fx

        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, list | tuple):
            return type(a)(self._resolve(x) for x in a)
        return a

    def _failed_input(self, a: Any) -> bool:
        if a is FAILED:
            return True
        if isinstance(a, list | tuple):
            return any(self._failed_input(x) for x in a)
        return False

    def _user_input(self, name: str, val: Any, index: int) -> TensorType[Any]:
        import torch

        if not isinstance(val, torch.Tensor):
            raise TorchImportError(f"user input '{name}' is a {type(val).__name__}, not a tensor")
        dtype = torch_dtype_to_numpy(val.dtype)
        shape = [self.size(d) for d in val.shape]
        if name in self.input_shapes:
            given = self.input_shapes[name]
            if len(given) != len(shape) or any(
                not is_sym(d) and d != g for d, g in zip(shape, given, strict=True)
            ):
                raise TorchImportError(
                    f"input_shapes gives '{name}' the shape {list(given)}, but the program "
                    f"takes {shape}"
                )
            for d, g in zip(val.shape, given, strict=True):
                if isinstance(d, torch.SymInt) and d.node.expr.is_symbol:
                    self.bindings[d.node.expr] = g
            shape = list(given)
        for axis, d in enumerate(shape):
            if is_sym(d):
                self.symbol_at.setdefault(d.expr, (index, axis))
        return nn.tensor([dim_of(d) for d in shape], nn.element_type_of(dtype))

    def run(self) -> ModuleOp:
        from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

        ep = self.ep
        sig = ep.graph_signature
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(sig.input_specs):
            raise TorchImportError("the graph's placeholders do not match its signature")
        unknown = set(self.input_shapes) - {
            s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT
        }
        if unknown:
            raise TorchImportError(f"input_shapes names unknown input(s) {sorted(unknown)}")

        arg_types: list[Any] = []
        arg_nodes: list[Any] = []
        for node, spec in zip(placeholders, sig.input_specs, strict=True):
            kind = spec.kind
            if kind == InputKind.USER_INPUT:
                if isinstance(spec.arg, TensorArgument):
                    arg_types.append(self._user_input(spec.arg.name, node.meta.get("val"), len(arg_types)))
                    arg_nodes.append(node)
                else:  # a non-tensor input export specialised on: its value
                    self.env[node] = getattr(spec.arg, "value", None)
            elif kind == InputKind.PARAMETER:
                self.env[node] = to_numpy(ep.state_dict[spec.target])
            elif kind == InputKind.BUFFER:
                source = ep.state_dict if spec.persistent else ep.constants
                self.env[node] = to_numpy(source[spec.target])
            elif kind == InputKind.CONSTANT_TENSOR:
                self.env[node] = to_numpy(ep.constants[spec.target])
            else:
                raise TorchImportError(f"input '{node.name}' of kind {kind.name} is not supported")

        block = Block(arg_types=arg_types)
        self._args = list(block.args)
        names: list[str] = []
        for arg, node in zip(block.args, arg_nodes, strict=True):
            arg.name_hint = _ssa_name(node.name)
            names.append(node.name)
            self.env[node] = arg
            self._record_shape(arg, tuple(self.size(d) for d in node.meta["val"].shape))

        problems: list[Problem] = []
        output_node = None
        for node in ep.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                output_node = node
                break
            if node.op == "get_attr":
                self.env[node] = self._get_attr(node)
                continue
            if node.op != "call_function":
                problems.append(Problem(node.op, "this kind of FX node is not supported", None, node.name))
                self.env[node] = FAILED
                continue
            problem = self._convert(node)
            if problem is not None:
                problems.append(problem)
        if problems:
            raise TorchImportError(problems)
        assert output_node is not None

        results: list[SSAValue] = []
        outputs = list(output_node.args[0])
        for value, spec in zip(outputs, sig.output_specs, strict=True):
            if spec.kind != OutputKind.USER_OUTPUT:
                problems.append(
                    Problem(
                        "output",
                        f"the program writes back {spec.kind.name.lower()} '{spec.target}' "
                        "(an in-place update of a buffer or input); export the model in eval "
                        "mode, without state updates",
                        None,
                        getattr(value, "name", ""),
                    )
                )
                continue
            v = self._resolve(value)
            if v is None or isinstance(v, str):
                continue  # a None leaf (an absent optional output)
            if isinstance(v, bool | int | float):
                v = np.asarray(v)
            results.append(self.ssa(v))
        if problems:
            raise TorchImportError(problems)

        ret = func.ReturnOp(*results)
        block.add_ops([*_live(self.ops), ret])
        main = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
        module = ModuleOp([main])
        try:
            module.verify()
        except VerifyException as e:
            raise TorchImportError(f"the imported module does not verify: {e}") from e
        return module

    def _get_attr(self, node: Any) -> Any:
        import torch

        obj: Any = self.ep.graph_module
        for part in str(node.target).split("."):
            obj = getattr(obj, part)
        return to_numpy(obj) if isinstance(obj, torch.Tensor) else obj

    def _convert(self, node: Any) -> Problem | None:
        """Convert one call_function node into env; a Problem when it fails."""

        target = node.target
        location = location_of(node.meta.get("stack_trace"), self.library_dirs)
        if location is not None and self.relocate is not None:
            location = self.relocate(location) or location
        name = _op_name(target)
        if name in IGNORED_OPS:
            self.env[node] = None
            return None
        if target is operator.getitem:
            source, index = node.args
            value = self.env[source]
            item = FAILED if value is FAILED else value[index]
            if isinstance(item, Deferred):
                start = len(self.ops)
                try:
                    item = item.fn()
                except (UnsupportedTorchError, VerifyException) as e:
                    self.env[node] = FAILED
                    return Problem(_op_name(source.target), str(e), location, node.name)
                self._locate(start, location)
            self.env[node] = item
            if isinstance(item, SSAValue):
                _, shapes = self._meta(node)
                if shapes and shapes[0] is not None:
                    self._record_shape(item, shapes[0])
            return None
        if target in _SYM_OPERATORS or name == "aten.sym_size.int":
            return self._convert_size(node, name)
        converter = CONVERTERS.get(name)
        if converter is None:
            self.env[node] = FAILED
            return Problem(name, "no converter for this op", location, node.name)
        args = self._resolve(list(node.args))
        kwargs = self._resolve(dict(node.kwargs))
        if self._failed_input(args) or self._failed_input(list(kwargs.values())):
            self.env[node] = FAILED
            return None
        start = len(self.ops)
        try:
            dtypes, shapes = self._meta(node)
            call = Call(name, _bind(target, args, kwargs), dtypes, shapes)
            value = converter(self, call)
        except (UnsupportedTorchError, VerifyException, TorchImportError) as e:
            self.env[node] = FAILED
            return Problem(name, str(e), location, node.name)
        self.env[node] = value
        if isinstance(value, SSAValue) and shapes and shapes[0] is not None:
            self._record_shape(value, shapes[0])
        self._locate(start, location)
        return None

    def _record_shape(self, v: SSAValue, shape: tuple[Any, ...]) -> None:
        """Keep the symbolic shape of a value with `?` dims (when it matches the type)."""
        dims = self.shape(v)
        if nn.DYNAMIC in dims and len(dims) == len(shape) and all(
            is_sym(s) == (d == nn.DYNAMIC) for s, d in zip(shape, dims, strict=True)
        ):
            self.sym_shapes.setdefault(v, shape)

    def _locate(self, start: int, location: SourceLocation | None) -> None:
        """Give the ops emitted since `start` the node's source line."""
        if location is not None:
            loc = _file_line(location)
            for op in self.ops[start:]:
                op.location = loc

    def _convert_size(self, node: Any, name: str) -> Problem | None:
        """`aten.sym_size.int` and Python arithmetic on sizes: ints when known, else SymDims."""
        if name == "aten.sym_size.int":
            x, d = node.args
            val = x.meta["val"]
            self.env[node] = self.size(val.shape[d])
            return None
        args = self._resolve(list(node.args))
        if self._failed_input(args):
            self.env[node] = FAILED
            return None
        meta = node.meta.get("val")
        if meta is not None:
            self.env[node] = self.size(meta)
            return None
        self.env[node] = _SYM_OPERATORS[node.target](*args)
        return None


def _live(ops: list[Operation]) -> list[Operation]:
    """`ops` without those whose results nobody uses (all nn ops are pure): the 2-D views
    that `unflattened` bypasses, constants only folding read."""
    keep: list[Operation] = []
    for op in reversed(ops):
        if op.results and not any(r.uses for r in op.results):
            op.drop_all_references()
            continue
        keep.append(op)
    return keep[::-1]


def _op_name(target: Any) -> str:
    """`aten.convolution.default` for an ATen overload, else the callable's name."""
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return str(getattr(target, "__name__", target))


def _file_line(location: SourceLocation) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(location.file), IntAttr(location.line), IntAttr(1))


def _bind(target: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The op's arguments by schema name, defaults filled in."""
    out: dict[str, Any] = {}
    schema = target._schema
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            out[a.name] = args[i]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out
