/* The dnnl engine's int8 blocks: the QDQ composites `dnnl.qconv2d`,
 * `dnnl.qdense` and `dnnl.qmatmul` on oneDNN's int8 primitives.
 *
 * Compiled in the same translation unit after the f32 engine's parts (the target lists the
 * sources); it defines byoc_graph_engine_def. A graph without an int8 composite goes to the
 * f32 engine unchanged (DNNL_ENGINE). A graph with one is cut into parts in node order:
 * each int8 composite is one part, each run of other nodes one f32 part, planned by the
 * f32 engine as a graph of its own (byoc_dn_init on a sub-graph whose inputs are the values
 * it reads from elsewhere and whose outputs are the values read after it).
 *
 * Exactness. oneDNN computes only the integer accumulator: src u8/s8 with the source zero
 * point (a run-time zero-point attribute), s8 weights (zero point 0), s32 destination, no
 * scales, no bias, no post-ops, so nothing in it is floating point. The requantization is
 * byoc's own, the same float operations as byoc_qkernels.h (byoc_q_requant_: v =
 * (float)(acc + bias) * mult, clamped to [lo, hi], rounded half to even, plus the zero
 * point) and the numpy reference. oneDNN's u8 x s8 kernels are exact only where the CPU has
 * VNNI (vpdpbusd) or AMX: without it they use vpmaddubsw, whose int16 pair sums saturate,
 * and halve the weights to avoid that. So an int8 graph is refused at init unless oneDNN's
 * effective ISA has VNNI (dnnl_get_effective_cpu_isa; ONEDNN_MAX_CPU_ISA lowers it); the
 * dnnl target's predicate (byoc/targets/dnnl/quant.py) does the same check at build time,
 * so there the blocks go to ccompiler instead.
 *
 * Layouts. A qconv2d reads and writes NHWC (oneDNN's fast int8 layout): a value that only
 * int8 convolutions read stays NHWC between them; a graph input or a value read by another
 * part is plain (NCHW), reordered on the way in (an exact u8/s8 copy) and requantized
 * straight into NCHW on the way out.
 */

#include "byoc_qkernels.h"

#define DQ_MAX_IO 64

enum { DQ_LOC_NONE, DQ_LOC_INPUT, DQ_LOC_OUTPUT, DQ_LOC_ARENA, DQ_LOC_CONST };

/* Whether oneDNN's u8 x s8 -> s32 kernels are exact here: VNNI (AVX2 or AVX-512) or AMX. */
static int dq_isa_exact(void) {
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  return (isa & 0x8) != 0 || (isa & 0x40) != 0; /* avx2_vnni bit, avx512_core_vnni bit */
}

/* byoc's own loops (requantize, quantize, dequantize): AVX2 where the CPU has it, the
   baseline C when BYOC_CPU_DISPATCH=baseline (read at init; the same integers either way). */
static int dq_level(void) {
  const char *d = getenv("BYOC_CPU_DISPATCH");
  if (d != NULL && strcmp(d, "baseline") == 0) return 0;
  return byoc_qgemm_level();
}

static int dq_is_gemm(const byoc_graph_node *n) {
  return strcmp(n->op, "dnnl.qconv2d") == 0 || strcmp(n->op, "dnnl.qdense") == 0 ||
         strcmp(n->op, "dnnl.qmatmul") == 0;
}

static int dq_is_lone(const byoc_graph_node *n) {
  return strcmp(n->op, "dnnl.quantize") == 0 || strcmp(n->op, "dnnl.dequantize") == 0;
}

/* An nn.batch_norm reading a lone dequantize's value: run in C like the reference kernel
   (byoc.interpreters.kernels.batch_norm), so the quantized model's integers stay the
   reference's; oneDNN's batch normalization rounds differently. */
static int dq_is_bn(const byoc_graph *g, const byoc_graph_node *n) {
  if (strcmp(n->op, "nn.batch_norm") != 0 || n->num_inputs != 5) return 0;
  const byoc_graph_entry *x = &g->entries[n->inputs[0]];
  int at = x->kind == BYOC_ENTRY_INNER ? x->parent : x->kind == BYOC_ENTRY_NODE ? x->node : -1;
  return at >= 0 && strcmp(g->nodes[at].op, "dnnl.dequantize") == 0;
}

static int dq_is_qnode(const byoc_graph_node *n) { return dq_is_gemm(n) || dq_is_lone(n); }

typedef struct dq_bn {
  int x_e, y_e;
  float *scale, *shift; /* per channel, owned */
  int64_t n, inner, ch;
} dq_bn;

/* A lone quantize / dequantize: byoc_qkernels.h's semantics (per tensor or per axis). */
typedef struct dq_lone {
  int quant;       /* 1: f32 -> int8 (quantize), 0: int8 -> f32 */
  int s8;          /* the int8 side is s8 */
  int s32;         /* a dequantized i32 constant (folded at init) */
  int x_e, y_e;
  float *scale;    /* ch values, owned */
  int32_t *zp;     /* ch values, owned */
  int64_t n, inner, ch;
} dq_lone;

typedef struct dq_gemm {
  int is_conv;
  int x_e, y_e;
  int src_reorder; /* the input is plain NCHW: reorder it to NHWC first */
  dnnl_memory_desc_t src_plain_md, src_md, wei_md, dst_md, zp_md, scratch_md, reorder_scratch_md;
  dnnl_primitive_t reorder, prim;
  void *wei;      /* reordered weights, owned */
  int32_t zp_val; /* the source zero point */
  int has_zp;
  int32_t *bias;  /* per output channel, owned */
  float *mult;    /* per output channel, owned */
  float lo, hi;
  int32_t yzp;
  int y_s8;
  int64_t rows, ch; /* the accumulator is rows x ch (NHWC pixels or dense rows) */
  int64_t batch, hw; /* conv: for the NCHW output */
  int out_nchw;                      /* requantized NHWC, then reordered to NCHW */
  dnnl_memory_desc_t out_nhwc_md, out_plain_md;
  dnnl_primitive_t out_reorder;
  size_t acc_bytes, src_bytes, out_bytes;
  int nthreads; /* the OpenMP threads its primitives were created with and run with */
} dq_gemm;

typedef struct dq_part {
  int is_q;   /* an int8 gemm (q) or, with is_lone, a quantize / dequantize (lone) */
  int is_lone;
  int folded; /* a lone dequantize of a constant, done at init */
  int is_bn;
  dq_bn bn;
  dq_gemm q;
  dq_lone lone;
  /* f32 part */
  byoc_graph sub;
  byoc_graph_entry *sub_entries;
  int32_t *sub_inputs, *sub_outputs;
  dn_engine_state *f32;
} dq_part;

typedef struct dq_ws {
  struct dq_ws *next;
  void *arena, *scratch;
  dnnl_stream_t stream;
  dnnl_memory_t *mem; /* 9 per part: src_plain, src, wei, dst, zp, scratch, reorder scratch,
                         output NHWC, output plain */
} dq_ws;

typedef struct dq_state {
  const byoc_graph *graph;
  int nthreads;
  int level; /* dq_level() at init */
  dnnl_engine_t eng;
  int nparts;
  dq_part *parts;
  int *loc;          /* entry -> DQ_LOC_* */
  size_t *off;       /* entry -> arena offset */
  int *nhwc;         /* entry -> stored NHWC */
  void **fold;       /* entry -> its value computed at init (a dequantized constant), or NULL */
  size_t arena_size; /* values, then the temporaries */
  size_t acc_off, src_off, out_off, scratch_size;
  pthread_mutex_t lock;
  dq_ws *pool;
} dq_state;

/* The wrapper state: either the f32 engine's (no int8 composite) or the int8 one. */
typedef struct dq_engine {
  const byoc_graph *graph;
  int is_q;
  void *f32; /* dn_engine_state */
  dq_state *q;
} dq_engine;

static size_t dq_align(size_t n) { return (n + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN; }

static int dq_dtype(const byoc_graph_entry *e) { /* 1 u8, 2 s8, 3 s32, 4 f32, 0 other */
  if (e->dtype.lanes != 1) return 0;
  if (e->dtype.code == kDLUInt && e->dtype.bits == 8) return 1;
  if (e->dtype.code == kDLInt && e->dtype.bits == 8) return 2;
  if (e->dtype.code == kDLInt && e->dtype.bits == 32) return 3;
  if (e->dtype.code == kDLFloat && e->dtype.bits == 32) return 4;
  return 0;
}

static dnnl_data_type_t dq_dnnl_dt(int dt) {
  return dt == 1 ? dnnl_u8 : dt == 2 ? dnnl_s8 : dt == 3 ? dnnl_s32 : dnnl_f32;
}

static void dq_destroy_state(dq_state *s);

/* ---- parsing a quantized composite -------------------------------------------------- */

typedef struct dq_block {
  const byoc_graph_node *gemm, *dq_x, *dq_w, *dq_b, *bias, *relu, *quant;
} dq_block;

/* The body node producing entry e inside composite `c` (index ci), or NULL. */
static const byoc_graph_node *dq_producer(const byoc_graph *g, int ci, int e) {
  const byoc_graph_entry *en = &g->entries[e];
  if (en->kind != BYOC_ENTRY_INNER || en->parent != ci) return NULL;
  return &g->nodes[ci].body[en->node];
}

static const void *dq_const(const byoc_graph *g, int e) {
  return g->entries[e].kind == BYOC_ENTRY_CONST ? g->entries[e].data : NULL;
}

static int dq_parse(const byoc_graph *g, int ci, dq_block *b) {
  const byoc_graph_node *c = &g->nodes[ci];
  memset(b, 0, sizeof *b);
  if (c->num_outputs != 1) return byoc_fail("dnnl: %s with extra results", c->op);
  for (int32_t i = 0; i < c->num_body; i++) {
    const byoc_graph_node *n = &c->body[i];
    if (strcmp(n->op, "nn.quantize") == 0) b->quant = n;
  }
  if (b->quant == NULL || b->quant->outputs[0] != c->outputs[0])
    return byoc_fail("dnnl: %s does not end in nn.quantize", c->op);
  const byoc_graph_node *n = dq_producer(g, ci, b->quant->inputs[0]);
  if (n != NULL && strcmp(n->op, "nn.relu") == 0) {
    b->relu = n;
    n = dq_producer(g, ci, n->inputs[0]);
  }
  if (n != NULL && (strcmp(n->op, "nn.bias_add") == 0 || strcmp(n->op, "nn.add") == 0)) {
    b->bias = n;
    const byoc_graph_node *a = dq_producer(g, ci, n->inputs[0]);
    const byoc_graph_node *d = dq_producer(g, ci, n->inputs[1]);
    if (a != NULL && strcmp(a->op, "nn.dequantize") == 0) {
      const byoc_graph_node *t = a;
      a = d;
      d = t;
    }
    b->dq_b = d;
    n = a;
  }
  if (n == NULL || !(strcmp(n->op, "nn.conv2d") == 0 || strcmp(n->op, "nn.dense") == 0 ||
                     strcmp(n->op, "nn.matmul") == 0))
    return byoc_fail("dnnl: %s has no conv2d, dense or matmul under its quantize", c->op);
  b->gemm = n;
  b->dq_x = dq_producer(g, ci, n->inputs[0]);
  b->dq_w = dq_producer(g, ci, n->inputs[1]);
  int want = 4 + (b->relu != NULL) + (b->bias != NULL ? 2 : 0);
  if (b->dq_x == NULL || b->dq_w == NULL || strcmp(b->dq_x->op, "nn.dequantize") != 0 ||
      strcmp(b->dq_w->op, "nn.dequantize") != 0 ||
      (b->bias != NULL && (b->dq_b == NULL || strcmp(b->dq_b->op, "nn.dequantize") != 0)) ||
      c->num_body != want)
    return byoc_fail("dnnl: %s is not dequantize -> gemm [-> bias] [-> relu] -> quantize", c->op);
  return 0;
}

/* A per-tensor f32 constant's value. */
static int dq_scalar_f32(const byoc_graph *g, int e, float *out) {
  const void *d = dq_const(g, e);
  if (d == NULL || g->entries[e].numel != 1 || dq_dtype(&g->entries[e]) != 4) return -1;
  *out = *(const float *)d;
  return 0;
}

/* A per-tensor u8/s8 zero point's value. */
static int dq_scalar_zp(const byoc_graph *g, int e, int32_t *out) {
  const void *d = dq_const(g, e);
  int dt = dq_dtype(&g->entries[e]);
  if (d == NULL || g->entries[e].numel != 1 || (dt != 1 && dt != 2)) return -1;
  *out = dt == 1 ? *(const uint8_t *)d : *(const int8_t *)d;
  return 0;
}

/* ---- planning ------------------------------------------------------------------------ */

static dnnl_memory_desc_t dq_md(int ndim, const int64_t *d, dnnl_data_type_t dt,
                                dnnl_format_tag_t tag) {
  dnnl_dims_t dims;
  for (int i = 0; i < ndim; i++) dims[i] = d[i];
  dnnl_memory_desc_t md = NULL;
  if (dnnl_memory_desc_create_with_tag(&md, ndim, dims, dt, tag) != dnnl_success) return NULL;
  return md;
}

/* Reorder constant `data` (layout `src`) into a new buffer of layout `dst`, now. */
static void *dq_reorder_const(dnnl_engine_t eng, const_dnnl_memory_desc_t src, const void *data,
                              const_dnnl_memory_desc_t dst) {
  size_t size = dnnl_memory_desc_get_size(dst);
  void *buf = aligned_alloc(DN_ALIGN, dq_align(size ? size : 1));
  if (buf == NULL) return NULL;
  memset(buf, 0, dq_align(size ? size : 1));
  dnnl_memory_t ms = NULL, md = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_stream_t stream = NULL;
  int ok = dnnl_memory_create(&ms, src, eng, (void *)data) == dnnl_success &&
           dnnl_memory_create(&md, dst, eng, buf) == dnnl_success &&
           dnnl_reorder_primitive_desc_create(&pd, src, eng, dst, eng, NULL) == dnnl_success &&
           dnnl_primitive_create(&prim, pd) == dnnl_success &&
           dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) == dnnl_success;
  if (ok) {
    dnnl_exec_arg_t ea[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
    ok = dnnl_primitive_execute(prim, stream, 2, ea) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
  }
  if (stream) dnnl_stream_destroy(stream);
  if (prim) dnnl_primitive_destroy(prim);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (ms) dnnl_memory_destroy(ms);
  if (md) dnnl_memory_destroy(md);
  if (!ok) {
    free(buf);
    return NULL;
  }
  return buf;
}

static int dq_scratch(dq_state *s, const_dnnl_primitive_desc_t pd, dnnl_memory_desc_t *out) {
  const_dnnl_memory_desc_t smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  *out = NULL;
  if (smd != NULL && dnnl_memory_desc_get_size(smd) > 0) {
    if (dnnl_memory_desc_clone(out, smd) != dnnl_success) return -1;
    size_t sz = dnnl_memory_desc_get_size(smd);
    if (sz > s->scratch_size) s->scratch_size = sz;
  }
  return 0;
}

static int dq_plan_gemm(dq_state *s, int ci, dq_gemm *q) {
  const byoc_graph *g = s->graph;
  const byoc_graph_node *c = &g->nodes[ci];
  dq_block b;
  if (dq_parse(g, ci, &b) < 0) return -1;
  q->is_conv = strcmp(b.gemm->op, "nn.conv2d") == 0;
  int is_matmul = strcmp(b.gemm->op, "nn.matmul") == 0;
  q->x_e = b.dq_x->inputs[0];
  q->y_e = c->outputs[0];
  const byoc_graph_entry *xe = &g->entries[q->x_e], *ye = &g->entries[q->y_e];
  int xdt = dq_dtype(xe), ydt = dq_dtype(ye);
  if ((xdt != 1 && xdt != 2) || (ydt != 1 && ydt != 2))
    return byoc_fail("dnnl: %s: x and y must be u8 or s8", c->op);
  float xs, ys;
  int32_t xzp, yzp;
  if (dq_scalar_f32(g, b.dq_x->inputs[1], &xs) < 0 || dq_scalar_zp(g, b.dq_x->inputs[2], &xzp) < 0 ||
      dq_scalar_f32(g, b.quant->inputs[1], &ys) < 0 || dq_scalar_zp(g, b.quant->inputs[2], &yzp) < 0)
    return byoc_fail("dnnl: %s: x and y need constant per-tensor scales and zero points", c->op);
  if (byoc_graph_attr_int(b.dq_x, "block_size", 0) != 0 || byoc_graph_attr_int(b.dq_w, "block_size", 0) != 0)
    return byoc_fail("dnnl: %s: blocked scales", c->op);
  /* weights: s8 constant, zero point 0, scale per tensor or per output channel */
  int we = b.dq_w->inputs[0];
  const byoc_graph_entry *wen = &g->entries[we];
  const int8_t *w = dq_const(g, we);
  if (w == NULL || dq_dtype(wen) != 2) return byoc_fail("dnnl: %s: the weights must be an s8 constant", c->op);
  int64_t O = is_matmul ? wen->shape[wen->ndim - 1] : wen->shape[0];
  if (is_matmul && wen->ndim != 2) return byoc_fail("dnnl: qmatmul needs a 2-D right operand");
  /* the f32 engine's rule (docs/threads.md, "oneDNN's threads"): the setting only for two
     grains of multiply-adds, each output summing numel(w) / O products */
  q->nthreads = threads_for(s->nthreads, ye->numel * (wen->numel / (O > 0 ? O : 1)), DN_MAC_GRAIN);
  omp_set_num_threads(q->nthreads);
  const float *ws = dq_const(g, b.dq_w->inputs[1]);
  const int8_t *wz = dq_const(g, b.dq_w->inputs[2]);
  int64_t nws = g->entries[b.dq_w->inputs[1]].numel, nwz = g->entries[b.dq_w->inputs[2]].numel;
  if (ws == NULL || wz == NULL || dq_dtype(&g->entries[b.dq_w->inputs[1]]) != 4 ||
      dq_dtype(&g->entries[b.dq_w->inputs[2]]) != 2 || (nws != 1 && nws != O) || nwz != nws)
    return byoc_fail("dnnl: %s: weight scale not per tensor or per output channel", c->op);
  if (nws != 1) {
    int64_t axis = byoc_graph_attr_int(b.dq_w, "axis", 1);
    if (axis < 0) axis += wen->ndim;
    if (axis != (is_matmul ? 1 : 0)) return byoc_fail("dnnl: %s: weight scale on another axis", c->op);
  }
  for (int64_t i = 0; i < nwz; i++)
    if (wz[i] != 0) return byoc_fail("dnnl: %s: weight zero point not 0", c->op);
  q->bias = calloc((size_t)O, sizeof(int32_t));
  q->mult = calloc((size_t)O, sizeof(float));
  if (!q->bias || !q->mult) return byoc_fail("dnnl: out of memory");
  for (int64_t o = 0; o < O; o++) {
    float in_scale = xs * ws[nws == 1 ? 0 : o];
    q->mult[o] = in_scale / ys;
    if (!isfinite(q->mult[o])) return byoc_fail("dnnl: %s: a scale is zero or not finite", c->op);
  }
  if (b.bias != NULL) {
    const int32_t *bq = dq_const(g, b.dq_b->inputs[0]);
    const float *bs = dq_const(g, b.dq_b->inputs[1]);
    const int32_t *bz = dq_const(g, b.dq_b->inputs[2]);
    int64_t nbs = g->entries[b.dq_b->inputs[1]].numel;
    if (bq == NULL || bs == NULL || bz == NULL || dq_dtype(&g->entries[b.dq_b->inputs[0]]) != 3 ||
        g->entries[b.dq_b->inputs[0]].numel != O || (nbs != 1 && nbs != O) ||
        g->entries[b.dq_b->inputs[2]].numel != nbs)
      return byoc_fail("dnnl: %s: the bias is not an i32 constant per channel", c->op);
    for (int64_t o = 0; o < O; o++) {
      float in_scale = xs * ws[nws == 1 ? 0 : o];
      if (bz[nbs == 1 ? 0 : o] != 0 || bs[nbs == 1 ? 0 : o] != in_scale)
        return byoc_fail("dnnl: %s: the bias scale is not x_scale * w_scale", c->op);
      q->bias[o] = bq[o];
    }
  }
  q->yzp = yzp;
  q->y_s8 = ydt == 2;
  float tmin = q->y_s8 ? -128.f : 0.f, tmax = q->y_s8 ? 127.f : 255.f;
  q->lo = tmin - (float)yzp;
  q->hi = tmax - (float)yzp;
  if (b.relu != NULL && q->lo < 0.f) q->lo = 0.f;
  q->zp_val = xzp;
  q->has_zp = xzp != 0;
  if (xdt != 1 || xzp != 0) {
    /* oneDNN compensates an s8 source or a zero point in float32: exact only while every
       value stays below 2^24 (byoc/targets/dnnl/quant.py, COMPENSATED_BOUND) */
    int64_t K = wen->numel / O, most = 0;
    for (int64_t o = 0; o < O; o++) {
      int64_t sum = 0;
      for (int64_t k = 0; k < K; k++) {
        int8_t v = is_matmul ? w[k * O + o] : w[o * K + k];
        sum += v < 0 ? -(int64_t)v : v;
      }
      if (sum > most) most = sum;
    }
    if (most * 640 > ((int64_t)1 << 24))
      return byoc_fail("dnnl: %s: weights too large for oneDNN's exact compensated int8 sums", c->op);
  }

  dnnl_primitive_attr_t attr = NULL;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return byoc_fail("dnnl: no attr");
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (q->has_zp && dnnl_primitive_attr_set_zero_points_mask(attr, DNNL_ARG_SRC, 0) != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return byoc_fail("dnnl: %s: no source zero point", c->op);
  }
  int64_t one = 1;
  q->zp_md = dq_md(1, &one, dnnl_s32, dnnl_a);
  dnnl_primitive_desc_t pd = NULL;
  dnnl_memory_desc_t wplain = NULL, wany = NULL;
  dnnl_status_t st;
  if (q->is_conv) {
    if (strcmp(byoc_graph_attr_string(b.gemm, "data_layout", "NCHW"), "NCHW") != 0 ||
        strcmp(byoc_graph_attr_string(b.gemm, "kernel_layout", "OIHW"), "OIHW") != 0) {
      dnnl_primitive_attr_destroy(attr);
      return byoc_fail("dnnl: qconv2d in a layout other than NCHW/OIHW");
    }
    int64_t cnt, st2[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    const int64_t *v;
    if ((v = byoc_graph_attr_ints(b.gemm, "strides", &cnt)) && cnt == 2) memcpy(st2, v, sizeof st2);
    if ((v = byoc_graph_attr_ints(b.gemm, "dilation", &cnt)) && cnt == 2) memcpy(dl, v, sizeof dl);
    if ((v = byoc_graph_attr_ints(b.gemm, "padding", &cnt)) && cnt == 4) memcpy(pad, v, sizeof pad);
    int64_t G = byoc_graph_attr_int(b.gemm, "groups", 1);
    const int64_t *xs4 = xe->shape, *ys4 = ye->shape, *ws4 = wen->shape;
    if (xe->ndim != 4 || ye->ndim != 4 || wen->ndim != 4 || G < 1 || xs4[1] % G || O % G) {
      dnnl_primitive_attr_destroy(attr);
      return byoc_fail("dnnl: qconv2d shapes");
    }
    dnnl_dims_t strides = {st2[0], st2[1]}, dil = {dl[0] - 1, dl[1] - 1};
    dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
    q->src_md = dq_md(4, xs4, dq_dnnl_dt(xdt), dnnl_acdb);
    q->src_plain_md = dq_md(4, xs4, dq_dnnl_dt(xdt), dnnl_abcd);
    q->dst_md = dq_md(4, ys4, dnnl_s32, dnnl_acdb);
    if (G == 1) {
      wplain = dq_md(4, ws4, dnnl_s8, dnnl_abcd);
      wany = dq_md(4, ws4, dnnl_s8, dnnl_format_tag_any);
    } else {
      int64_t gw[5] = {G, O / G, ws4[1], ws4[2], ws4[3]};
      wplain = dq_md(5, gw, dnnl_s8, dnnl_abcde);
      wany = dq_md(5, gw, dnnl_s8, dnnl_format_tag_any);
    }
    st = dnnl_convolution_forward_primitive_desc_create(
        &pd, s->eng, dnnl_forward_inference, dnnl_convolution_direct, q->src_md, wany, NULL,
        q->dst_md, strides, dil, pl, pr, attr);
    q->rows = ys4[0] * ys4[2] * ys4[3];
    q->ch = O;
    q->batch = ys4[0];
    q->hw = ys4[2] * ys4[3];
  } else {
    int64_t K = xe->shape[xe->ndim - 1];
    int64_t M = xe->numel / (K ? K : 1);
    int64_t kn[2] = {K, O}, mk[2] = {M, K}, mn[2] = {M, O};
    if ((is_matmul ? wen->shape[0] : wen->shape[1]) != K || ye->numel != M * O || xe->ndim < 1) {
      dnnl_primitive_attr_destroy(attr);
      return byoc_fail("dnnl: %s shapes", c->op);
    }
    q->src_md = dq_md(2, mk, dq_dnnl_dt(xdt), dnnl_ab);
    q->dst_md = dq_md(2, mn, dnnl_s32, dnnl_ab);
    wplain = dq_md(2, kn, dnnl_s8, is_matmul ? dnnl_ab : dnnl_ba); /* dense: W is (N, K) */
    wany = dq_md(2, kn, dnnl_s8, dnnl_format_tag_any);
    st = dnnl_matmul_primitive_desc_create(&pd, s->eng, q->src_md, wany, NULL, q->dst_md, attr);
    q->rows = M;
    q->ch = O;
  }
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success || !q->src_md || !q->dst_md || !q->zp_md) {
    if (wplain) dnnl_memory_desc_destroy(wplain);
    if (wany) dnnl_memory_desc_destroy(wany);
    return byoc_fail("dnnl: %s: oneDNN has no int8 primitive for it (status %d)", c->op, (int)st);
  }
  dnnl_memory_desc_clone(&q->wei_md, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
  q->wei = dq_reorder_const(s->eng, wplain, w, q->wei_md);
  dnnl_memory_desc_destroy(wplain);
  dnnl_memory_desc_destroy(wany);
  if (q->wei == NULL || dq_scratch(s, pd, &q->scratch_md) < 0) {
    dnnl_primitive_desc_destroy(pd);
    return byoc_fail("dnnl: %s: the weight reorder failed", c->op);
  }
  st = dnnl_primitive_create(&q->prim, pd);
  dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) return byoc_fail("dnnl: %s: cannot create the primitive", c->op);
  q->acc_bytes = (size_t)q->rows * (size_t)q->ch * sizeof(int32_t);
  q->src_bytes = 0;
  if (q->is_conv) {
    q->src_reorder = !s->nhwc[q->x_e];
    q->out_nchw = !s->nhwc[q->y_e];
    if (q->src_reorder) {
      q->src_bytes = dnnl_memory_desc_get_size(q->src_md);
      dnnl_primitive_desc_t rpd = NULL;
      dnnl_primitive_attr_t rattr = NULL;
      dnnl_primitive_attr_create(&rattr);
      dnnl_primitive_attr_set_scratchpad_mode(rattr, dnnl_scratchpad_mode_user);
      st = dnnl_reorder_primitive_desc_create(&rpd, q->src_plain_md, s->eng, q->src_md, s->eng, rattr);
      dnnl_primitive_attr_destroy(rattr);
      if (st != dnnl_success) return byoc_fail("dnnl: %s: no input reorder", c->op);
      if (dq_scratch(s, rpd, &q->reorder_scratch_md) < 0) {
        dnnl_primitive_desc_destroy(rpd);
        return byoc_fail("dnnl: out of memory");
      }
      st = dnnl_primitive_create(&q->reorder, rpd);
      dnnl_primitive_desc_destroy(rpd);
      if (st != dnnl_success) return byoc_fail("dnnl: %s: cannot create the input reorder", c->op);
    }
    if (q->out_nchw) {
      q->out_nhwc_md = dq_md(4, ye->shape, dq_dnnl_dt(ydt), dnnl_acdb);
      q->out_plain_md = dq_md(4, ye->shape, dq_dnnl_dt(ydt), dnnl_abcd);
      q->out_bytes = (size_t)ye->nbytes;
      dnnl_primitive_desc_t opd = NULL;
      if (!q->out_nhwc_md || !q->out_plain_md ||
          dnnl_reorder_primitive_desc_create(&opd, q->out_nhwc_md, s->eng, q->out_plain_md, s->eng,
                                             NULL) != dnnl_success)
        return byoc_fail("dnnl: %s: no output reorder", c->op);
      st = dnnl_primitive_create(&q->out_reorder, opd);
      dnnl_primitive_desc_destroy(opd);
      if (st != dnnl_success) return byoc_fail("dnnl: %s: cannot create the output reorder", c->op);
    }
  }
  return 0;
}

static int dq_plan_lone(dq_state *s, int ci, dq_lone *l) {
  const byoc_graph *g = s->graph;
  const byoc_graph_node *c = &g->nodes[ci];
  if (c->num_body != 1 || c->num_outputs != 1) return byoc_fail("dnnl: %s is not one op", c->op);
  const byoc_graph_node *n = &c->body[0];
  l->quant = strcmp(n->op, "nn.quantize") == 0;
  if (!l->quant && strcmp(n->op, "nn.dequantize") != 0) return byoc_fail("dnnl: %s holds %s", c->op, n->op);
  l->x_e = n->inputs[0];
  l->y_e = c->outputs[0];
  const byoc_graph_entry *xe = &g->entries[l->x_e];
  int qdt = dq_dtype(l->quant ? &g->entries[l->y_e] : xe);
  int fdt = dq_dtype(l->quant ? xe : &g->entries[l->y_e]);
  int folded_i32 = qdt == 3 && !l->quant && xe->kind == BYOC_ENTRY_CONST;
  if ((qdt != 1 && qdt != 2 && !folded_i32) || fdt != 4)
    return byoc_fail("dnnl: %s: not f32 <-> u8/s8", c->op);
  l->s8 = qdt == 2;
  l->s32 = qdt == 3;
  const float *sc = dq_const(g, n->inputs[1]);
  const void *zp = dq_const(g, n->inputs[2]);
  int64_t ns = g->entries[n->inputs[1]].numel;
  if (sc == NULL || zp == NULL || dq_dtype(&g->entries[n->inputs[1]]) != 4 ||
      dq_dtype(&g->entries[n->inputs[2]]) != qdt || g->entries[n->inputs[2]].numel != ns ||
      byoc_graph_attr_int(n, "block_size", 0) != 0)
    return byoc_fail("dnnl: %s: scale and zero point must be constants, not blocked", c->op);
  l->n = xe->numel;
  l->ch = 1;
  l->inner = l->n;
  if (ns != 1) {
    int64_t axis = byoc_graph_attr_int(n, "axis", 1);
    if (axis < 0) axis += xe->ndim;
    if (axis < 0 || axis >= xe->ndim || xe->shape[axis] != ns) return byoc_fail("dnnl: %s: axis", c->op);
    l->ch = ns;
    l->inner = 1;
    for (int d = (int)axis + 1; d < xe->ndim; d++) l->inner *= xe->shape[d];
  }
  l->scale = malloc((size_t)ns * sizeof(float));
  l->zp = malloc((size_t)ns * sizeof(int32_t));
  if (!l->scale || !l->zp) return byoc_fail("dnnl: out of memory");
  for (int64_t i = 0; i < ns; i++) {
    l->scale[i] = sc[i];
    l->zp[i] = l->s32 ? ((const int32_t *)zp)[i]
               : l->s8 ? ((const int8_t *)zp)[i] : ((const uint8_t *)zp)[i];
  }
  return 0;
}

#ifdef BYOC_Q_AVX2
/* (float)(x - z) * s, 8 at a time: the same conversion and one multiply as the scalar code. */
static BYOC_Q_AVX2 int64_t dq_dequant_avx2(const void *x, int s8, int32_t z, float s, float *y,
                                           int64_t n) {
  const __m256i vz = _mm256_set1_epi32(z);
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i b = _mm_loadl_epi64((const __m128i *)((const char *)x + i));
    __m256i v = s8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, vz)), vs));
  }
  return i;
}
#endif

static void dq_run_lone(const dq_lone *l, const void *x, void *y, int level) {
  const int64_t block = l->ch * l->inner;
  for (int64_t o = 0; o < l->n; o += block)
    for (int64_t c = 0; c < l->ch; c++) {
      const int64_t at = o + c * l->inner;
      const float s = l->scale[c];
      const int32_t z = l->zp[c];
      if (l->quant) {
        if (l->s8) byoc_quantize_i8_row_((const float *)x + at, s, z, (int8_t *)y + at, l->inner, level);
        else byoc_quantize_u8_row_((const float *)x + at, s, z, (uint8_t *)y + at, l->inner, level);
      } else if (l->s32) {
        const int32_t *xr = (const int32_t *)x + at;
        float *yr = (float *)y + at;
        for (int64_t i = 0; i < l->inner; i++) yr[i] = (float)((int64_t)xr[i] - z) * s;
      } else {
        int64_t i = 0;
        float *yr = (float *)y + at;
#ifdef BYOC_Q_AVX2
        if (level > 0) i = dq_dequant_avx2((const char *)x + at, l->s8, z, s, yr, l->inner);
#endif
        if (l->s8)
          for (const int8_t *xr = (const int8_t *)x + at; i < l->inner; i++)
            yr[i] = (float)((int32_t)xr[i] - z) * s;
        else
          for (const uint8_t *xr = (const uint8_t *)x + at; i < l->inner; i++)
            yr[i] = (float)((int32_t)xr[i] - z) * s;
      }
    }
}

static int dq_plan_bn(dq_state *s, int ni, dq_bn *b) {
  const byoc_graph *g = s->graph;
  const byoc_graph_node *n = &g->nodes[ni];
  b->x_e = n->inputs[0];
  b->y_e = n->outputs[0];
  const byoc_graph_entry *xe = &g->entries[b->x_e];
  int64_t axis = byoc_graph_attr_int(n, "axis", 1);
  if (axis < 0) axis += xe->ndim;
  if (dq_dtype(xe) != 4 || dq_dtype(&g->entries[b->y_e]) != 4 || axis != 1 || xe->ndim < 2)
    return byoc_fail("dnnl: nn.batch_norm after a dequantize: f32 on axis 1 only");
  b->ch = xe->shape[1];
  b->n = xe->numel;
  b->inner = 1;
  for (int d = 2; d < xe->ndim; d++) b->inner *= xe->shape[d];
  const float *p[4];
  for (int k = 0; k < 4; k++) {
    int e = n->inputs[k + 1];
    p[k] = s->fold[e] != NULL ? s->fold[e] : dq_const(g, e);
    if (p[k] == NULL || dq_dtype(&g->entries[e]) != 4 || g->entries[e].numel != b->ch)
      return byoc_fail("dnnl: nn.batch_norm after a dequantize needs constant parameters");
  }
  b->scale = malloc((size_t)b->ch * sizeof(float));
  b->shift = malloc((size_t)b->ch * sizeof(float));
  if (!b->scale || !b->shift) return byoc_fail("dnnl: out of memory");
  const float eps = (float)byoc_graph_attr_float(n, "epsilon", 1e-5);
  for (int64_t c = 0; c < b->ch; c++) { /* gamma / sqrt(var + eps); beta - mean * scale */
    const float sd = sqrtf(p[3][c] + eps);
    b->scale[c] = p[0][c] / sd;
    const float ms = p[2][c] * b->scale[c];
    b->shift[c] = p[1][c] - ms;
  }
  return 0;
}

static void dq_run_bn(const dq_bn *b, const float *x, float *y) {
  for (int64_t o = 0; o < b->n; o += b->ch * b->inner)
    for (int64_t c = 0; c < b->ch; c++) {
      const float sc = b->scale[c], sh = b->shift[c];
      const float *xr = x + o + c * b->inner;
      float *yr = y + o + c * b->inner;
      for (int64_t i = 0; i < b->inner; i++) {
        const float t = xr[i] * sc; /* two roundings, as numpy: x * scale + shift */
        yr[i] = t + sh;
      }
    }
}

/* An f32 part: nodes [lo, hi) of the graph as a graph of their own. */
static int dq_plan_f32(dq_state *s, dq_part *part, int lo, int hi, const int *last_use) {
  const byoc_graph *g = s->graph;
  int ne = g->num_entries;
  part->sub_entries = malloc((size_t)(ne ? ne : 1) * sizeof(byoc_graph_entry));
  part->sub_inputs = malloc((size_t)(ne ? ne : 1) * sizeof(int32_t));
  part->sub_outputs = malloc((size_t)(ne ? ne : 1) * sizeof(int32_t));
  char *seen = calloc((size_t)(ne ? ne : 1), 1);
  if (!part->sub_entries || !part->sub_inputs || !part->sub_outputs || !seen) {
    free(seen);
    return byoc_fail("dnnl: out of memory");
  }
  memcpy(part->sub_entries, g->entries, (size_t)ne * sizeof(byoc_graph_entry));
  for (int e = 0; e < ne; e++) {
    part->sub_entries[e].output = -1;
    part->sub_entries[e].input = -1;
  }
  int nin = 0, nout = 0;
  for (int i = lo; i < hi; i++) {
    const byoc_graph_node *n = &g->nodes[i];
    for (int32_t k = 0; k < n->num_inputs; k++) {
      int e = n->inputs[k];
      if (seen[e] || g->entries[e].kind == BYOC_ENTRY_CONST) continue;
      if (s->fold[e] != NULL) {
        seen[e] = 1;
        part->sub_entries[e].kind = BYOC_ENTRY_CONST;
        part->sub_entries[e].data = s->fold[e];
        continue;
      }
      int inside = (g->entries[e].kind == BYOC_ENTRY_NODE && g->entries[e].node >= lo &&
                    g->entries[e].node < hi) ||
                   (g->entries[e].kind == BYOC_ENTRY_INNER && g->entries[e].parent >= lo &&
                    g->entries[e].parent < hi);
      if (inside) continue;
      seen[e] = 1;
      part->sub_entries[e].kind = BYOC_ENTRY_INPUT;
      part->sub_entries[e].input = nin;
      part->sub_entries[e].data = NULL;
      part->sub_inputs[nin++] = e;
    }
  }
  for (int i = lo; i < hi; i++) {
    const byoc_graph_node *n = &g->nodes[i];
    for (int32_t k = 0; k < n->num_outputs; k++) {
      int e = n->outputs[k];
      if (seen[e]) continue;
      if (last_use[e] >= hi || g->entries[e].output >= 0) {
        seen[e] = 1;
        part->sub_entries[e].output = nout;
        part->sub_outputs[nout++] = e;
      }
    }
  }
  free(seen);
  if (nin > DQ_MAX_IO || nout > DQ_MAX_IO)
    return byoc_fail("dnnl: an f32 part with more than %d inputs or outputs", DQ_MAX_IO);
  byoc_graph *sub = &part->sub;
  *sub = *g;
  sub->entries = part->sub_entries;
  sub->num_nodes = hi - lo;
  sub->nodes = g->nodes + lo;
  sub->num_inputs = nin;
  sub->inputs = part->sub_inputs;
  sub->num_outputs = nout;
  sub->outputs = part->sub_outputs;
  size_t wsb = 0;
  part->f32 = byoc_dn_init(sub, s->nthreads, &wsb);
  return part->f32 == NULL ? -1 : 0;
}

static dq_state *dq_plan(const byoc_graph *g, int nthreads) {
  int has_gemm = 0;
  for (int32_t i = 0; i < g->num_nodes; i++) has_gemm |= dq_is_gemm(&g->nodes[i]);
  if (has_gemm && !dq_isa_exact()) {
    byoc_fail("dnnl (%s): int8 blocks need oneDNN's VNNI or AMX kernels (exact int32 sums); "
              "oneDNN's ISA here is 0x%x: rebuild with the int8 blocks on ccompiler",
              g->name ? g->name : "?", (unsigned)dnnl_get_effective_cpu_isa());
    return NULL;
  }
  dq_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    byoc_fail("dnnl: out of memory");
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->graph = g;
  s->nthreads = nthreads;
  s->level = dq_level();
  int ne = g->num_entries, nn = g->num_nodes;
  s->loc = calloc((size_t)(ne ? ne : 1), sizeof(int));
  s->off = calloc((size_t)(ne ? ne : 1), sizeof(size_t));
  s->nhwc = calloc((size_t)(ne ? ne : 1), sizeof(int));
  s->fold = calloc((size_t)(ne ? ne : 1), sizeof(void *));
  s->parts = calloc((size_t)(nn ? nn : 1), sizeof(dq_part));
  int *last_use = malloc((size_t)(ne ? ne : 1) * sizeof(int));
  int *conv_only = malloc((size_t)(ne ? ne : 1) * sizeof(int));
  if (!s->loc || !s->off || !s->nhwc || !s->fold || !s->parts || !last_use || !conv_only) {
    free(last_use);
    free(conv_only);
    byoc_fail("dnnl: out of memory");
    dq_destroy_state(s);
    return NULL;
  }
  if (dnnl_engine_create(&s->eng, dnnl_cpu, 0) != dnnl_success) {
    free(last_use);
    free(conv_only);
    byoc_fail("dnnl: cannot create a CPU engine");
    dq_destroy_state(s);
    return NULL;
  }
  for (int e = 0; e < ne; e++) {
    last_use[e] = -1;
    conv_only[e] = 1;
  }
  for (int i = 0; i < nn; i++) {
    const byoc_graph_node *n = &g->nodes[i];
    int conv = strcmp(n->op, "dnnl.qconv2d") == 0;
    for (int32_t k = 0; k < n->num_inputs; k++) {
      last_use[n->inputs[k]] = i;
      if (!conv) conv_only[n->inputs[k]] = 0;
    }
  }
  /* where each value lives: graph inputs and outputs in the caller's buffers, the values
     the nodes pass to each other in the arena (NHWC when only int8 convolutions read it) */
  size_t arena = 0;
  for (int e = 0; e < ne; e++) {
    const byoc_graph_entry *en = &g->entries[e];
    if (en->kind == BYOC_ENTRY_INPUT) s->loc[e] = DQ_LOC_INPUT;
    else if (en->kind == BYOC_ENTRY_CONST) s->loc[e] = DQ_LOC_CONST;
    else if (en->output >= 0) s->loc[e] = DQ_LOC_OUTPUT;
  }
  for (int i = 0; i < nn; i++) {
    const byoc_graph_node *n = &g->nodes[i];
    for (int32_t k = 0; k < n->num_outputs; k++) {
      int e = n->outputs[k];
      if (s->loc[e] != DQ_LOC_NONE) continue;
      s->loc[e] = DQ_LOC_ARENA;
      s->off[e] = arena;
      arena += dq_align((size_t)g->entries[e].nbytes);
      s->nhwc[e] = strcmp(n->op, "dnnl.qconv2d") == 0 && conv_only[e] && last_use[e] >= 0;
    }
  }
  int before = omp_get_max_threads();
  omp_set_num_threads(nthreads);
  int rc = 0;
  for (int i = 0; i < nn && rc == 0;) {
    dq_part *part = &s->parts[s->nparts++];
    if (dq_is_lone(&g->nodes[i])) {
      part->is_lone = 1;
      rc = dq_plan_lone(s, i, &part->lone);
      i++;
      const dq_lone *l = &part->lone;
      if (rc == 0 && !l->quant && g->entries[l->x_e].kind == BYOC_ENTRY_CONST &&
          s->loc[l->y_e] == DQ_LOC_ARENA) {
        /* a dequantized constant (batch-norm parameters): computed once, here, and a
           constant of the f32 parts after it */
        int y = l->y_e;
        s->fold[y] = aligned_alloc(DN_ALIGN, dq_align((size_t)g->entries[y].nbytes + 1));
        if (s->fold[y] == NULL) {
          rc = byoc_fail("dnnl: out of memory");
        } else {
          dq_run_lone(l, g->entries[l->x_e].data, s->fold[y], s->level);
          s->loc[y] = DQ_LOC_CONST;
          part->folded = 1;
        }
      }
    } else if (dq_is_gemm(&g->nodes[i])) {
      part->is_q = 1;
      rc = dq_plan_gemm(s, i, &part->q);
      i++;
    } else if (dq_is_bn(g, &g->nodes[i])) {
      part->is_bn = 1;
      rc = dq_plan_bn(s, i, &part->bn);
      i++;
    } else {
      int j = i;
      while (j < nn && !dq_is_qnode(&g->nodes[j]) && !dq_is_bn(g, &g->nodes[j])) j++;
      rc = dq_plan_f32(s, part, i, j, last_use);
      i = j;
    }
  }
  omp_set_num_threads(before);
  free(last_use);
  free(conv_only);
  if (rc < 0) {
    dq_destroy_state(s);
    return NULL;
  }
  size_t acc = 0, src = 0, outb = 0;
  for (int i = 0; i < s->nparts; i++) {
    if (!s->parts[i].is_q) continue;
    if (s->parts[i].q.acc_bytes > acc) acc = s->parts[i].q.acc_bytes;
    if (s->parts[i].q.src_bytes > src) src = s->parts[i].q.src_bytes;
    if (s->parts[i].q.out_bytes > outb) outb = s->parts[i].q.out_bytes;
  }
  s->acc_off = arena;
  arena += dq_align(acc);
  s->src_off = arena;
  arena += dq_align(src);
  s->out_off = arena;
  arena += dq_align(outb);
  s->arena_size = arena;
  return s;
}

static void dq_free_ws(dq_state *s, dq_ws *w) {
  if (w == NULL) return;
  if (w->mem)
    for (int i = 0; i < 9 * s->nparts; i++)
      if (w->mem[i]) dnnl_memory_destroy(w->mem[i]);
  if (w->stream) dnnl_stream_destroy(w->stream);
  free(w->mem);
  free(w->arena);
  free(w->scratch);
  free(w);
}

static void dq_destroy_state(dq_state *s) {
  if (s == NULL) return;
  while (s->pool) {
    dq_ws *w = s->pool;
    s->pool = w->next;
    dq_free_ws(s, w);
  }
  for (int i = 0; i < s->nparts; i++) {
    dq_part *p = &s->parts[i];
    if (p->is_bn) {
      free(p->bn.scale);
      free(p->bn.shift);
    } else if (p->is_lone) {
      free(p->lone.scale);
      free(p->lone.zp);
    } else if (p->is_q) {
      dq_gemm *q = &p->q;
      dnnl_memory_desc_t mds[] = {q->src_plain_md, q->src_md,     q->wei_md,
                                  q->dst_md,       q->zp_md,      q->scratch_md,
                                  q->reorder_scratch_md, q->out_nhwc_md, q->out_plain_md};
      for (size_t k = 0; k < sizeof mds / sizeof mds[0]; k++)
        if (mds[k]) dnnl_memory_desc_destroy(mds[k]);
      if (q->prim) dnnl_primitive_destroy(q->prim);
      if (q->reorder) dnnl_primitive_destroy(q->reorder);
      if (q->out_reorder) dnnl_primitive_destroy(q->out_reorder);
      free(q->wei);
      free(q->bias);
      free(q->mult);
    } else {
      if (p->f32) byoc_dn_destroy(p->f32);
      free(p->sub_entries);
      free(p->sub_inputs);
      free(p->sub_outputs);
    }
  }
  free(s->parts);
  free(s->loc);
  free(s->off);
  free(s->nhwc);
  if (s->fold)
    for (int e = 0; e < s->graph->num_entries; e++) free(s->fold[e]);
  free(s->fold);
  if (s->eng) dnnl_engine_destroy(s->eng);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static dq_ws *dq_make_ws(dq_state *s) {
  dq_ws *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  w->mem = calloc((size_t)(9 * s->nparts + 1), sizeof(dnnl_memory_t));
  w->arena = aligned_alloc(DN_ALIGN, dq_align(s->arena_size ? s->arena_size : 1));
  if (s->scratch_size) w->scratch = aligned_alloc(DN_ALIGN, dq_align(s->scratch_size));
  if (!w->mem || !w->arena || (s->scratch_size && !w->scratch) ||
      dnnl_stream_create(&w->stream, s->eng, dnnl_stream_default_flags) != dnnl_success)
    goto bad;
  for (int i = 0; i < s->nparts; i++) {
    const dq_part *p = &s->parts[i];
    if (!p->is_q) continue;
    const dq_gemm *q = &p->q;
    omp_set_num_threads(q->nthreads);
    dnnl_memory_t *m = &w->mem[9 * i];
    if (q->src_reorder && dnnl_memory_create(&m[0], q->src_plain_md, s->eng, DNNL_MEMORY_NONE) != dnnl_success) goto bad;
    if (dnnl_memory_create(&m[1], q->src_md, s->eng, DNNL_MEMORY_NONE) != dnnl_success) goto bad;
    if (dnnl_memory_create(&m[2], q->wei_md, s->eng, q->wei) != dnnl_success) goto bad;
    if (dnnl_memory_create(&m[3], q->dst_md, s->eng, (char *)w->arena + s->acc_off) != dnnl_success) goto bad;
    if (dnnl_memory_create(&m[4], q->zp_md, s->eng, (void *)&q->zp_val) != dnnl_success) goto bad;
    if (q->scratch_md && dnnl_memory_create(&m[5], q->scratch_md, s->eng, w->scratch) != dnnl_success) goto bad;
    if (q->reorder_scratch_md &&
        dnnl_memory_create(&m[6], q->reorder_scratch_md, s->eng, w->scratch) != dnnl_success)
      goto bad;
    if (q->out_reorder &&
        (dnnl_memory_create(&m[7], q->out_nhwc_md, s->eng, (char *)w->arena + s->out_off) != dnnl_success ||
         dnnl_memory_create(&m[8], q->out_plain_md, s->eng, DNNL_MEMORY_NONE) != dnnl_success))
      goto bad;
  }
  return w;
bad:
  dq_free_ws(s, w);
  return NULL;
}

/* ---- running ------------------------------------------------------------------------- */

static void *dq_ptr(const dq_state *s, int e, void *arena, void *const *in, void *const *out) {
  const byoc_graph_entry *en = &s->graph->entries[e];
  switch (s->loc[e]) {
    case DQ_LOC_INPUT: return in[en->input];
    case DQ_LOC_OUTPUT: return out[en->output];
    case DQ_LOC_ARENA: return (char *)arena + s->off[e];
    case DQ_LOC_CONST: return s->fold[e] != NULL ? s->fold[e] : (void *)en->data;
    default: return NULL;
  }
}

/* y = requant(acc + bias) over rows x ch accumulators (NHWC pixels / dense rows): the same
   float operations as byoc_q_requant_ (byoc_qkernels.h); AVX2 where the CPU has it
   (_mm256_cvtps_epi32 rounds half to even like byoc_q_round_ on the clamped value). */
static void dq_requant_base(const int32_t *acc, int64_t n, const int32_t *bias, const float *mult,
                            float lo, float hi, int32_t zp, int y_s8, void *y) {
  for (int64_t c = 0; c < n; c++) {
    int32_t a = (int32_t)((uint32_t)acc[c] + (uint32_t)bias[c]);
    int32_t r = byoc_q_requant_(a, mult[c], lo, hi, zp);
    if (y_s8) ((int8_t *)y)[c] = (int8_t)r;
    else ((uint8_t *)y)[c] = (uint8_t)r;
  }
}

#ifdef BYOC_Q_AVX2
static BYOC_Q_AVX2 void dq_requant_avx2(const int32_t *acc, int64_t n, const int32_t *bias,
                                        const float *mult, float lo, float hi, int32_t zp,
                                        int y_s8, void *y) {
  const __m256i vz = _mm256_set1_epi32(zp);
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    __m256i a = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + c)),
                                 _mm256_loadu_si256((const __m256i *)(bias + c)));
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_loadu_ps(mult + c));
    v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
    __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    w = y_s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64((__m128i *)((char *)y + c), w);
  }
  dq_requant_base(acc + c, n - c, bias + c, mult + c, lo, hi, zp, y_s8, (char *)y + c);
}
#endif

static void dq_requant(const dq_gemm *q, const int32_t *acc, void *y, int nthreads, int level) {
  (void)level; /* unused in a BYOC_BASELINE_ONLY build */
  const int64_t rows = q->rows, ch = q->ch;
#ifdef BYOC_Q_AVX2
  const int avx2 = level > 0;
#endif
#pragma omp parallel for num_threads(nthreads) if (nthreads > 1 && rows * ch > 65536)
  for (int64_t r = 0; r < rows; r++) {
#ifdef BYOC_Q_AVX2
    if (avx2) {
      dq_requant_avx2(acc + r * ch, ch, q->bias, q->mult, q->lo, q->hi, q->yzp, q->y_s8,
                      (char *)y + r * ch);
      continue;
    }
#endif
    dq_requant_base(acc + r * ch, ch, q->bias, q->mult, q->lo, q->hi, q->yzp, q->y_s8,
                    (char *)y + r * ch);
  }
}

static int dq_exec(dnnl_primitive_t prim, dnnl_stream_t stream, int n, dnnl_exec_arg_t *a) {
  if (dnnl_primitive_execute(prim, stream, n, a) != dnnl_success) return -1;
  return dnnl_stream_wait(stream) == dnnl_success ? 0 : -1;
}

static int dq_run(dq_state *s, void *const *in, void *const *out) {
  pthread_mutex_lock(&s->lock);
  dq_ws *w = s->pool;
  if (w) s->pool = w->next;
  pthread_mutex_unlock(&s->lock);
  if (w == NULL && (w = dq_make_ws(s)) == NULL) return byoc_fail("dnnl: cannot allocate a workspace");
  int rc = 0;
  omp_set_num_threads(s->nthreads);
  for (int i = 0; rc == 0 && i < s->nparts; i++) {
    dq_part *p = &s->parts[i];
    if (p->is_bn) {
      dq_run_bn(&p->bn, dq_ptr(s, p->bn.x_e, w->arena, in, out), dq_ptr(s, p->bn.y_e, w->arena, in, out));
      continue;
    }
    if (p->is_lone) {
      if (p->folded) continue;
      dq_run_lone(&p->lone, dq_ptr(s, p->lone.x_e, w->arena, in, out),
                  dq_ptr(s, p->lone.y_e, w->arena, in, out), s->level);
      continue;
    }
    if (!p->is_q) {
      void *pin[DQ_MAX_IO], *pout[DQ_MAX_IO];
      for (int32_t k = 0; k < p->sub.num_inputs; k++)
        pin[k] = dq_ptr(s, p->sub.inputs[k], w->arena, in, out);
      for (int32_t k = 0; k < p->sub.num_outputs; k++)
        pout[k] = dq_ptr(s, p->sub.outputs[k], w->arena, in, out);
      char err[512];
      if (dn_run(p->f32->plan, pin, pout, err, sizeof err) != 0) rc = byoc_fail("%s", err);
      continue;
    }
    const dq_gemm *q = &p->q;
    dnnl_memory_t *m = &w->mem[9 * i];
    void *x = dq_ptr(s, q->x_e, w->arena, in, out);
    void *y = dq_ptr(s, q->y_e, w->arena, in, out);
    void *src = x;
    if (q->src_reorder) {
      src = (char *)w->arena + s->src_off;
      dnnl_memory_set_data_handle(m[0], x);
      dnnl_memory_set_data_handle(m[1], src);
      dnnl_exec_arg_t ra[3] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}, {DNNL_ARG_SCRATCHPAD, m[6]}};
      if (dq_exec(q->reorder, w->stream, m[6] ? 3 : 2, ra) < 0) {
        rc = byoc_fail("dnnl: the input reorder of int8 block %d failed", i);
        break;
      }
    } else {
      dnnl_memory_set_data_handle(m[1], src);
    }
    dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, m[1]}, {DNNL_ARG_WEIGHTS, m[2]}, {DNNL_ARG_DST, m[3]}};
    int na = 3;
    if (q->has_zp) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, m[4]};
    if (m[5]) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[5]};
    if (dq_exec(q->prim, w->stream, na, a) < 0) {
      rc = byoc_fail("dnnl: int8 block %d failed", i);
      break;
    }
    const int32_t *acc = (const int32_t *)((char *)w->arena + s->acc_off);
    if (q->out_reorder == NULL) {
      dq_requant(q, acc, y, s->nthreads, s->level);
      continue;
    }
    dq_requant(q, acc, (char *)w->arena + s->out_off, s->nthreads, s->level);
    dnnl_memory_set_data_handle(m[8], y);
    dnnl_exec_arg_t oa[2] = {{DNNL_ARG_FROM, m[7]}, {DNNL_ARG_TO, m[8]}};
    if (dq_exec(q->out_reorder, w->stream, 2, oa) < 0) {
      rc = byoc_fail("dnnl: the output reorder of int8 block %d failed", i);
      break;
    }
  }
  omp_set_num_threads(s->nthreads);
  pthread_mutex_lock(&s->lock);
  w->next = s->pool;
  s->pool = w;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* ---- the engine interface: int8 graphs here, the others to DNNL_ENGINE ---------------- */

static void *dq_engine_init(const byoc_graph *graph, int32_t num_threads, size_t *workspace_bytes) {
  int has_q = 0;
  for (int32_t i = 0; i < graph->num_nodes; i++) has_q |= dq_is_qnode(&graph->nodes[i]);
  dq_engine *e = calloc(1, sizeof *e);
  if (e == NULL) {
    byoc_fail("dnnl: out of memory");
    return NULL;
  }
  e->graph = graph;
  e->is_q = has_q;
  *workspace_bytes = 0;
  if (!has_q) e->f32 = DNNL_ENGINE.init(graph, num_threads, workspace_bytes);
  else e->q = dq_plan(graph, default_threads(num_threads));
  if (e->f32 == NULL && e->q == NULL) {
    free(e);
    return NULL;
  }
  return e;
}

static int32_t dq_engine_run(void *state, DLTensor *const *inputs, DLTensor *const *outputs,
                             void *workspace) {
  dq_engine *e = state;
  if (!e->is_q) return DNNL_ENGINE.run(e->f32, inputs, outputs, workspace);
  const byoc_graph *g = e->graph;
  void *in[DQ_MAX_IO], *out[DQ_MAX_IO];
  if (g->num_inputs > DQ_MAX_IO || g->num_outputs > DQ_MAX_IO)
    return byoc_fail("dnnl: more than %d inputs or outputs", DQ_MAX_IO);
  for (int32_t i = 0; i < g->num_inputs; i++) in[i] = (char *)inputs[i]->data + inputs[i]->byte_offset;
  for (int32_t i = 0; i < g->num_outputs; i++)
    out[i] = outputs[i] ? (char *)outputs[i]->data + outputs[i]->byte_offset : NULL;
  return dq_run(e->q, in, out);
}

static int32_t dq_engine_set_num_threads(void *state, int32_t n) {
  dq_engine *e = state;
  if (!e->is_q) return DNNL_ENGINE.set_num_threads(e->f32, n);
  if (n < 1) return byoc_fail("dnnl: set_num_threads(%d): need at least 1", (int)n);
  if (e->q->nthreads == n) return 0;
  dq_state *q = dq_plan(e->graph, n);
  if (q == NULL) return -1;
  dq_destroy_state(e->q);
  e->q = q;
  return 0;
}

static void dq_engine_destroy(void *state) {
  dq_engine *e = state;
  if (e == NULL) return;
  if (e->is_q) dq_destroy_state(e->q);
  else DNNL_ENGINE.destroy(e->f32);
  free(e);
}

static const byoc_graph_engine DNNL_INT8_ENGINE = {
    BYOC_GRAPH_ENGINE_ABI,      "dnnl",           dq_engine_init, dq_engine_run,
    dq_engine_set_num_threads, dq_engine_destroy,
};

const byoc_graph_engine *byoc_graph_engine_def(void) { return &DNNL_INT8_ENGINE; }
