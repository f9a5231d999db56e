"""`@impl(nn.<Op>)` for every nn op: the op's numpy kernel called with its properties."""

from __future__ import annotations

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from byoc.dialects import nn
from byoc.interpreters.kernels import KERNELS
from byoc.interpreters.recurrent import RECURRENT_KERNELS  # noqa: F401 (registers them)


def _nn_impl(op_class: type[nn.NNOp]):
    kernel = KERNELS[op_class.name]

    def run(
        self: InterpreterFunctions, interpreter: Interpreter, op: nn.NNOp, args: PythonValues
    ) -> PythonValues:
        out = kernel(*args, **op.attr_values())
        return tuple(out) if isinstance(out, tuple) else (out,)

    run.__name__ = "run_" + op_class.name.removeprefix("nn.")
    return impl(op_class)(run)


@register_impls
class NnFunctions(InterpreterFunctions):
    """`@impl(nn.<Op>)` for every nn op: the op's kernel with its properties."""

    locals().update({"run_" + c.name.removeprefix("nn."): _nn_impl(c) for c in nn.NN_OPS.values()})
