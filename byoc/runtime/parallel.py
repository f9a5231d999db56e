"""Inter-op parallelism on the host: independent branches of a plan run at once.

A plan's steps form a graph through their slots. `BranchGraph.of(plan)` finds,
once per Executable, which steps wait for which, and whether the graph has
*independent heavy steps* — two steps with no path between them, each a
partition call or a host kernel that computes (reshapes, transposes and the
like do not count). A graph without them (a chain, the usual case) runs as
before, one step after another on the calling thread, at no extra cost.

A graph with them (inception-style blocks, two-headed detectors) runs through
`run_branches`: a step starts when its inputs are ready, on a worker of the
Executable's pool, and the thread budget is divided, never multiplied: a step
started while `k - 1` others run gets `max(1, n // k)` threads for its calls
(`set_call_threads` of its component), and at most `n` steps run at once. A
step started when nothing else runs or waits runs on the calling thread with
the whole budget. The pool (`HostPool`) is bounded (`n` workers), started on
the first branchy run, owned by one Executable and shut down with it.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from byoc.runtime.host import HostPlan, Runner, Step

CHEAP_KERNELS = frozenset(
    {
        "nn.reshape",
        "nn.flatten",
        "nn.transpose",
        "nn.squeeze",
        "nn.expand_dims",
        "nn.identity",
        "nn.shape_of",
        "nn.slice",
        "nn.strided_slice",
        "nn.gather",
        "nn.concatenate",
        "nn.split",
        "nn.cast",
    }
)
"""Host kernels that move data rather than compute: not worth a thread of their own."""


def heavy(step: Step) -> bool:
    return step.kind == "call" or step.name not in CHEAP_KERNELS


@dataclass(frozen=True)
class BranchGraph:
    preds: tuple[tuple[int, ...], ...]
    """For each step, the steps whose outputs it reads."""
    succs: tuple[tuple[int, ...], ...]
    sources: tuple[int, ...]
    """Steps that read only inputs and constants."""
    parallel: bool
    """Whether two heavy steps have no path between them."""

    @staticmethod
    def of(plan: HostPlan) -> BranchGraph:
        writer: dict[int, int] = {}
        for k, step in enumerate(plan.steps):
            for slot in step.outputs:
                writer[slot] = k
        preds = tuple(
            tuple(sorted({writer[s] for s in step.inputs if s in writer})) for step in plan.steps
        )
        succs_l: list[list[int]] = [[] for _ in plan.steps]
        for k, ps in enumerate(preds):
            for p in ps:
                succs_l[p].append(k)
        # reach[k]: bit j set when step j is an ancestor of step k (steps are in order)
        reach: list[int] = []
        parallel = False
        heavy_mask = 0
        for k, ps in enumerate(preds):
            r = 0
            for p in ps:
                r |= reach[p] | (1 << p)
            reach.append(r)
            if heavy(plan.steps[k]):
                if heavy_mask & ~r:  # an earlier heavy step that is not an ancestor
                    parallel = True
                heavy_mask |= 1 << k
        return BranchGraph(
            preds,
            tuple(tuple(s) for s in succs_l),
            tuple(k for k, ps in enumerate(preds) if not ps),
            parallel,
        )


class HostPool:
    """The Executable's bounded pool of host workers (daemon threads named `byoc-host-<k>`),
    started on first use. `close()` (also run when the owner is garbage, through
    `weakref.finalize`) tells them to stop; each worker, before it ends, calls every
    `on_exit` hook (a C library's `thread_release`, so the thread's exit runs no code of a
    library that may be unloaded meanwhile). The pool holds the hooks, hence the components,
    until its last worker has run them: a model freed while its pool is alive unloads its
    libraries only after the workers are done with them. Workers hold no reference to the
    owner."""

    def __init__(self, owner: object, workers: int, on_exit: Sequence[Callable[[], None]] = ()):
        self.workers = max(1, workers)
        self.users = 0
        """Runs using the pool now (the owner's bookkeeping, under its lock)."""
        self.retired = False
        self._queue: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._hooks: list[Callable[[], None]] | None = list(on_exit)
        self._alive = 0
        self._closed = False
        self._finalizer = weakref.finalize(owner, HostPool._stop, self._queue, self._lock, self)
        self._finalizer.atexit = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the host pool is closed")
            if len(self._threads) < self.workers:
                t = threading.Thread(
                    target=HostPool._work,
                    args=(self._queue, self),
                    name=f"byoc-host-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(t)
                self._alive += 1
                t.start()
        self._queue.put((fn, args))

    def close(self) -> None:
        self._finalizer()

    @staticmethod
    def _stop(q: queue.SimpleQueue[Any], lock: threading.Lock, pool: HostPool) -> None:
        with lock:
            pool._closed = True
            alive = len(pool._threads)
            if alive == 0:
                pool._hooks = None
        for _ in range(alive):
            q.put(None)

    @staticmethod
    def _work(q: queue.SimpleQueue[Any], pool: HostPool) -> None:
        while True:
            item = q.get()
            if item is None:
                break
            fn, args = item
            fn(*args)
            del item, fn, args
        for hook in pool._hooks or ():
            try:
                hook()
            except Exception:  # noqa: BLE001, S110 - nothing to report it to
                pass
        with pool._lock:
            pool._alive -= 1
            if pool._alive == 0:
                pool._hooks = None  # the last worker lets the components go


def run_branches(
    graph: BranchGraph,
    runners: Sequence[Runner],
    setters: Sequence[Callable[[int], None] | None],
    slots: list[Any],
    budget: int,
    pool: HostPool,
) -> None:
    """Run every step of a branchy plan over `slots`, independent steps at once (module doc).
    `setters[k]` gives step k's calls their thread share (None: a host kernel). The first
    exception of a step is raised once every started step has finished."""
    n = max(1, budget)
    indeg = [len(p) for p in graph.preds]
    ready = list(graph.sources)
    done: queue.SimpleQueue[tuple[int, BaseException | None]] = queue.SimpleQueue()
    running = 0
    error: BaseException | None = None

    def task(k: int, share: int) -> None:
        try:
            _run_step(runners[k], setters[k], slots, share)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            done.put((k, exc))
        else:
            done.put((k, None))

    while True:
        if error is None and ready:
            if running == 0 and len(ready) == 1:
                k = ready.pop()
                try:  # the trunk: on the calling thread, with the whole budget
                    _run_step(runners[k], setters[k], slots, 0)
                except BaseException as exc:  # noqa: BLE001
                    error = exc
                    continue
                _release(graph, k, indeg, ready)
                continue
            launch = ready[: max(0, n - running)]
            del ready[: len(launch)]
            share = max(1, n // (running + len(launch)))
            for k in launch:
                pool.submit(task, k, share)
            running += len(launch)
        if running == 0:
            break
        k, exc = done.get()
        running -= 1
        if exc is not None:
            error = error or exc
        elif error is None:
            _release(graph, k, indeg, ready)
    if error is not None:
        raise error


def _release(graph: BranchGraph, k: int, indeg: list[int], ready: list[int]) -> None:
    for s in graph.succs[k]:
        indeg[s] -= 1
        if indeg[s] == 0:
            ready.append(s)


def _run_step(
    runner: Runner, setter: Callable[[int], None] | None, slots: list[Any], share: int
) -> None:
    if setter is None or share == 0:
        runner(slots)
        return
    setter(share)
    try:
        runner(slots)
    finally:
        setter(0)


__all__ = ["CHEAP_KERNELS", "BranchGraph", "HostPool", "heavy", "run_branches"]
