/* The oneDNN engine's plan and executor (oneDNN 3.x C primitive API).
 *
 * dn_init walks the partition's nodes once, in order, and builds a list of steps
 * (a primitive plus the buffers of its arguments):
 *
 *  - anchors (conv2d, conv2d_transpose, dense, matmul) absorb the chain after them
 *    while each value in it has one use: per-channel affine steps (bias_add, an add
 *    or multiply by a per-channel constant) are folded into the weights and the bias
 *    (constants, folded once here; a batch_norm after a conv was already folded into
 *    its constants at build time by the fold-batch-norm pass, and one that reaches the
 *    engine runs as a batch normalization primitive); then elementwise ops
 *    become eltwise post-ops and binary ops with a constant or an already computed
 *    operand become binary post-ops (an add of a residual computed earlier, used
 *    only there, becomes a sum post-op written in place over the residual);
 *  - activations take format_tag any: oneDNN picks blocked layouts; a reorder is
 *    added only where a consumer wants another layout than its producer wrote, at
 *    the partition's inputs and outputs (plain row-major), and once here for weights;
 *  - every intermediate buffer has a fixed offset in one arena; primitives run with
 *    user-managed scratchpads.
 *
 * dn_run takes a workspace (arena, scratchpad, stream and memory objects) from a
 * pool under a lock, or makes one, runs the steps on it and gives it back: calls
 * from several threads each use their own. Primitives are shared (oneDNN allows
 * concurrent execution of one primitive with distinct memory objects).
 *
 * The engine is one translation unit in parts (byoc/targets/dnnl/target.py lists them in
 * order): this file (the graph the planner reads, slots, steps, attribute and shape
 * helpers), dnnl_chain.c (the chains anchors absorb), dnnl_anchor.c (anchors),
 * dnnl_ops.c (every other op), dnnl_run.c (dn_init, dn_run, the engine interface) and
 * dnnl_int8.c (int8 blocks; it defines byoc_graph_engine_def).
 */
#include "byoc_graph_engine.h"


#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>


/* ---------------------------------------------------------------------------------- */
/* The graph as the planner reads it (filled from byoc_graph by the adapter below)     */
/* ---------------------------------------------------------------------------------- */

#define DN_MAX_RANK 8

typedef struct dn_entry {
  int is_f32;       /* 0: an element type the engine does not compute in (init fails) */
  int ndim;
  int64_t shape[DN_MAX_RANK];
  const void *data; /* constant data (dense, row-major), or NULL */
} dn_entry;

typedef struct dn_node {
  const char *op;   /* "nn.conv2d", ... */
  int nin;
  const int32_t *in;  /* entry ids */
  int nout;
  const int32_t *out;
} dn_node;

typedef struct dn_graph {
  int n_entries;
  const dn_entry *entries;
  int n_nodes;
  const dn_node *nodes;   /* in topological order */
  int n_inputs;
  const int32_t *inputs;  /* entry ids of the partition inputs, in call order */
  int n_outputs;
  const int32_t *outputs; /* entry ids of the partition outputs, in call order; -1: one the
                             engine does not write (an input, a constant, a repeat) */
  /* Attributes of node `node`: the integers (up to `max`) of `name`; returns how
     many there are, or -1 if the node has no such attribute. */
  int (*attr_ints)(const void *ctx, int node, const char *name, int64_t *out, int max);
  /* A float attribute; returns 0, or -1 if absent. */
  int (*attr_float)(const void *ctx, int node, const char *name, double *out);
  const void *ctx;
} dn_graph;

typedef struct dn_state dn_state;

/* Build the plan (primitives, memory descriptors, weight reorders, buffer
   offsets). NULL on failure with a message in err. */
static dn_state *dn_init(const dn_graph *g, int num_threads, char *err, size_t errlen);
/* Run once: inputs and outputs are dense row-major f32 buffers of the partition's
   input and output shapes. Re-entrant: each call takes a workspace of its own. 0 or
   -1 with a message. */
static int dn_run(dn_state *s, void *const *inputs, void *const *outputs, char *err, size_t errlen);
static void dn_destroy(dn_state *s);
/* A line describing the plan (primitives and their implementations) for tests/docs;
   written into buf, returns its length. */
static size_t dn_describe(const dn_state *s, char *buf, size_t len);

#define DN_MAX_ARGS 32
#define DN_ALIGN 64

enum { LOC_ARENA, LOC_CONST, LOC_INPUT, LOC_OUTPUT };

typedef struct slot {
  dnnl_memory_desc_t md; /* owned */
  int root;              /* slot holding the location (itself unless an alias) */
  int kind;              /* LOC_*, meaningful on roots */
  size_t offset;         /* LOC_ARENA */
  void *cptr;            /* LOC_CONST */
  int index;             /* LOC_INPUT / LOC_OUTPUT */
  size_t size;
} slot;

/* A guard is a step without a primitive: a pass in C, after the primitive before it, that
   gives the result the reference's NaN and infinities where oneDNN's kernels lose them
   (their max/min instructions return the non-NaN operand). See dnnl_guard.c. */
enum { GUARD_NONE, GUARD_UNARY, GUARD_BINARY, GUARD_SOFTMAX, GUARD_MAX_POOL };

typedef struct step {
  dnnl_primitive_t prim;
  int nargs;
  int arg[DN_MAX_ARGS];
  int slot[DN_MAX_ARGS];
  dnnl_memory_desc_t scratch_md; /* owned, or NULL */
  int nthreads;                 /* the OpenMP threads it was created with and runs with */
  char what[96];
  int guard;                    /* GUARD_*; prim is NULL for a guard */
  int64_t geo[16];              /* the guard's geometry (rows, windows) */
  dnnl_primitive_t reorder[3];  /* guard: source and result to plain, plain result back */
} step;

typedef struct ws {
  struct ws *next;
  void *arena;
  void *scratch;
  dnnl_stream_t stream;
  dnnl_memory_t *mem;     /* per slot */
  dnnl_memory_t *scratch_mem; /* per step (NULL when it has none) */
} ws;

struct dn_state {
  dnnl_engine_t eng;
  volatile int nthreads;
  slot *slots;
  int nslots, capslots;
  step *steps;
  int nsteps, capsteps;
  size_t arena_size, scratch_size;
  void **owned;
  int nowned, capowned;
  int n_inputs, n_outputs;
  pthread_mutex_t lock;
  ws *pool;
};

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct planner {
  dn_state *s;
  const dn_graph *g;
  int *entry_slot; /* entry -> slot of its value (-1: not computed yet) */
  int *uses;       /* entry -> number of node operands + graph outputs reading it */
  int *consumer;   /* entry -> a node reading it */
  int *is_output;
  int *done;       /* node -> handled (absorbed into an anchor) */
  int *produced_at; /* entry -> index of the node that produced it (-1 for inputs/constants) */
  char *err;
  size_t errlen;
} planner;

static int fail(planner *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, p->errlen, fmt, ap);
  va_end(ap);
  return -1;
}

#define DN_CHECK(p, call, what)                                                            \
  do {                                                                                     \
    dnnl_status_t st_ = (call);                                                            \
    if (st_ != dnnl_success) return fail((p), "oneDNN: %s failed (status %d)", (what), (int)st_); \
  } while (0)

/* ---------------------------------------------------------------------------------- */
/* Memory descriptors and slots                                                       */
/* ---------------------------------------------------------------------------------- */

static const dnnl_format_tag_t PLAIN_TAGS[] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd,
                                               dnnl_abcde, dnnl_abcdef, dnnl_abcdefg,
                                               dnnl_abcdefgh};

static dnnl_memory_desc_t md_plain(int ndim, const int64_t *shape) {
  dnnl_dims_t dims;
  int n = ndim == 0 ? 1 : ndim;
  for (int i = 0; i < n; i++) dims[i] = ndim == 0 ? 1 : shape[i];
  dnnl_memory_desc_t md = NULL;
  if (dnnl_memory_desc_create_with_tag(&md, n, dims, dnnl_f32, PLAIN_TAGS[n]) != dnnl_success)
    return NULL;
  return md;
}

static dnnl_memory_desc_t md_any(int ndim, const int64_t *dims64) {
  dnnl_dims_t dims;
  for (int i = 0; i < ndim; i++) dims[i] = dims64[i];
  dnnl_memory_desc_t md = NULL;
  if (dnnl_memory_desc_create_with_tag(&md, ndim, dims, dnnl_f32, dnnl_format_tag_any) !=
      dnnl_success)
    return NULL;
  return md;
}

static dnnl_memory_desc_t md_strided(int ndim, const int64_t *dims64, const int64_t *strides64) {
  dnnl_dims_t dims, strides;
  for (int i = 0; i < ndim; i++) {
    dims[i] = dims64[i];
    strides[i] = strides64[i];
  }
  dnnl_memory_desc_t md = NULL;
  if (dnnl_memory_desc_create_with_strides(&md, ndim, dims, dnnl_f32, strides) != dnnl_success)
    return NULL;
  return md;
}

static dnnl_memory_desc_t md_clone(const_dnnl_memory_desc_t md) {
  dnnl_memory_desc_t out = NULL;
  if (dnnl_memory_desc_clone(&out, md) != dnnl_success) return NULL;
  return out;
}

static int md_equal(const_dnnl_memory_desc_t a, const_dnnl_memory_desc_t b) {
  return dnnl_memory_desc_equal(a, b);
}

static void *owned_alloc(planner *p, size_t bytes) {
  dn_state *s = p->s;
  if (s->nowned == s->capowned) {
    int cap = s->capowned ? 2 * s->capowned : 16;
    void **o = realloc(s->owned, (size_t)cap * sizeof(void *));
    if (!o) return NULL;
    s->owned = o;
    s->capowned = cap;
  }
  void *buf = NULL;
  size_t rounded = (bytes + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN;
  if ((buf = aligned_alloc(DN_ALIGN, rounded ? rounded : DN_ALIGN)) == NULL) return NULL;
  memset(buf, 0, rounded ? rounded : DN_ALIGN);
  s->owned[s->nowned++] = buf;
  return buf;
}

/* A new slot owning `md`; LOC_ARENA slots get the next offset of the arena. */
static int new_slot(planner *p, dnnl_memory_desc_t md, int kind) {
  dn_state *s = p->s;
  if (md == NULL) return fail(p, "oneDNN: cannot create a memory descriptor");
  if (s->nslots == s->capslots) {
    int cap = s->capslots ? 2 * s->capslots : 32;
    slot *n = realloc(s->slots, (size_t)cap * sizeof(slot));
    if (!n) return fail(p, "out of memory");
    s->slots = n;
    s->capslots = cap;
  }
  int id = s->nslots++;
  slot *sl = &s->slots[id];
  memset(sl, 0, sizeof(*sl));
  sl->md = md;
  sl->root = id;
  sl->kind = kind;
  sl->size = dnnl_memory_desc_get_size(md);
  if (kind == LOC_ARENA) {
    s->arena_size = (s->arena_size + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN;
    sl->offset = s->arena_size;
    s->arena_size += sl->size;
  }
  return id;
}

/* A slot viewing the buffer of `base` through another descriptor (a reshape). */
static int alias_slot(planner *p, int base, dnnl_memory_desc_t md) {
  int id = new_slot(p, md, LOC_CONST);
  if (id < 0) return id;
  p->s->slots[id].root = p->s->slots[base].root;
  return id;
}

/* A slot holding a copy of constant entry `e` (plain row-major). */
static int const_slot(planner *p, int e) {
  const dn_entry *en = &p->g->entries[e];
  int id = new_slot(p, md_plain(en->ndim, en->shape), LOC_CONST);
  if (id < 0) return id;
  slot *sl = &p->s->slots[id];
  void *buf = owned_alloc(p, sl->size);
  if (!buf) return fail(p, "out of memory");
  memcpy(buf, en->data, sl->size);
  p->s->slots[id].cptr = buf;
  return id;
}

static int is_const(planner *p, int e) { return p->g->entries[e].data != NULL; }

/* The slot of entry e's value: computed, a partition input, or a constant (copied once). */
static int value_slot(planner *p, int e) {
  if (p->entry_slot[e] >= 0) return p->entry_slot[e];
  if (is_const(p, e)) {
    int id = const_slot(p, e);
    if (id >= 0) p->entry_slot[e] = id;
    return id;
  }
  return fail(p, "entry %d is read before it is computed", e);
}

/* ---------------------------------------------------------------------------------- */
/* Steps                                                                               */
/* ---------------------------------------------------------------------------------- */

static dnnl_primitive_attr_t new_attr(void) {
  dnnl_primitive_attr_t attr = NULL;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  return attr;
}


/* Whether oneDNN picked its reference (slow, portable) implementation for `pd`. */
static int is_ref_impl(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl != NULL && strncmp(impl, "ref", 3) == 0;
}

/* The work each thread must get for a primitive to split over the engine's threads
   ("Threads per primitive" in dnnl_run.c says why). */
#define DN_MAC_GRAIN (1 << 23)  /* multiply-adds a thread (convolutions, dense, matmul) */
#define DN_MOVE_GRAIN (1 << 20) /* elements read and written a thread (every other op) */

/* Threads for `work` at `grain` a thread: at most `n`, 1 below two grains. */
static int threads_for(int n, int64_t work, int64_t grain) {
  int64_t most = work / grain;
  if (n <= 1 || most < 2) return 1;
  return most < n ? (int)most : n;
}

/* Make a primitive of `pd` (which it consumes) and append the step. */
static int add_step(planner *p, dnnl_primitive_desc_t pd, const char *what, int nargs,
                    const int *args, const int *slots) {
  dn_state *s = p->s;
  if (s->nsteps == s->capsteps) {
    int cap = s->capsteps ? 2 * s->capsteps : 32;
    step *n = realloc(s->steps, (size_t)cap * sizeof(step));
    if (!n) {
      dnnl_primitive_desc_destroy(pd);
      return fail(p, "out of memory");
    }
    s->steps = n;
    s->capsteps = cap;
  }
  step *st = &s->steps[s->nsteps];
  memset(st, 0, sizeof(*st));
  const char *impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  snprintf(st->what, sizeof st->what, "%s:%s", what, impl ? impl : "?");
  st->nthreads = omp_get_max_threads(); /* the count the planner set for this node */
  const_dnnl_memory_desc_t smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (smd != NULL && dnnl_memory_desc_get_size(smd) > 0) {
    st->scratch_md = md_clone(smd);
    size_t sz = dnnl_memory_desc_get_size(smd);
    if (sz > s->scratch_size) s->scratch_size = sz;
  }
  dnnl_status_t rc = dnnl_primitive_create(&st->prim, pd);
  dnnl_primitive_desc_destroy(pd);
  if (rc != dnnl_success) {
    if (st->scratch_md) dnnl_memory_desc_destroy(st->scratch_md);
    return fail(p, "oneDNN: cannot create the %s primitive (status %d)", what, (int)rc);
  }
  if (nargs > DN_MAX_ARGS) return fail(p, "too many arguments");
  st->nargs = nargs;
  for (int i = 0; i < nargs; i++) {
    st->arg[i] = args[i];
    st->slot[i] = slots[i];
  }
  s->nsteps++;
  return 0;
}

/* The slot of entry e's value in layout `want` (a reorder step if it is elsewhere). */
static int slot_as(planner *p, int e, const_dnnl_memory_desc_t want) {
  int have = value_slot(p, e);
  if (have < 0) return have;
  if (md_equal(p->s->slots[have].md, want)) return have;
  int to = new_slot(p, md_clone(want), LOC_ARENA);
  if (to < 0) return to;
  /* a reorder has its own count (the node planning it may split and it may not) */
  int node_count = omp_get_max_threads();
  int64_t moved = 2 * (int64_t)(p->s->slots[to].size / sizeof(float));
  omp_set_num_threads(threads_for(p->s->nthreads, moved, DN_MOVE_GRAIN));
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, p->s->slots[have].md, p->s->eng,
                                                        want, p->s->eng, NULL);
  int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  int slots[2] = {have, to};
  int rc = st == dnnl_success ? add_step(p, pd, "reorder", 2, args, slots)
                              : fail(p, "oneDNN: reorder failed (status %d)", (int)st);
  omp_set_num_threads(node_count);
  return rc < 0 ? -1 : to;
}

/* Entry e's value in plain row-major layout. */
static int slot_plain(planner *p, int e) {
  const dn_entry *en = &p->g->entries[e];
  dnnl_memory_desc_t plain = md_plain(en->ndim, en->shape);
  int id = slot_as(p, e, plain);
  dnnl_memory_desc_destroy(plain);
  return id;
}

/* Entry e's value for a non-anchor primitive (pooling, eltwise, concat, ...): in the layout
   its producer wrote (blocked or channels-last: oneDNN has jit kernels for both). */
static int slot_for_simple(planner *p, int e) { return value_slot(p, e); }

/* Entry e's value (plain) viewed with `ndim` dims `dims` (same element count). */
static int slot_reshaped(planner *p, int e, int ndim, const int64_t *dims) {
  int base = slot_plain(p, e);
  if (base < 0) return base;
  return alias_slot(p, base, md_plain(ndim, dims));
}

/* Run a reorder once now, from constant host data (plain `src`) into a new owned buffer
   of layout `dst`; returns the const slot. */
static int reorder_const(planner *p, const_dnnl_memory_desc_t src, const void *data,
                         const_dnnl_memory_desc_t dst) {
  dn_state *s = p->s;
  int id = new_slot(p, md_clone(dst), LOC_CONST);
  if (id < 0) return id;
  void *buf = owned_alloc(p, s->slots[id].size);
  if (!buf) return fail(p, "out of memory");
  s->slots[id].cptr = buf;
  dnnl_memory_t m_src = NULL, m_dst = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_stream_t stream = NULL;
  int rc = -1;
  if (dnnl_memory_create(&m_src, src, s->eng, (void *)data) != dnnl_success) goto out;
  if (dnnl_memory_create(&m_dst, dst, s->eng, buf) != dnnl_success) goto out;
  if (dnnl_reorder_primitive_desc_create(&pd, src, s->eng, dst, s->eng, NULL) != dnnl_success)
    goto out;
  if (dnnl_primitive_create(&prim, pd) != dnnl_success) goto out;
  if (dnnl_stream_create(&stream, s->eng, dnnl_stream_default_flags) != dnnl_success) goto out;
  dnnl_exec_arg_t ea[2] = {{DNNL_ARG_FROM, m_src}, {DNNL_ARG_TO, m_dst}};
  if (dnnl_primitive_execute(prim, stream, 2, ea) != dnnl_success) goto out;
  if (dnnl_stream_wait(stream) != dnnl_success) goto out;
  rc = id;
out:
  if (stream) dnnl_stream_destroy(stream);
  if (prim) dnnl_primitive_destroy(prim);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (m_src) dnnl_memory_destroy(m_src);
  if (m_dst) dnnl_memory_destroy(m_dst);
  if (rc < 0) return fail(p, "oneDNN: the reorder of a constant failed");
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Attributes                                                                          */
/* ---------------------------------------------------------------------------------- */

static int ints_attr(planner *p, int node, const char *name, int64_t *out, int n,
                     const int64_t *dflt) {
  int got = p->g->attr_ints(p->g->ctx, node, name, out, n);
  if (got < 0) {
    if (!dflt) return fail(p, "node %d (%s): no attribute '%s'", node, p->g->nodes[node].op, name);
    for (int i = 0; i < n; i++) out[i] = dflt[i];
    return 0;
  }
  if (got != n)
    return fail(p, "node %d (%s): attribute '%s' has %d values, expected %d", node,
                p->g->nodes[node].op, name, got, n);
  return 0;
}

static int64_t int_attr(planner *p, int node, const char *name, int64_t dflt) {
  int64_t v = dflt;
  if (p->g->attr_ints(p->g->ctx, node, name, &v, 1) < 1) return dflt;
  return v;
}

static double float_attr(planner *p, int node, const char *name, double dflt) {
  double v = dflt;
  if (p->g->attr_float(p->g->ctx, node, name, &v) < 0) return dflt;
  return v;
}

static int op_is(const dn_node *n, const char *name) { return strcmp(n->op, name) == 0; }

/* ---------------------------------------------------------------------------------- */
/* Elementwise ops as oneDNN algorithms                                               */
/* ---------------------------------------------------------------------------------- */

/* The eltwise algorithm of a unary node (and alpha, beta), or 0 if it has none. */
static int eltwise_of(planner *p, int node, dnnl_alg_kind_t *alg, float *a, float *b) {
  const dn_node *n = &p->g->nodes[node];
  *a = 0.f;
  *b = 0.f;
  if (op_is(n, "nn.relu")) *alg = dnnl_eltwise_relu;
  else if (op_is(n, "nn.leaky_relu")) {
    *alg = dnnl_eltwise_relu;
    *a = (float)float_attr(p, node, "alpha", 0.01);
  } else if (op_is(n, "nn.clip")) {
    *alg = dnnl_eltwise_clip_v2;
    *a = (float)float_attr(p, node, "a_min", -INFINITY);
    *b = (float)float_attr(p, node, "a_max", INFINITY);
  } else if (op_is(n, "nn.sigmoid")) *alg = dnnl_eltwise_logistic;
  else if (op_is(n, "nn.tanh")) *alg = dnnl_eltwise_tanh;
  else if (op_is(n, "nn.exp")) *alg = dnnl_eltwise_exp;
  else if (op_is(n, "nn.log")) *alg = dnnl_eltwise_log;
  else if (op_is(n, "nn.sqrt")) *alg = dnnl_eltwise_sqrt;
  else if (op_is(n, "nn.abs")) *alg = dnnl_eltwise_abs;
  else if (op_is(n, "nn.negative")) {
    *alg = dnnl_eltwise_linear;
    *a = -1.f;
  } else if (op_is(n, "nn.reciprocal")) {
    *alg = dnnl_eltwise_pow;
    *a = 1.f;
    *b = -1.f;
  } else if (op_is(n, "nn.hard_swish")) {
    *alg = dnnl_eltwise_hardswish;
    *a = 1.f / 6.f;
    *b = 0.5f;
  } else if (op_is(n, "nn.hard_sigmoid")) {
    *alg = dnnl_eltwise_hardsigmoid;
    *a = (float)float_attr(p, node, "alpha", 0.2);
    *b = (float)float_attr(p, node, "beta", 0.5);
  } else if (op_is(n, "nn.gelu") || op_is(n, "dnnl.gelu")) *alg = dnnl_eltwise_gelu_erf;
  else return 0;
  return 1;
}

static int binary_of(const dn_node *n, dnnl_alg_kind_t *alg, int *commutative) {
  *commutative = 0;
  if (op_is(n, "nn.add")) {
    *alg = dnnl_binary_add;
    *commutative = 1;
  } else if (op_is(n, "nn.multiply")) {
    *alg = dnnl_binary_mul;
    *commutative = 1;
  } else if (op_is(n, "nn.maximum")) {
    *alg = dnnl_binary_max;
    *commutative = 1;
  } else if (op_is(n, "nn.minimum")) {
    *alg = dnnl_binary_min;
    *commutative = 1;
  } else if (op_is(n, "nn.subtract")) *alg = dnnl_binary_sub;
  else if (op_is(n, "nn.divide")) *alg = dnnl_binary_div;
  else return 0;
  return 1;
}

/* ---------------------------------------------------------------------------------- */
/* Shapes                                                                              */
/* ---------------------------------------------------------------------------------- */

static int64_t numel(const dn_entry *e) {
  int64_t n = 1;
  for (int i = 0; i < e->ndim; i++) n *= e->shape[i];
  return n;
}

static int same_shape(const dn_entry *a, const dn_entry *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

/* `e`'s shape padded with leading 1s to rank `rank` (numpy broadcasting). */
static void padded_shape(const dn_entry *e, int rank, int64_t *out) {
  int lead = rank - e->ndim;
  for (int i = 0; i < rank; i++) out[i] = i < lead ? 1 : e->shape[i - lead];
}

/* Whether `e` broadcasts to `full` (rank r) as one value per `axis` (or one value); the
   per-channel values are then e's data in order. */
static int per_channel(const dn_entry *e, int rank, int axis, int64_t channels) {
  if (e->ndim > rank) return 0;
  int64_t sh[DN_MAX_RANK];
  padded_shape(e, rank, sh);
  for (int i = 0; i < rank; i++)
    if (i != axis && sh[i] != 1) return 0;
  return sh[axis] == 1 || sh[axis] == channels;
}

static int broadcasts_to(const dn_entry *e, const dn_entry *full) {
  if (e->ndim > full->ndim) return 0;
  int64_t sh[DN_MAX_RANK];
  padded_shape(e, full->ndim, sh);
  for (int i = 0; i < full->ndim; i++)
    if (sh[i] != 1 && sh[i] != full->shape[i]) return 0;
  return 1;
}
