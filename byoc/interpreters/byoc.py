"""The byoc dialect in the interpreter: a `byoc.region` runs in place, a
`byoc.composite` as a call of its body, so a module gives the same answer
before and after partitioning."""

from __future__ import annotations

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)

from byoc.dialects.byoc import CompositeOp, RegionOp, YieldOp


@register_impls
class ByocFunctions(InterpreterFunctions):
    @impl(RegionOp)
    def run_region(self, interpreter: Interpreter, op: RegionOp, args: PythonValues) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, (), "byoc.region")

    @impl(CompositeOp)
    def run_composite(
        self, interpreter: Interpreter, op: CompositeOp, args: PythonValues
    ) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, args, op.composite.data)

    @impl_terminator(YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()
