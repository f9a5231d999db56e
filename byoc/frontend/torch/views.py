"""Views of tensors with dynamic dims: reshapes that split or merge a `?` dim.

An nn type cannot say that one `?` dim is 4 times another (`tensor<?x17x8xf32>` after a view
of `tensor<17x?x32xf32>` to `[17, 4*B, 8]`), so a later view to `[B, 4, 17, 8]` cannot be
typed from it. The importer therefore keeps, for a value whose dims merge a dynamic size
with static ones, a *factored* value (`Importer.unflattened`): the same elements with the
merged dims kept apart (`tensor<17x?x4x8xf32>`, `?` = B), so that the value is
`reshape(factored, its shape)`. Views and permutes go through the factored value, and a
dense layer on the merged rows runs on it. Sizes are compared as sympy expressions (the
exported program's symbolic shapes): `4*s77` divides `544*s77`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import SSAValue

from byoc.dialects import nn
from byoc.frontend.torch.base import Importer, SymDim, Tensor, is_sym

Expr = Any
"""A sympy expression: a size, an integer or a product with the dynamic sizes' symbols."""


def sym_shape(imp: Importer, v: Tensor) -> tuple[Expr, ...] | None:
    """`v`'s shape as sympy expressions: from its recorded symbolic shape, else its static
    shape; None when a `?` dim has no known expression."""
    import sympy

    shape = imp.sym_shapes.get(v) if isinstance(v, SSAValue) else None
    if shape is None:
        dims = imp.shape(v)
        if nn.DYNAMIC in dims:
            return None
        return tuple(sympy.Integer(d) for d in dims)
    return sym_shape_of_dims(shape)


def as_dims(shape: Sequence[Expr]) -> tuple[int | SymDim, ...]:
    """Sympy sizes as the importer's dims: ints, and SymDims for the dynamic ones."""
    return tuple(int(d) if d.is_Integer else SymDim(str(d), d) for d in shape)


def _divides(p: Expr, q: Expr) -> bool:
    """Whether size `p` divides size `q` (q / p is an integer times a product of symbols)."""
    import sympy

    num, den = sympy.fraction(sympy.cancel(q / p))
    coeff, _ = num.as_coeff_Mul()
    return den == 1 and coeff.is_Integer and bool(coeff > 0)


def _cumulative(shape: Sequence[Expr]) -> list[Expr]:
    import sympy

    out: list[Expr] = []
    acc: Expr = sympy.Integer(1)
    for d in shape:
        acc = acc * d
        if sympy.cancel(acc / (out[-1] if out else 1)) != 1:
            out.append(acc)  # a size-1 dim adds no cut
    return out


def refine(a: Sequence[Expr], b: Sequence[Expr]) -> tuple[Expr, ...] | None:
    """The coarsest shape both `a` and `b` are merges of (consecutive dims multiplied), or
    None: [17, B, 32] and [17, 4*B, 8] refine to [17, B, 4, 8]; [6, 4] and [4, 6] have none."""
    import sympy

    ca, cb = _cumulative(a), _cumulative(b)
    if not ca or not cb:
        return tuple(a) if not ca and not cb else None
    if sympy.cancel(ca[-1] / cb[-1]) != 1:
        return None
    out: list[Expr] = []
    prev: Expr = sympy.Integer(1)
    i = j = 0
    while i < len(ca) and j < len(cb):
        if sympy.cancel(ca[i] / cb[j]) == 1:
            cut = ca[i]
            i, j = i + 1, j + 1
        elif _divides(ca[i], cb[j]):
            cut = ca[i]
            i += 1
        elif _divides(cb[j], ca[i]):
            cut = cb[j]
            j += 1
        else:
            return None
        out.append(sympy.cancel(cut / prev))
        prev = cut
    return tuple(out)


def groups(fine: Sequence[Expr], coarse: Sequence[Expr]) -> list[list[int]] | None:
    """For each dim of `coarse`, the consecutive dims of `fine` it merges (none for a size-1
    dim); None when `coarse` is not a merge of `fine`."""
    import sympy

    out: list[list[int]] = []
    k = 0
    for d in coarse:
        group: list[int] = []
        acc: Expr = sympy.Integer(1)
        while sympy.cancel(d / acc) != 1:
            if k >= len(fine) or not _divides(acc * fine[k], d):
                return None
            acc = acc * fine[k]
            group.append(k)
            k += 1
        out.append(group)
    while out and k < len(fine) and fine[k] == 1:  # trailing size-1 dims of `fine`
        out[-1].append(k)
        k += 1
    return out if k == len(fine) else None


def _dynamic_count(shape: Sequence[Expr]) -> int:
    return sum(1 for d in shape if not d.is_Integer)


def record(imp: Importer, v: Tensor, shape: Sequence[Expr]) -> None:
    """Remember `v`'s symbolic shape (for a value with `?` dims)."""
    if isinstance(v, SSAValue) and nn.DYNAMIC in imp.shape(v):
        imp.sym_shapes[v] = as_dims(shape)


def view(imp: Importer, x: SSAValue, out: Sequence[Any]) -> Tensor | None:
    """`x` viewed as `out` (ints and SymDims) through the common refinement of `x`'s factored
    value (or `x`) and `out`, recording the result's factored value; None when the sizes
    have no such refinement (the caller reshapes as it can)."""
    target = sym_shape_of_dims(out)
    src = imp.unflattened.get(x, x)
    src_shape = sym_shape(imp, src)
    if target is None or src_shape is None:
        return None
    fine = refine(src_shape, target)
    if fine is None or _dynamic_count(fine) > 1 or _dynamic_count(target) > 1:
        return None
    f = imp.reshape(src, as_dims(fine))
    record(imp, f, fine)
    y = imp.reshape(f, out)
    record(imp, y, target)
    if isinstance(y, SSAValue) and isinstance(f, SSAValue) and y is not f:
        imp.unflattened[y] = f
    return y


def sym_shape_of_dims(dims: Sequence[Any]) -> tuple[Expr, ...] | None:
    """A converter's result shape (ints and SymDims) as sympy sizes; None if a SymDim has
    no expression."""
    import sympy

    out: list[Expr] = []
    for d in dims:
        if is_sym(d):
            if d.sym is None:
                return None
            out.append(d.sym)
        else:
            out.append(sympy.Integer(int(d)))
    return tuple(out)


def permute(imp: Importer, x: SSAValue, y: SSAValue, axes: Sequence[int]) -> None:
    """After `y = transpose(x, axes)`: give `y` the factored value of `x` permuted alike."""
    f = imp.unflattened.get(x)
    if f is None:
        return
    fs, xs = sym_shape(imp, f), sym_shape(imp, x)
    if fs is None or xs is None:
        return
    parts = groups(fs, xs)
    if parts is None:
        return
    order = [k for a in axes for k in parts[a]]
    if len(order) != len(fs):
        return
    fy = imp.emit(nn.TransposeOp, f, axes=order) if order != list(range(len(fs))) else f
    record(imp, fy, [fs[k] for k in order])
    if isinstance(fy, SSAValue):
        imp.unflattened[y] = fy
        record(imp, y, [xs[a] for a in axes])


def rows_source(imp: Importer, a: SSAValue) -> tuple[Tensor, tuple[Expr, ...]] | None:
    """For a linear layer on `a` (its last dim the features): `a`'s factored value with that
    last dim whole (dims before it kept apart), and `a`'s symbolic shape; None when `a` has no
    factored value."""
    f = imp.unflattened.get(a)
    if f is None:
        return None
    fs, shape = sym_shape(imp, f), sym_shape(imp, a)
    if fs is None or shape is None:
        return None
    parts = groups(fs, shape)
    if parts is None or not parts[-1]:
        return None
    kept = fs[: parts[-1][0]]
    merged = (*kept, shape[-1])
    if len(parts[-1]) == 1:
        return f, shape
    g = imp.reshape(f, as_dims(merged))
    record(imp, g, merged)
    return g, shape
