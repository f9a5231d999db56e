"""Explicit registration of every `nn` op in the op registry (TVM's RELAY_REGISTER_OP).

Called once by `byoc.op_registry` on first query; nothing else registers nn ops.
"""

from __future__ import annotations

from byoc.dialects.nn import NN_OPS
from byoc.interpreters.kernels import KERNELS
from byoc.op_registry import Argument, OpRecord, register_op

# support level as in TVM (1: basic nn, 2: conv/pool, 3: tensor transforms,
# 4: broadcast and reductions, 10: misc).
_LEVELS: dict[str, int] = {
    **dict.fromkeys(
        [
            "nn.add", "nn.subtract", "nn.multiply", "nn.divide", "nn.relu", "nn.sigmoid",
            "nn.tanh", "nn.exp", "nn.log", "nn.sqrt", "nn.dense", "nn.bias_add",
            "nn.batch_norm", "nn.softmax", "nn.concatenate", "nn.erf",
        ],
        1,
    ),
    **dict.fromkeys(
        [
            "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
            "nn.global_max_pool2d", "nn.pad", "nn.conv2d_transpose", "nn.lrn",
        ],
        2,
    ),
    **dict.fromkeys(
        [
            "nn.reshape", "nn.flatten", "nn.transpose", "nn.clip", "nn.abs", "nn.negative",
            "nn.leaky_relu", "nn.prelu", "nn.cast", "nn.hard_sigmoid", "nn.hard_swish",
            "nn.reciprocal", "nn.split", "nn.take",
        ],
        3,
    ),
    **dict.fromkeys(
        ["nn.maximum", "nn.minimum", "nn.power", "nn.reduce_mean", "nn.reduce_sum",
         "nn.reduce_max", "nn.matmul", "nn.strided_slice"],
        4,
    ),
    "nn.resize2d": 5,
}


def register_nn_ops() -> None:
    for name, cls in NN_OPS.items():
        op_def = cls.get_irdl_definition()
        variadic = any(type(d).__name__.startswith("Var") for _, d in op_def.operands)
        args = tuple(
            Argument(opname, "Tensor", f"operand '{opname}' of {name}") for opname, _ in op_def.operands
        )
        doc = (cls.__doc__ or "").strip().splitlines()
        register_op(
            OpRecord(
                name=name,
                num_inputs=-1 if variadic else len(args),
                arguments=args,
                support_level=_LEVELS.get(name, 10),
                pattern_kind=cls.KIND,
                reference=KERNELS[name],
                op_class=cls,
                description=doc[0] if doc else "",
            )
        )
