"""Where a light model's time goes on the dnnl target: the share of each oneDNN primitive
kind in a run, from oneDNN's own per-primitive execution times (ONEDNN_VERBOSE=1, one
thread, 5 runs after 2 warm-up runs; one child process a model, since oneDNN reads the
variable once per process).

    PYTHONPATH=. python benchmarks/dnnl_profile.py shufflenet densenet121 resnet50 squeezenet
"""
import collections
import os
import re
import subprocess
import sys
if len(sys.argv) > 2 and sys.argv[1] == "child":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(os.path.dirname(here), "tests")]
    import numpy as np, onnx, byoc
    from onnx_harness import light_models, randomize_weights
    from byoc.frontend.onnx import import_model
    model = randomize_weights(onnx.load(light_models()[sys.argv[2]]), seed=0)
    exe = byoc.build(import_model(model), targets=["dnnl", "ccompiler"])
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in next(i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}).type.tensor_type.shape.dim]).astype(np.float32)
    for _ in range(2): exe.run(x)
    print("RUN-BEGIN", flush=True)
    for _ in range(5): exe.run(x)
    print("RUN-END", flush=True)
    sys.exit(0)
for name in sys.argv[1:]:
    env = dict(os.environ, ONEDNN_VERBOSE="1", BYOC_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, __file__, "child", name], env=env, capture_output=True, text=True)
    out = done.stdout
    if "RUN-BEGIN" not in out: print(done.stderr[-2000:]); continue
    run = out.split("RUN-BEGIN", 1)[1].split("RUN-END")[0]
    agg = collections.Counter(); cnt = collections.Counter()
    for ln in run.splitlines():
        if not ln.startswith("onednn_verbose,exec"): continue
        f = ln.split(","); kind = f[3]
        if kind == "convolution":
            kind += " dw" if re.search(r",g\d+", ln) and "_dw" in f[4] or "dw" in f[4] else ""
        agg[kind] += float(f[-1]); cnt[kind] += 1
    tot = sum(agg.values())
    print(f"{name}: {tot/5:.2f} ms/run in primitives; " + "; ".join(
        f"{k} {v/tot*100:.0f}% ({cnt[k]//5})" for k, v in agg.most_common()))
