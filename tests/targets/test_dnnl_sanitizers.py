"""The dnnl engine (and the graph runtime base it is compiled with) under AddressSanitizer and
UndefinedBehaviorSanitizer: a standalone C harness loads a partition's graph blob, runs it
once, then from four threads at once, and writes the output, which must equal the Python
build's. oneDNN itself is not instrumented (its allocations and JIT code are not checked);
leaks reported inside libdnnl/libgomp (their process-lifetime caches) are suppressed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.targets.dnnl import missing_reason

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dnnl import _model  # noqa: E402

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")

HARNESS = r"""
#include <pthread.h>
#include <stdio.h>

static uint8_t* read_file(const char* path, long* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* p = (uint8_t*)malloc((size_t)*size + 1);
  if (fread(p, 1, (size_t)*size, f) != (size_t)*size) { free(p); p = NULL; }
  fclose(f);
  return p;
}

typedef struct {
  byoc_graph_module* m; int32_t g; DLTensor* in; DLTensor* out0; int64_t n_out; int ok;
} job_t;

static void* worker(void* p) {
  job_t* j = (job_t*)p;
  float* mine = (float*)malloc((size_t)j->n_out * sizeof(float));
  DLTensor out = *j->out0;
  out.data = mine;
  DLTensor* args[2] = {j->in, &out};
  j->ok = 1;
  for (int r = 0; r < 10 && j->ok; ++r) {
    if (byoc_graph_run(j->m, j->g, args, 2) != 0) j->ok = 0;
    else if (memcmp(mine, j->out0->data, (size_t)j->n_out * sizeof(float)) != 0) j->ok = 0;
  }
  free(mine);
  return NULL;
}

/* argv: blob in.bin out.bin symbol rank_in dims... rank_out dims... */
int main(int argc, char** argv) {
  if (argc < 6) return 2;
  long size = 0, in_size = 0;
  uint8_t* blob = read_file(argv[1], &size);
  float* x = (float*)read_file(argv[2], &in_size);
  if (!blob || !x) return 2;
  int a = 5;
  int64_t sin[8], sout[8];
  int rin = atoi(argv[a++]);
  for (int i = 0; i < rin; ++i) sin[i] = atoll(argv[a++]);
  int rout = atoi(argv[a++]);
  int64_t n_out = 1;
  for (int i = 0; i < rout; ++i) { sout[i] = atoll(argv[a++]); n_out *= sout[i]; }
  byoc_retain();
  byoc_graph_module* m = byoc_graph_module_load(blob, (uint64_t)size, 2);
  if (!m) { fprintf(stderr, "load: %s\n", byoc_last_error()); return 1; }
  int32_t g = byoc_graph_module_find(m, argv[4]);
  if (g < 0) { fprintf(stderr, "no graph %s\n", argv[4]); return 1; }
  float* y = (float*)malloc((size_t)n_out * sizeof(float));
  DLTensor tin = {x, {kDLCPU, 0}, rin, {kDLFloat, 32, 1}, sin, NULL, 0};
  DLTensor tout = {y, {kDLCPU, 0}, rout, {kDLFloat, 32, 1}, sout, NULL, 0};
  DLTensor* args[2] = {&tin, &tout};
  if (byoc_graph_run(m, g, args, 2) != 0) { fprintf(stderr, "run: %s\n", byoc_last_error()); return 1; }
  if (byoc_graph_module_set_num_threads(m, 1) != 0) return 1;
  pthread_t t[4];
  job_t jobs[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (job_t){m, g, &tin, &tout, n_out, 0};
    pthread_create(&t[i], NULL, worker, &jobs[i]);
  }
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; ++i) if (!jobs[i].ok) { fprintf(stderr, "thread %d differs\n", i); return 1; }
  FILE* f = fopen(argv[3], "wb");
  fwrite(y, sizeof(float), (size_t)n_out, f);
  fclose(f);
  byoc_graph_module_free(m);
  free(y);
  free(x);
  free(blob);
  byoc_release();
  printf("ok\n");
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_engine_under_asan_and_ubsan(tmp_path: Path) -> None:
    from byoc.runtime import graph_format as gf
    from byoc.runtime.toolchain import INCLUDE_DIR
    from byoc.targets.dnnl.onednn import build_options
    from byoc.targets.dnnl.target import DNNL_ENGINE

    module, inputs = _model()
    exe = byoc.build(module.clone(), targets=["dnnl"])
    (want,) = exe.run(*inputs)
    (part,) = exe.partitions
    graph_blob = exe.components["dnnl"].export()["graph"]
    assert graph_blob.startswith(gf.MAGIC)
    (tmp_path / "g.bin").write_bytes(graph_blob)
    inputs[0].astype(np.float32).tofile(tmp_path / "in.bin")
    (tmp_path / "harness.c").write_text(DNNL_ENGINE.source() + HARNESS)
    flags, libs = build_options()
    exe_path = tmp_path / "harness"
    cmd = ["cc", "-std=c11", "-O1", "-g", "-fno-omit-frame-pointer",
           "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-Wall", "-Wextra",
           "-Werror", "-pthread", *flags, f"-I{INCLUDE_DIR}", str(tmp_path / "harness.c"),
           "-o", str(exe_path), *libs, "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    supp = tmp_path / "lsan.supp"
    supp.write_text("leak:libdnnl\nleak:libgomp\n")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               LSAN_OPTIONS=f"suppressions={supp}", UBSAN_OPTIONS="print_stacktrace=1")
    shape_in, shape_out = inputs[0].shape, want.shape
    run = subprocess.run(
        [str(exe_path), str(tmp_path / "g.bin"), str(tmp_path / "in.bin"),
         str(tmp_path / "out.bin"), part.symbol, str(len(shape_in)), *map(str, shape_in),
         str(len(shape_out)), *map(str, shape_out)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr, run.stderr
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float32).reshape(shape_out)
    np.testing.assert_array_equal(got, want)

