"""Where a light model's time goes on the dnnl target: the share of each oneDNN primitive
kind in a run, from oneDNN's own per-primitive execution times (ONEDNN_VERBOSE=1, one
thread, 5 runs after 2 warm-up runs; one child process a model, since oneDNN reads the
variable once per process).

    PYTHONPATH=. python benchmarks/dnnl_profile.py shufflenet densenet121 resnet50 squeezenet
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys

RUNS = 5


def child(name: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(os.path.dirname(here), "tests")]
    import numpy as np
    import onnx
    from support.onnx_harness import light_models, randomize_weights

    import byoc
    from byoc.frontend.onnx import import_model

    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    exe = byoc.build(import_model(model), targets=["dnnl", "ccompiler"])
    weights = {t.name for t in model.graph.initializer}
    data = next(i for i in model.graph.input if i.name not in weights)
    shape = [d.dim_value for d in data.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for _ in range(2):
        exe.run(x)
    print("RUN-BEGIN", flush=True)
    for _ in range(RUNS):
        exe.run(x)
    print("RUN-END", flush=True)


def profile(name: str) -> str:
    env = dict(os.environ, ONEDNN_VERBOSE="1", BYOC_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, __file__, "--child", name], env=env,
                          capture_output=True, text=True, check=False)
    if "RUN-END" not in done.stdout:
        return f"{name}: failed\n{done.stderr[-2000:]}"
    run = done.stdout.split("RUN-BEGIN", 1)[1].split("RUN-END", 1)[0]
    spent: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for line in run.splitlines():
        if not line.startswith("onednn_verbose,exec"):
            continue
        fields = line.split(",")
        kind = fields[3] + (" dw" if fields[3] == "convolution" and "dw" in fields[4] else "")
        spent[kind] += float(fields[-1])
        count[kind] += 1
    total = sum(spent.values())
    shares = "; ".join(f"{k} {v / total * 100:.0f}% ({count[k] // RUNS})" for k, v in spent.most_common())
    return f"{name}: {total / RUNS:.2f} ms a run in primitives; {shares}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="light model names (shufflenet, resnet50, ...)")
    args = parser.parse_args(argv)
    print(f"# load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    failed = False
    for name in args.models:
        line = profile(name)
        failed |= line.startswith(f"{name}: failed")
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:])))
