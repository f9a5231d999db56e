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

typedef struct step {
  dnnl_primitive_t prim;
  int nargs;
  int arg[DN_MAX_ARGS];
  int slot[DN_MAX_ARGS];
  dnnl_memory_desc_t scratch_md; /* owned, or NULL */
  char what[96];
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
  dnnl_primitive_desc_t pd = NULL;
  DN_CHECK(p, dnnl_reorder_primitive_desc_create(&pd, p->s->slots[have].md, p->s->eng, want,
                                                 p->s->eng, NULL),
           "reorder");
  int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  int slots[2] = {have, to};
  if (add_step(p, pd, "reorder", 2, args, slots) < 0) return -1;
  return to;
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

/* ---------------------------------------------------------------------------------- */
/* Anchors: conv2d, conv2d_transpose, dense, matmul with their fused chain             */
/* ---------------------------------------------------------------------------------- */

enum { PO_ELTWISE, PO_BINARY, PO_SUM };

typedef struct postop {
  int kind;
  dnnl_alg_kind_t alg;
  float a, b;
  int src1;       /* entry of the binary operand / residual */
  int node;       /* the node it comes from */
  int first;      /* index in chain.nodes of its first node */
} postop;

#define DN_MAX_CHAIN 16

typedef struct chain {
  int nodes[DN_MAX_CHAIN]; /* absorbed nodes, in order */
  int nnodes;
  int n_affine;            /* the first n_affine of them are folded into weights/bias */
  postop po[DN_MAX_CHAIN];
  int npo;
  int result;              /* entry holding the chain's result */
} chain;

static int sole_consumer(planner *p, int e) {
  if (p->uses[e] != 1 || p->is_output[e]) return -1;
  return p->consumer[e];
}


/* The scalar value of constant entry e (numel 1), or NAN. */
static double scalar_const(planner *p, int e) {
  const dn_entry *en = &p->g->entries[e];
  if (en->data == NULL || numel(en) != 1) return NAN;
  return ((const float *)en->data)[0];
}

static int near(double a, double b) { return fabs(a - b) <= 1e-3 * fabs(b); }

/* The erf form of gelu over entry x, as the ONNX exporters write it:
   t = erf(x / sqrt(2)) + 1;  y = (x * t) * 0.5. Fills its five nodes (in order) and
   returns y's entry, or -1 if x's readers are not exactly that. */
static int match_gelu(planner *p, int x, int nodes[5]) {
  const dn_graph *g = p->g;
  if (p->uses[x] != 2 || p->is_output[x]) return -1;
  int div = -1, mul1 = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const dn_node *n = &g->nodes[i];
    if (p->done[i] || n->nin != 2 || n->nout != 1) continue;
    if (op_is(n, "nn.divide") && n->in[0] == x && n->in[1] != x) div = i;
    else if (op_is(n, "nn.multiply") && (n->in[0] == x) != (n->in[1] == x)) mul1 = i;
  }
  if (div < 0 || mul1 < 0 || !near(scalar_const(p, g->nodes[div].in[1]), sqrt(2.0))) return -1;
  int erf = sole_consumer(p, g->nodes[div].out[0]);
  if (erf < 0 || !op_is(&g->nodes[erf], "nn.erf")) return -1;
  int add = sole_consumer(p, g->nodes[erf].out[0]);
  if (add < 0 || !op_is(&g->nodes[add], "nn.add") || g->nodes[add].nin != 2) return -1;
  int e1 = g->nodes[erf].out[0];
  int one = g->nodes[add].in[0] == e1 ? g->nodes[add].in[1] : g->nodes[add].in[0];
  if (!near(scalar_const(p, one), 1.0)) return -1;
  int t = g->nodes[add].out[0];
  const dn_node *m1 = &g->nodes[mul1];
  if ((m1->in[0] == x ? m1->in[1] : m1->in[0]) != t || sole_consumer(p, t) != mul1) return -1;
  int mul2 = sole_consumer(p, m1->out[0]);
  if (mul2 < 0 || !op_is(&g->nodes[mul2], "nn.multiply") || g->nodes[mul2].nin != 2) return -1;
  const dn_node *m2 = &g->nodes[mul2];
  int half = m2->in[0] == m1->out[0] ? m2->in[1] : m2->in[0];
  if (!near(scalar_const(p, half), 0.5)) return -1;
  if (!same_shape(&g->entries[m2->out[0]], &g->entries[x])) return -1;
  nodes[0] = div;
  nodes[1] = erf;
  nodes[2] = add;
  nodes[3] = mul1;
  nodes[4] = mul2;
  return m2->out[0];
}

/* Collect the chain after anchor `a` whose output has `channels` channels on `axis`. */
static void collect_chain(planner *p, int a, int axis, int64_t channels, int affine_ok,
                          int flat2d, chain *c) {
  const dn_graph *g = p->g;
  memset(c, 0, sizeof(*c));
  int cur = g->nodes[a].out[0];
  const dn_entry *out = &g->entries[cur];
  int rank = out->ndim;
  c->result = cur;
  while (c->nnodes < DN_MAX_CHAIN) {
    int gelu_nodes[5];
    int gelu_out = c->nnodes + 5 <= DN_MAX_CHAIN ? match_gelu(p, cur, gelu_nodes) : -1;
    if (gelu_out >= 0) {
      postop *po = &c->po[c->npo++];
      po->kind = PO_ELTWISE;
      po->alg = dnnl_eltwise_gelu_erf;
      po->a = po->b = 0.f;
      po->node = gelu_nodes[0];
      po->first = c->nnodes;
      for (int k = 0; k < 5; k++) c->nodes[c->nnodes++] = gelu_nodes[k];
      cur = gelu_out;
      c->result = cur;
      continue;
    }
    int nid = sole_consumer(p, cur);
    if (nid < 0 || p->done[nid]) break;
    const dn_node *n = &g->nodes[nid];
    if (n->nout != 1 || g->entries[n->out[0]].is_f32 == 0) break;
    if (!same_shape(&g->entries[n->out[0]], out)) break;
    int affine = 0;
    if (affine_ok && c->npo == 0) {
      if (op_is(n, "nn.bias_add") && n->in[0] == cur && is_const(p, n->in[1])) {
        int ax = (int)int_attr(p, nid, "axis", 1);
        if (ax < 0) ax += rank;
        affine = ax == axis;
      } else if ((op_is(n, "nn.add") || op_is(n, "nn.multiply")) && n->nin == 2) {
        int other = n->in[0] == cur ? n->in[1] : n->in[0];
        affine = other != cur && is_const(p, other) &&
                 per_channel(&g->entries[other], rank, axis, channels);
      }
    }
    if (affine && c->n_affine == c->nnodes) {
      c->nodes[c->nnodes++] = nid;
      c->n_affine++;
      cur = n->out[0];
      c->result = cur;
      continue;
    }
    dnnl_alg_kind_t alg;
    float fa, fb;
    int comm;
    if (n->nin == 1 && eltwise_of(p, nid, &alg, &fa, &fb)) {
      postop *po = &c->po[c->npo];
      po->first = c->nnodes;
      c->npo++;
      po->kind = PO_ELTWISE;
      po->alg = alg;
      po->a = fa;
      po->b = fb;
      po->node = nid;
    } else if (n->nin == 2 && binary_of(n, &alg, &comm)) {
      int other;
      if (n->in[0] == cur && n->in[1] != cur) other = n->in[1];
      else if (n->in[1] == cur && n->in[0] != cur && comm) other = n->in[0];
      else break;
      const dn_entry *oe = &g->entries[other];
      if (!broadcasts_to(oe, out)) break;
      /* computed as 2-D (dense over rank > 2): one value, one per channel, or all of them */
      if (flat2d && numel(oe) != 1 && numel(oe) != channels && numel(oe) != numel(out)) break;
      /* available before the anchor runs: a constant, an input, or computed earlier */
      if (!is_const(p, other) && p->entry_slot[other] < 0) break;
      postop *po = &c->po[c->npo];
      po->first = c->nnodes;
      c->npo++;
      po->kind = PO_BINARY;
      po->alg = alg;
      po->src1 = other;
      po->node = nid;
      if (alg == dnnl_binary_add && !is_const(p, other) && same_shape(oe, out) &&
          p->uses[other] == 1 && !p->is_output[other] &&
          p->s->slots[p->entry_slot[other]].root == p->entry_slot[other] &&
          p->s->slots[p->entry_slot[other]].kind == LOC_ARENA)
        po->kind = PO_SUM; /* written in place over the residual, used only here */
    } else break;
    c->nodes[c->nnodes++] = nid;
    cur = n->out[0];
    c->result = cur;
  }
}

/* Per-channel y = x * scale + shift of the affine part of a chain (scale NULL: 1). */
static int fold_affine(planner *p, const chain *c, int64_t channels, float **scale_out,
                       float *shift) {
  const dn_graph *g = p->g;
  float *scale = NULL;
  for (int k = 0; k < c->n_affine; k++) {
    int nid = c->nodes[k];
    const dn_node *n = &g->nodes[nid];
    if (op_is(n, "nn.bias_add")) {
      const float *b = g->entries[n->in[1]].data;
      for (int64_t i = 0; i < channels; i++) shift[i] += b[i];
    } else {
      /* the constant operand (the chain's value is computed, never a constant) */
      int other = is_const(p, n->in[1]) ? n->in[1] : n->in[0];
      const dn_entry *oe = &g->entries[other];
      const float *v = oe->data;
      int64_t cnt = numel(oe);
      if (op_is(n, "nn.add")) {
        for (int64_t i = 0; i < channels; i++) shift[i] += v[cnt == 1 ? 0 : i];
      } else {
        if (!scale) {
          scale = malloc((size_t)channels * sizeof(float));
          if (!scale) return fail(p, "out of memory");
          for (int64_t i = 0; i < channels; i++) scale[i] = 1.f;
        }
        for (int64_t i = 0; i < channels; i++) {
          scale[i] *= v[cnt == 1 ? 0 : i];
          shift[i] *= v[cnt == 1 ? 0 : i];
        }
      }
    }
  }
  *scale_out = scale;
  return 0;
}

/* Post-ops of a chain (its first `npo` post-ops) into an attr; binary operands' mds are
   their current slots' (reshaped to `rank2` dims when the anchor computes in 2-D). */
static dnnl_primitive_attr_t chain_attr(planner *p, const chain *c, int npo, int dst_rank,
                                        const int64_t *dst_dims, const_dnnl_memory_desc_t want,
                                        int *src1_slots) {
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_post_ops_t ops = NULL;
  if (!attr || dnnl_post_ops_create(&ops) != dnnl_success) return attr;
  for (int i = 0; i < npo; i++) {
    const postop *po = &c->po[i];
    src1_slots[i] = -1;
    if (po->kind == PO_ELTWISE) {
      dnnl_post_ops_append_eltwise(ops, po->alg, po->a, po->b);
    } else if (po->kind == PO_SUM) {
      /* in place over the residual, in the layout the primitive writes */
      int sid = want ? slot_as(p, po->src1, want) : value_slot(p, po->src1);
      if (sid < 0) {
        dnnl_post_ops_destroy(ops);
        dnnl_primitive_attr_destroy(attr);
        return NULL;
      }
      src1_slots[i] = sid;
      dnnl_post_ops_append_sum(ops, 1.f, 0, dnnl_data_type_undef);
    } else {
      const dn_entry *oe = &p->g->entries[po->src1];
      int sid;
      if (oe->ndim == dst_rank && same_shape(oe, &p->g->entries[c->result]) &&
          !is_const(p, po->src1) && p->entry_slot[po->src1] >= 0 &&
          dst_rank == p->g->entries[c->result].ndim) {
        /* same shape: in the layout the primitive writes (a mismatch sends oneDNN to its
           reference convolution: 130 ms instead of 0.2 ms for a grouped 1x1) */
        sid = want ? slot_as(p, po->src1, want) : p->entry_slot[po->src1];
      } else {
        /* broadcast (or the anchor computes in another rank): plain, padded to dst_rank */
        int64_t sh[DN_MAX_RANK];
        if (oe->ndim <= dst_rank && dst_rank == p->g->entries[c->result].ndim) {
          padded_shape(oe, dst_rank, sh);
        } else {
          /* dense over rank > 2 computed as 2-D: collapse to (rows, N) or (1, N) */
          int64_t n = numel(oe), last = dst_dims[dst_rank - 1];
          sh[dst_rank - 1] = n >= last ? last : 1;
          for (int k = 0; k < dst_rank - 1; k++) sh[k] = 1;
          sh[0] = sh[dst_rank - 1] == last ? n / last : 1;
        }
        sid = slot_reshaped(p, po->src1, dst_rank, sh);
      }
      if (sid < 0) {
        dnnl_post_ops_destroy(ops);
        dnnl_primitive_attr_destroy(attr);
        return NULL;
      }
      src1_slots[i] = sid;
      dnnl_post_ops_append_binary(ops, po->alg, p->s->slots[sid].md);
    }
  }
  dnnl_primitive_attr_set_post_ops(attr, ops);
  dnnl_post_ops_destroy(ops);
  return attr;
}


/* Undo the slots and steps planned since a mark (a rejected attempt). */
static void rollback(planner *p, int nslots, int nsteps, size_t arena) {
  for (int i = p->s->nslots - 1; i >= nslots; i--) dnnl_memory_desc_destroy(p->s->slots[i].md);
  for (int i = p->s->nsteps - 1; i >= nsteps; i--) {
    dnnl_primitive_destroy(p->s->steps[i].prim);
    if (p->s->steps[i].scratch_md) dnnl_memory_desc_destroy(p->s->steps[i].scratch_md);
  }
  p->s->nslots = nslots;
  p->s->nsteps = nsteps;
  p->s->arena_size = arena;
}

/* Whether `pd` runs a kernel as fast on plain layouts as the blocked one would be: not the
   reference and not the im2col + GEMM convolution. */
static int fast_on_plain(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl != NULL && strncmp(impl, "ref", 3) != 0 && strstr(impl, "gemm") == NULL;
}

typedef enum { A_CONV, A_DECONV, A_DENSE, A_MATMUL } anchor_kind;

static int plan_anchor(planner *p, int a, anchor_kind kind) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[a];
  int x = n->in[0], w = n->in[1];
  const dn_entry *xe = &g->entries[x], *we = &g->entries[w], *ye = &g->entries[n->out[0]];
  int wconst = is_const(p, w);
  int64_t strides[2], pad[4], dil[2], opad[2] = {0, 0};
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  int64_t groups = 1;
  if (kind == A_CONV || kind == A_DECONV) {
    if (xe->ndim != 4) return fail(p, "%s: data must be 4-D (NCHW)", n->op);
    if (ints_attr(p, a, "strides", strides, 2, ones) < 0) return -1;
    if (ints_attr(p, a, "padding", pad, 4, zeros) < 0) return -1;
    if (ints_attr(p, a, "dilation", dil, 2, ones) < 0) return -1;
    if (kind == A_DECONV && ints_attr(p, a, "output_padding", opad, 2, zeros) < 0) return -1;
    groups = int_attr(p, a, "groups", 1);
  }
  int axis, rank = ye->ndim;
  int64_t channels;
  if (kind == A_CONV || kind == A_DECONV) {
    axis = 1;
    channels = ye->shape[1];
  } else {
    axis = rank - 1;
    channels = ye->shape[rank - 1];
  }
  int affine_ok = wconst && kind != A_MATMUL;
  if (kind == A_MATMUL && wconst && we->ndim == 2) affine_ok = 1;
  chain c;
  collect_chain(p, a, axis, channels, affine_ok, kind == A_DENSE && xe->ndim != 2, &c);

  /* per-channel scale/shift folded into the weights and the bias */
  float *shift = NULL, *scale = NULL;
  int has_bias = c.n_affine > 0;
  if (has_bias) {
    shift = calloc((size_t)channels, sizeof(float));
    if (!shift) return fail(p, "out of memory");
    if (fold_affine(p, &c, channels, &scale, shift) < 0) {
      free(shift);
      return -1;
    }
  }

  /* dims oneDNN computes in */
  int64_t src_dims[DN_MAX_RANK], wdims[DN_MAX_RANK + 1], dst_dims[DN_MAX_RANK];
  int64_t wsrc_strides[DN_MAX_RANK + 1];
  int src_rank = 0, w_rank = 0, dst_rank = 0;
  if (kind == A_CONV) {
    src_rank = dst_rank = 4;
    memcpy(src_dims, xe->shape, 4 * sizeof(int64_t));
    memcpy(dst_dims, ye->shape, 4 * sizeof(int64_t));
    int64_t O = we->shape[0], I = we->shape[1], KH = we->shape[2], KW = we->shape[3];
    if (groups > 1) {
      w_rank = 5;
      int64_t d[5] = {groups, O / groups, I, KH, KW};
      memcpy(wdims, d, sizeof d);
    } else {
      w_rank = 4;
      memcpy(wdims, we->shape, 4 * sizeof(int64_t));
    }
    int64_t st = 1;
    for (int i = w_rank - 1; i >= 0; i--) {
      wsrc_strides[i] = st;
      st *= wdims[i];
    }
  } else if (kind == A_DECONV) {
    src_rank = dst_rank = 4;
    memcpy(src_dims, xe->shape, 4 * sizeof(int64_t));
    memcpy(dst_dims, ye->shape, 4 * sizeof(int64_t));
    /* ours: (C, O/g, KH, KW), C = g * Ig */
    int64_t C = we->shape[0], Og = we->shape[1], KH = we->shape[2], KW = we->shape[3];
    int64_t Ig = C / groups;
    if (groups > 1) {
      w_rank = 5;
      int64_t d[5] = {groups, Og, Ig, KH, KW};
      int64_t s5[5] = {Ig * Og * KH * KW, KH * KW, Og * KH * KW, KW, 1};
      memcpy(wdims, d, sizeof d);
      memcpy(wsrc_strides, s5, sizeof s5);
    } else {
      w_rank = 4;
      int64_t d[4] = {Og, C, KH, KW};
      int64_t s4[4] = {KH * KW, Og * KH * KW, KW, 1};
      memcpy(wdims, d, sizeof d);
      memcpy(wsrc_strides, s4, sizeof s4);
    }
  } else if (kind == A_DENSE) {
    int64_t K = xe->shape[xe->ndim - 1], N = we->shape[0];
    src_rank = dst_rank = w_rank = 2;
    src_dims[0] = numel(xe) / K;
    src_dims[1] = K;
    dst_dims[0] = src_dims[0];
    dst_dims[1] = N;
    wdims[0] = K;
    wdims[1] = N;
    wsrc_strides[0] = 1; /* weight (N, K) read as (K, N) */
    wsrc_strides[1] = K;
  } else {
    if (xe->ndim < 2 || we->ndim < 2) return fail(p, "nn.matmul: operands of rank < 2");
    src_rank = dst_rank = w_rank = ye->ndim;
    padded_shape(xe, src_rank, src_dims);
    padded_shape(we, src_rank, wdims);
    memcpy(dst_dims, ye->shape, (size_t)dst_rank * sizeof(int64_t));
    int64_t st = 1;
    for (int i = w_rank - 1; i >= 0; i--) {
      wsrc_strides[i] = st;
      st *= wdims[i];
    }
  }
  int64_t bias_dims[DN_MAX_RANK];
  int bias_rank = (kind == A_CONV || kind == A_DECONV) ? 1 : dst_rank;
  if (bias_rank == 1) bias_dims[0] = channels;
  else {
    for (int i = 0; i < dst_rank; i++) bias_dims[i] = 1;
    bias_dims[dst_rank - 1] = channels;
  }

  /* the weights: folded copy when scaled */
  const float *wdata = we->data;
  float *wscaled = NULL;
  if (scale && wconst) {
    int64_t cnt = numel(we);
    wscaled = malloc((size_t)cnt * sizeof(float));
    if (!wscaled) {
      free(shift);
      free(scale);
      return fail(p, "out of memory");
    }
    if (kind == A_CONV) {
      int64_t per = cnt / we->shape[0];
      for (int64_t i = 0; i < cnt; i++) wscaled[i] = wdata[i] * scale[i / per];
    } else if (kind == A_DECONV) {
      int64_t C = we->shape[0], Og = we->shape[1], kk = we->shape[2] * we->shape[3];
      int64_t Ig = C / groups;
      for (int64_t ci = 0; ci < C; ci++)
        for (int64_t oo = 0; oo < Og; oo++) {
          float sc = scale[(ci / Ig) * Og + oo];
          for (int64_t k = 0; k < kk; k++) {
            int64_t idx = (ci * Og + oo) * kk + k;
            wscaled[idx] = wdata[idx] * sc;
          }
        }
    } else if (kind == A_DENSE) {
      int64_t K = we->shape[1];
      for (int64_t i = 0; i < cnt; i++) wscaled[i] = wdata[i] * scale[i / K];
    } else {
      int64_t N = we->shape[we->ndim - 1];
      for (int64_t i = 0; i < cnt; i++) wscaled[i] = wdata[i] * scale[i % N];
    }
    wdata = wscaled;
  }
  free(scale);

  /* try the whole chain, then shorter ones until oneDNN takes it */
  int npo = c.npo, src1_slots[DN_MAX_CHAIN];
  dnnl_primitive_desc_t pd = NULL;
  int nslots_before = p->s->nslots, nsteps_before = p->s->nsteps;
  size_t arena_before = p->s->arena_size;
  int rc = -1;
  dnnl_memory_desc_t want = NULL; /* the dst layout, when residuals must match it */
  /* at the partition's edges, a convolution that reads the caller's input or writes the
     caller's output in plain layout saves a reorder, if oneDNN has a fast kernel for it */
  int plain_edges = kind == A_CONV || kind == A_DECONV;
  for (;;) {
    int plain_src = plain_edges && p->entry_slot[x] >= 0 &&
                    p->s->slots[p->s->slots[p->entry_slot[x]].root].kind == LOC_INPUT;
    int plain_dst = plain_edges && p->is_output[c.result];
    int residual = 0;
    for (int i = 0; i < npo; i++)
      if (c.po[i].kind == PO_SUM ||
          (c.po[i].kind == PO_BINARY && !is_const(p, c.po[i].src1) &&
           same_shape(&g->entries[c.po[i].src1], &g->entries[c.result])))
        residual = 1;
    dnnl_primitive_attr_t attr = NULL;
    if (residual && want == NULL) {
      /* probe: the layout oneDNN writes without post-ops; residuals are brought to it */
      attr = new_attr();
    } else {
      attr = chain_attr(p, &c, npo, dst_rank, dst_dims, want, src1_slots);
    }
    if (!attr) break;
    int probing = residual && want == NULL;
    if (probing || want) plain_dst = 0;
    if (!plain_src && !plain_dst) plain_edges = 0;
    dnnl_memory_desc_t src_md =
        plain_src ? md_plain(src_rank, src_dims) : md_any(src_rank, src_dims);
    dnnl_memory_desc_t w_md =
        wconst ? md_any(w_rank, wdims) : md_strided(w_rank, wdims, wsrc_strides);
    dnnl_memory_desc_t b_md = has_bias ? md_plain(bias_rank, bias_dims) : NULL;
    dnnl_memory_desc_t d_md = want       ? md_clone(want)
                              : plain_dst ? md_plain(dst_rank, dst_dims)
                                          : md_any(dst_rank, dst_dims);
    if (kind == A_MATMUL || kind == A_DENSE) {
      /* matmul takes plain activations (the dense inputs are reshaped views) */
      dnnl_memory_desc_destroy(src_md);
      src_md = md_plain(src_rank, src_dims);
      dnnl_memory_desc_destroy(d_md);
      d_md = md_plain(dst_rank, dst_dims);
    }
    dnnl_status_t st;
    if (kind == A_CONV) {
      dnnl_dims_t s2 = {strides[0], strides[1]}, d2 = {dil[0] - 1, dil[1] - 1};
      dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
      st = dnnl_convolution_forward_primitive_desc_create(
          &pd, p->s->eng, dnnl_forward_inference, dnnl_convolution_direct, src_md, w_md, b_md,
          d_md, s2, d2, pl, pr, attr);
    } else if (kind == A_DECONV) {
      dnnl_dims_t s2 = {strides[0], strides[1]}, d2 = {dil[0] - 1, dil[1] - 1};
      dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2] - opad[0], pad[3] - opad[1]};
      st = dnnl_deconvolution_forward_primitive_desc_create(
          &pd, p->s->eng, dnnl_forward_inference, dnnl_deconvolution_direct, src_md, w_md, b_md,
          d_md, s2, d2, pl, pr, attr);
    } else {
      st = dnnl_matmul_primitive_desc_create(&pd, p->s->eng, src_md, w_md, b_md, d_md, attr);
    }
    dnnl_memory_desc_destroy(src_md);
    dnnl_memory_desc_destroy(w_md);
    if (b_md) dnnl_memory_desc_destroy(b_md);
    dnnl_memory_desc_destroy(d_md);
    dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success && probing) {
      want = md_clone(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
      dnnl_primitive_desc_destroy(pd);
      pd = NULL;
      if (want == NULL) {
        fail(p, "oneDNN: cannot query a destination layout");
        break;
      }
      continue;
    }
    if (plain_edges && !probing) {
      /* the plain-edge attempt: kept only with a fast kernel, else the blocked layouts */
      if (st == dnnl_success && fast_on_plain(pd)) {
        rc = 0;
        break;
      }
      if (st == dnnl_success) dnnl_primitive_desc_destroy(pd);
      pd = NULL;
      rollback(p, nslots_before, nsteps_before, arena_before);
      plain_edges = 0;
      continue;
    }
    if (st == dnnl_success) {
      rc = 0;
      break;
    }
    if (npo == 0) {
      fail(p, "oneDNN has no implementation of %s here (status %d)", n->op, (int)st);
      break;
    }
    /* drop the last post-op and the nodes from it on; roll back its reorders */
    rollback(p, nslots_before, nsteps_before, arena_before);
    npo--;
    c.nnodes = c.po[npo].first; /* the nodes before the dropped post-op */
    c.npo = npo;
    c.result = c.nnodes ? g->nodes[c.nodes[c.nnodes - 1]].out[0] : n->out[0];
  }
  if (want) dnnl_memory_desc_destroy(want);
  if (rc < 0) {
    free(shift);
    free(wscaled);
    return -1;
  }

  /* arguments */
  int args[DN_MAX_ARGS], slots[DN_MAX_ARGS], na = 0;
  const_dnnl_memory_desc_t q_src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const_dnnl_memory_desc_t q_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const_dnnl_memory_desc_t q_dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  int sid;
  if (kind == A_DENSE || kind == A_MATMUL) sid = slot_reshaped(p, x, src_rank, src_dims);
  else sid = slot_as(p, x, q_src);
  if (sid < 0) goto bad;
  args[na] = DNNL_ARG_SRC;
  slots[na++] = sid;
  if (wconst) {
    dnnl_memory_desc_t wsrc = md_strided(w_rank, wdims, wsrc_strides);
    sid = reorder_const(p, wsrc, wdata, q_w);
    dnnl_memory_desc_destroy(wsrc);
  } else if (kind == A_MATMUL || kind == A_DENSE) {
    /* a computed weight: a view of its plain buffer ((N, K) read as (K, N) for dense) */
    sid = slot_plain(p, w);
    if (sid >= 0) sid = alias_slot(p, sid, md_strided(w_rank, wdims, wsrc_strides));
  } else {
    sid = fail(p, "%s: the weight must be a constant", n->op);
  }
  if (sid < 0) goto bad;
  args[na] = DNNL_ARG_WEIGHTS;
  slots[na++] = sid;
  if (has_bias) {
    sid = new_slot(p, md_plain(bias_rank, bias_dims), LOC_CONST);
    if (sid < 0) goto bad;
    void *buf = owned_alloc(p, p->s->slots[sid].size);
    if (!buf) {
      fail(p, "out of memory");
      goto bad;
    }
    memcpy(buf, shift, (size_t)channels * sizeof(float));
    p->s->slots[sid].cptr = buf;
    args[na] = DNNL_ARG_BIAS;
    slots[na++] = sid;
  }
  int dst = -1;
  for (int i = 0; i < npo; i++) {
    if (c.po[i].kind == PO_SUM) dst = src1_slots[i];
    else if (c.po[i].kind == PO_BINARY) {
      args[na] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1;
      slots[na++] = src1_slots[i];
    }
  }
  if (dst < 0) dst = new_slot(p, md_clone(q_dst), LOC_ARENA);
  if (dst < 0) goto bad;
  args[na] = DNNL_ARG_DST;
  slots[na++] = dst;
  {
    char what[64];
    snprintf(what, sizeof what, "%s+%d", n->op + 3, c.nnodes);
    if (add_step(p, pd, what, na, args, slots) < 0) {
      pd = NULL;
      goto bad;
    }
    pd = NULL;
  }
  /* the chain's result: dst, viewed with its own rank for dense over rank > 2 */
  if (kind == A_DENSE && ye->ndim != 2) {
    const dn_entry *re = &g->entries[c.result];
    dst = alias_slot(p, dst, md_plain(re->ndim, re->shape));
    if (dst < 0) goto bad;
  }
  p->entry_slot[c.result] = dst;
  for (int i = 0; i < c.nnodes; i++) p->done[c.nodes[i]] = 1;
  free(shift);
  free(wscaled);
  return 0;
bad:
  if (pd) dnnl_primitive_desc_destroy(pd);
  free(shift);
  free(wscaled);
  return -1;
}

/* ---------------------------------------------------------------------------------- */
/* The other ops                                                                       */
/* ---------------------------------------------------------------------------------- */

/* A primitive reading entry `x` in its current layout and writing a new arena slot with
   the layout oneDNN gives dst; the result becomes entry `y`'s value. */
static int finish_simple(planner *p, dnnl_primitive_desc_t pd, const char *what, int nsrc,
                         const int *src_args, const int *src_slots, int y) {
  const_dnnl_memory_desc_t q_dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  int dst = new_slot(p, md_clone(q_dst), LOC_ARENA);
  if (dst < 0) {
    dnnl_primitive_desc_destroy(pd);
    return -1;
  }
  int args[DN_MAX_ARGS], slots[DN_MAX_ARGS];
  for (int i = 0; i < nsrc; i++) {
    args[i] = src_args[i];
    slots[i] = src_slots[i];
  }
  args[nsrc] = DNNL_ARG_DST;
  slots[nsrc] = dst;
  if (add_step(p, pd, what, nsrc + 1, args, slots) < 0) return -1;
  p->entry_slot[y] = dst;
  return 0;
}

static int plan_eltwise(planner *p, int nid, dnnl_alg_kind_t alg, float a, float b) {
  const dn_node *n = &p->g->nodes[nid];
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  const_dnnl_memory_desc_t md = p->s->slots[x].md;
  dnnl_status_t st = dnnl_eltwise_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, alg, md, md, a, b, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no eltwise for %s (status %d)", n->op, (int)st);
  int args[1] = {DNNL_ARG_SRC};
  return finish_simple(p, pd, n->op + 3, 1, args, &x, n->out[0]);
}

static int plan_binary(planner *p, int nid, dnnl_alg_kind_t alg, int comm) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[nid];
  const dn_entry *ye = &g->entries[n->out[0]];
  int a = n->in[0], b = n->in[1];
  if (!same_shape(&g->entries[a], ye)) {
    if (!comm || !same_shape(&g->entries[b], ye))
      return fail(p, "%s: the first operand must have the result's shape", n->op);
    int t = a;
    a = b;
    b = t;
  }
  int s0 = slot_for_simple(p, a);
  if (s0 < 0) return -1;
  int s1;
  if (same_shape(&g->entries[b], ye)) {
    s1 = value_slot(p, b);
    if (s1 >= 0 && !md_equal(p->s->slots[s1].md, p->s->slots[s0].md))
      s1 = slot_as(p, b, p->s->slots[s0].md);
  } else {
    int64_t sh[DN_MAX_RANK];
    padded_shape(&g->entries[b], ye->ndim, sh);
    s1 = slot_reshaped(p, b, ye->ndim, sh);
  }
  if (s1 < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_binary_primitive_desc_create(&pd, p->s->eng, alg, p->s->slots[s0].md,
                                                       p->s->slots[s1].md, p->s->slots[s0].md,
                                                       attr);
  dnnl_primitive_attr_destroy(attr);
  if (st == dnnl_success && is_ref_impl(pd) && !same_shape(&g->entries[b], ye)) {
    /* a broadcast against a blocked layout has only the reference kernel (200 ms for a
       per-channel multiply of 1x256x56x56): the plain layout has a jit one */
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    st = dnnl_unimplemented;
  }
  if (st != dnnl_success) {
    /* broadcasting against a blocked layout: compute in plain layout */
    s0 = slot_plain(p, a);
    if (s0 < 0) return -1;
    attr = new_attr();
    st = dnnl_binary_primitive_desc_create(&pd, p->s->eng, alg, p->s->slots[s0].md,
                                           p->s->slots[s1].md, p->s->slots[s0].md, attr);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return fail(p, "oneDNN: no binary for %s (status %d)", n->op, (int)st);
  }
  int args[2] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1}, slots[2] = {s0, s1};
  return finish_simple(p, pd, n->op + 3, 2, args, slots, n->out[0]);
}

static int plan_pool(planner *p, int nid, int global, int is_max) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[nid];
  const dn_entry *xe = &g->entries[n->in[0]], *ye = &g->entries[n->out[0]];
  if (xe->ndim != 4) return fail(p, "%s: data must be 4-D", n->op);
  int64_t k[2], s[2] = {1, 1}, pad[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  int include_pad = 0;
  if (global) {
    k[0] = xe->shape[2];
    k[1] = xe->shape[3];
  } else {
    if (ints_attr(p, nid, "pool_size", k, 2, NULL) < 0) return -1;
    if (ints_attr(p, nid, "strides", s, 2, ones) < 0) return -1;
    if (ints_attr(p, nid, "padding", pad, 4, zeros) < 0) return -1;
    if (ints_attr(p, nid, "dilation", d, 2, ones) < 0) return -1;
    include_pad = (int)int_attr(p, nid, "count_include_pad", 0);
  }
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  /* right padding that yields the declared output size (ceil_mode adds some) */
  int64_t pr[2];
  for (int i = 0; i < 2; i++) {
    pr[i] = (ye->shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - xe->shape[2 + i] - pad[i];
    if (pr[i] < 0) pr[i] = 0;
    if (include_pad && pr[i] != pad[2 + i])
      return fail(p, "%s: count_include_pad with ceil_mode is not supported by oneDNN", n->op);
  }
  dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max
                               : include_pad ? dnnl_pooling_avg_include_padding
                                             : dnnl_pooling_avg_exclude_padding;
  dnnl_dims_t ks = {k[0], k[1]}, ss = {s[0], s[1]}, ds = {d[0] - 1, d[1] - 1};
  dnnl_dims_t pl = {pad[0], pad[1]}, prr = {pr[0], pr[1]};
  dnnl_memory_desc_t dmd = md_any(4, ye->shape);
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_pooling_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, alg, p->s->slots[x].md, dmd, ss, ks, ds, pl, prr,
      attr);
  dnnl_memory_desc_destroy(dmd);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no pooling for %s (status %d)", n->op, (int)st);
  int args[1] = {DNNL_ARG_SRC};
  return finish_simple(p, pd, n->op + 3, 1, args, &x, n->out[0]);
}

static int plan_softmax(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *xe = &p->g->entries[n->in[0]];
  int axis = (int)int_attr(p, nid, "axis", -1);
  if (axis < 0) axis += xe->ndim;
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_softmax_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, dnnl_softmax_accurate, p->s->slots[x].md,
      p->s->slots[x].md, axis, attr);
  if (st != dnnl_success) {
    x = slot_plain(p, n->in[0]);
    if (x < 0) {
      dnnl_primitive_attr_destroy(attr);
      return -1;
    }
    st = dnnl_softmax_forward_primitive_desc_create(&pd, p->s->eng, dnnl_forward_inference,
                                                    dnnl_softmax_accurate, p->s->slots[x].md,
                                                    p->s->slots[x].md, axis, attr);
  }
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no softmax here (status %d)", (int)st);
  int args[1] = {DNNL_ARG_SRC};
  return finish_simple(p, pd, "softmax", 1, args, &x, n->out[0]);
}

static int plan_lrn(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *xe = &p->g->entries[n->in[0]];
  int axis = (int)int_attr(p, nid, "axis", 1);
  if (axis < 0) axis += xe->ndim;
  if (axis != 1 || xe->ndim < 3) return fail(p, "nn.lrn: oneDNN normalises across axis 1 only");
  int64_t size = int_attr(p, nid, "size", 1);
  if (size % 2 == 0) return fail(p, "nn.lrn: oneDNN takes an odd size only");
  float alpha = (float)float_attr(p, nid, "alpha", 1e-4), beta = (float)float_attr(p, nid, "beta", 0.75);
  float bias = (float)float_attr(p, nid, "bias", 1.0);
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_lrn_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, dnnl_lrn_across_channels, p->s->slots[x].md,
      p->s->slots[x].md, size, alpha, beta, bias, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no LRN here (status %d)", (int)st);
  int args[1] = {DNNL_ARG_SRC};
  return finish_simple(p, pd, "lrn", 1, args, &x, n->out[0]);
}

static int plan_batch_norm(planner *p, int nid) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[nid];
  const dn_entry *xe = &g->entries[n->in[0]];
  int axis = (int)int_attr(p, nid, "axis", 1);
  if (axis < 0) axis += xe->ndim;
  if (axis != 1) return fail(p, "nn.batch_norm: oneDNN normalises over axis 1 only");
  for (int i = 1; i < 5; i++)
    if (!is_const(p, n->in[i])) return fail(p, "nn.batch_norm: parameters must be constants");
  float eps = (float)float_attr(p, nid, "epsilon", 1e-5);
  /* multiplies and adds of per-channel constants after it fold into its scale and shift
     (a Caffe BatchNorm + Scale pair); a relu after them is fused (fuse_norm_relu) */
  int64_t C = xe->shape[1];
  float *gamma = owned_alloc(p, (size_t)C * sizeof(float));
  float *beta = owned_alloc(p, (size_t)C * sizeof(float));
  if (!gamma || !beta) return fail(p, "out of memory");
  memcpy(gamma, g->entries[n->in[1]].data, (size_t)C * sizeof(float));
  memcpy(beta, g->entries[n->in[2]].data, (size_t)C * sizeof(float));
  int y = n->out[0];
  for (;;) {
    int nx = sole_consumer(p, y);
    if (nx < 0 || p->done[nx] || g->nodes[nx].nin != 2) break;
    const dn_node *m = &g->nodes[nx];
    int is_mul = op_is(m, "nn.multiply"), is_add = op_is(m, "nn.add");
    if (!is_mul && !is_add) break;
    int k = m->in[0] == y ? m->in[1] : m->in[0];
    if (k == y || !is_const(p, k) || !per_channel(&g->entries[k], xe->ndim, 1, C)) break;
    if (!same_shape(&g->entries[m->out[0]], xe)) break;
    const float *v = g->entries[k].data;
    int one = numel(&g->entries[k]) == 1;
    for (int64_t c = 0; c < C; c++) {
      float kv = v[one ? 0 : c];
      if (is_mul) {
        gamma[c] *= kv;
        beta[c] *= kv;
      } else {
        beta[c] += kv;
      }
    }
    p->done[nx] = 1;
    y = m->out[0];
  }
  unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
  int relu = sole_consumer(p, y);
  if (relu >= 0 && op_is(&g->nodes[relu], "nn.relu")) {
    flags |= dnnl_fuse_norm_relu;
    p->done[relu] = 1;
    y = g->nodes[relu].out[0];
  } else relu = -1;
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_batch_normalization_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, p->s->slots[x].md, p->s->slots[x].md, eps, flags,
      attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no batch normalization here (status %d)", (int)st);
  int args[5] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  int slots[5] = {x, 0, 0, 0, 0};
  for (int i = 0; i < 4; i++) {
    if (i < 2) {
      int64_t dims[1] = {C};
      slots[1 + i] = new_slot(p, md_plain(1, dims), LOC_CONST);
      if (slots[1 + i] >= 0) p->s->slots[slots[1 + i]].cptr = i == 0 ? gamma : beta;
    } else {
      slots[1 + i] = value_slot(p, n->in[1 + i]); /* mean, var */
    }
    if (slots[1 + i] < 0) {
      dnnl_primitive_desc_destroy(pd);
      return -1;
    }
  }
  return finish_simple(p, pd, relu >= 0 ? "batch_norm+relu" : "batch_norm", 5, args, slots, y);
}

/* A per-position parameter of layer norm: constant `e` broadcast (numpy rules) to the
   `inner` trailing dims of the data, in a new owned buffer; or a computed value of exactly
   those dims, viewed as 1-D. */
static int layer_norm_param(planner *p, int e, int ndim, const int64_t *inner, int64_t count) {
  const dn_entry *en = &p->g->entries[e];
  if (!is_const(p, e)) {
    if (numel(en) != count) return fail(p, "nn.layer_norm: a computed gamma/beta must not broadcast");
    return slot_reshaped(p, e, 1, &count);
  }
  int id = new_slot(p, md_plain(1, &count), LOC_CONST);
  if (id < 0) return id;
  float *buf = owned_alloc(p, (size_t)count * sizeof(float));
  if (!buf) return fail(p, "out of memory");
  p->s->slots[id].cptr = buf;
  int64_t sh[DN_MAX_RANK], st[DN_MAX_RANK], acc = 1;
  padded_shape(en, ndim, sh);
  for (int d = ndim - 1; d >= 0; d--) {
    st[d] = sh[d] == 1 ? 0 : acc; /* a broadcast dim repeats */
    acc *= sh[d];
  }
  const float *src = en->data;
  for (int64_t i = 0; i < count; i++) {
    int64_t rest = i, off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
      off += (rest % inner[d]) * st[d];
      rest /= inner[d];
    }
    buf[i] = src[off];
  }
  return id;
}

/* layer norm over the dims from `axis` on: oneDNN's layer_normalization over the last dim
   of a (rows, inner) view of the plain data; gamma and beta are its scale and shift */
static int plan_layer_norm(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *xe = &p->g->entries[n->in[0]], *ye = &p->g->entries[n->out[0]];
  int axis = (int)int_attr(p, nid, "axis", -1);
  if (axis < 0) axis += xe->ndim;
  if (axis < 0 || axis >= xe->ndim) return fail(p, "nn.layer_norm: axis out of range");
  float eps = (float)float_attr(p, nid, "epsilon", 1e-5);
  int64_t count = 1;
  for (int d = axis; d < xe->ndim; d++) count *= xe->shape[d];
  int64_t dims[2] = {numel(xe) / count, count};
  int x = slot_reshaped(p, n->in[0], 2, dims);
  if (x < 0) return -1;
  int ninner = xe->ndim - axis;
  int scale = layer_norm_param(p, n->in[1], ninner, xe->shape + axis, count);
  int shift = scale < 0 ? -1 : layer_norm_param(p, n->in[2], ninner, xe->shape + axis, count);
  if (shift < 0) return -1;
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_layer_normalization_forward_primitive_desc_create(
      &pd, p->s->eng, dnnl_forward_inference, p->s->slots[x].md, p->s->slots[x].md, NULL, eps,
      dnnl_use_scale | dnnl_use_shift, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no layer normalization here (status %d)", (int)st);
  int args[3] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT}, slots[3] = {x, scale, shift};
  if (finish_simple(p, pd, "layer_norm", 3, args, slots, n->out[0]) < 0) return -1;
  int view = alias_slot(p, p->entry_slot[n->out[0]], md_plain(ye->ndim, ye->shape));
  if (view < 0) return -1;
  p->entry_slot[n->out[0]] = view;
  return 0;
}

static int plan_concat(planner *p, int nid) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[nid];
  const dn_entry *ye = &g->entries[n->out[0]];
  int axis = (int)int_attr(p, nid, "axis", 0);
  if (axis < 0) axis += ye->ndim;
  if (n->nin > DN_MAX_ARGS - 2) return fail(p, "nn.concatenate: too many inputs");
  int slots[DN_MAX_ARGS], args[DN_MAX_ARGS];
  const_dnnl_memory_desc_t mds[DN_MAX_ARGS];
  for (int i = 0; i < n->nin; i++) {
    slots[i] = slot_for_simple(p, n->in[i]);
    if (slots[i] < 0) return -1;
    mds[i] = p->s->slots[slots[i]].md;
    args[i] = DNNL_ARG_MULTIPLE_SRC + i;
  }
  dnnl_memory_desc_t dmd = md_any(ye->ndim, ye->shape);
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st =
      dnnl_concat_primitive_desc_create(&pd, p->s->eng, dmd, n->nin, axis, mds, attr);
  if (st == dnnl_success && is_ref_impl(pd)) {
    /* mixed layouts have only the reference concat: bring the inputs to the first one's */
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    const_dnnl_memory_desc_t first = p->s->slots[slots[0]].md;
    int ok = 1;
    for (int i = 1; i < n->nin && ok; i++) {
      slots[i] = slot_as(p, n->in[i], first);
      ok = slots[i] >= 0;
      if (ok) mds[i] = p->s->slots[slots[i]].md;
    }
    st = ok ? dnnl_concat_primitive_desc_create(&pd, p->s->eng, dmd, n->nin, axis, mds, attr)
            : dnnl_runtime_error;
  }
  if (st != dnnl_success) {
    /* layouts concat does not take: concatenate in plain layout */
    for (int i = 0; i < n->nin; i++) {
      slots[i] = slot_plain(p, n->in[i]);
      if (slots[i] < 0) {
        dnnl_memory_desc_destroy(dmd);
        dnnl_primitive_attr_destroy(attr);
        return -1;
      }
      mds[i] = p->s->slots[slots[i]].md;
    }
    st = dnnl_concat_primitive_desc_create(&pd, p->s->eng, dmd, n->nin, axis, mds, attr);
  }
  dnnl_memory_desc_destroy(dmd);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) return fail(p, "oneDNN: no concat here (status %d)", (int)st);
  return finish_simple(p, pd, "concat", n->nin, args, slots, n->out[0]);
}

/* reshape / flatten: a plain view of the same buffer, no copy */
static int plan_reshape(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *ye = &p->g->entries[n->out[0]];
  int base = slot_plain(p, n->in[0]);
  if (base < 0) return -1;
  int id = alias_slot(p, base, md_plain(ye->ndim, ye->shape));
  if (id < 0) return -1;
  p->entry_slot[n->out[0]] = id;
  return 0;
}

/* transpose: a reorder from a permuted-strides view of the input */
static int plan_transpose(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *xe = &p->g->entries[n->in[0]], *ye = &p->g->entries[n->out[0]];
  int r = xe->ndim;
  int64_t axes[DN_MAX_RANK];
  int got = p->g->attr_ints(p->g->ctx, nid, "axes", axes, DN_MAX_RANK);
  if (got <= 0) {
    for (int i = 0; i < r; i++) axes[i] = r - 1 - i;
  } else if (got != r) return fail(p, "nn.transpose: axes of the wrong length");
  int64_t xstr[DN_MAX_RANK], vstr[DN_MAX_RANK], st = 1;
  for (int i = r - 1; i >= 0; i--) {
    xstr[i] = st;
    st *= xe->shape[i];
  }
  for (int i = 0; i < r; i++) vstr[i] = xstr[(axes[i] + r) % r];
  int base = slot_plain(p, n->in[0]);
  if (base < 0) return -1;
  int view = alias_slot(p, base, md_strided(r, ye->shape, vstr));
  if (view < 0) return -1;
  int dst = new_slot(p, md_plain(ye->ndim, ye->shape), LOC_ARENA);
  if (dst < 0) return -1;
  dnnl_primitive_desc_t pd = NULL;
  DN_CHECK(p, dnnl_reorder_primitive_desc_create(&pd, p->s->slots[view].md, p->s->eng,
                                                 p->s->slots[dst].md, p->s->eng, NULL),
           "transpose reorder");
  int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, slots[2] = {view, dst};
  if (add_step(p, pd, "transpose", 2, args, slots) < 0) return -1;
  p->entry_slot[n->out[0]] = dst;
  return 0;
}

static int plan_node(planner *p, int nid) {
  const dn_node *n = &p->g->nodes[nid];
  for (int i = 0; i < n->nout; i++)
    if (!p->g->entries[n->out[i]].is_f32) return fail(p, "%s: oneDNN computes in f32 only", n->op);
  if (n->nout != 1) return fail(p, "%s: one result expected", n->op);
  dnnl_alg_kind_t alg;
  float a, b;
  int comm;
  if (op_is(n, "nn.conv2d")) return plan_anchor(p, nid, A_CONV);
  if (op_is(n, "nn.conv2d_transpose")) return plan_anchor(p, nid, A_DECONV);
  if (op_is(n, "nn.dense")) return plan_anchor(p, nid, A_DENSE);
  if (op_is(n, "nn.matmul")) return plan_anchor(p, nid, A_MATMUL);
  if (op_is(n, "nn.max_pool2d")) return plan_pool(p, nid, 0, 1);
  if (op_is(n, "nn.avg_pool2d")) return plan_pool(p, nid, 0, 0);
  if (op_is(n, "nn.global_max_pool2d")) return plan_pool(p, nid, 1, 1);
  if (op_is(n, "nn.global_avg_pool2d")) return plan_pool(p, nid, 1, 0);
  if (op_is(n, "nn.softmax")) return plan_softmax(p, nid);
  if (op_is(n, "nn.lrn")) return plan_lrn(p, nid);
  if (op_is(n, "nn.batch_norm")) return plan_batch_norm(p, nid);
  if (op_is(n, "nn.layer_norm")) return plan_layer_norm(p, nid);
  if (op_is(n, "nn.concatenate")) return plan_concat(p, nid);
  if (op_is(n, "nn.reshape") || op_is(n, "nn.flatten")) return plan_reshape(p, nid);
  if (op_is(n, "nn.transpose")) return plan_transpose(p, nid);
  if (n->nin == 1 && eltwise_of(p, nid, &alg, &a, &b)) return plan_eltwise(p, nid, alg, a, b);
  if (op_is(n, "nn.divide")) {
    int gelu_nodes[5], y = match_gelu(p, n->in[0], gelu_nodes);
    if (y >= 0 && gelu_nodes[0] == nid) {
      int x = value_slot(p, n->in[0]);
      if (x < 0) return -1;
      dnnl_primitive_attr_t attr = new_attr();
      dnnl_primitive_desc_t pd = NULL;
      const_dnnl_memory_desc_t md = p->s->slots[x].md;
      dnnl_status_t st = dnnl_eltwise_forward_primitive_desc_create(
          &pd, p->s->eng, dnnl_forward_inference, dnnl_eltwise_gelu_erf, md, md, 0.f, 0.f, attr);
      dnnl_primitive_attr_destroy(attr);
      if (st != dnnl_success) return fail(p, "oneDNN: no gelu eltwise (status %d)", (int)st);
      for (int k = 0; k < 5; k++) p->done[gelu_nodes[k]] = 1;
      int args[1] = {DNNL_ARG_SRC};
      return finish_simple(p, pd, "gelu", 1, args, &x, y);
    }
  }
  if (n->nin == 2 && binary_of(n, &alg, &comm)) return plan_binary(p, nid, alg, comm);
  if (op_is(n, "nn.bias_add")) {
    /* a bias_add not after an anchor: a broadcast add */
    const dn_entry *xe = &p->g->entries[n->in[0]];
    int axis = (int)int_attr(p, nid, "axis", 1);
    if (axis < 0) axis += xe->ndim;
    int64_t sh[DN_MAX_RANK];
    for (int i = 0; i < xe->ndim; i++) sh[i] = i == axis ? xe->shape[i] : 1;
    int s0 = value_slot(p, n->in[0]);
    int s1 = s0 < 0 ? -1 : slot_reshaped(p, n->in[1], xe->ndim, sh);
    if (s1 < 0) return -1;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = new_attr();
    dnnl_status_t st = dnnl_binary_primitive_desc_create(&pd, p->s->eng, dnnl_binary_add,
                                                         p->s->slots[s0].md, p->s->slots[s1].md,
                                                         p->s->slots[s0].md, attr);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return fail(p, "oneDNN: no binary for nn.bias_add (status %d)", (int)st);
    int args[2] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1}, slots[2] = {s0, s1};
    return finish_simple(p, pd, "bias_add", 2, args, slots, n->out[0]);
  }
  return fail(p, "the dnnl engine does not implement '%s'", n->op);
}

/* ---------------------------------------------------------------------------------- */
/* Init, run, destroy                                                                  */
/* ---------------------------------------------------------------------------------- */

static void free_ws(dn_state *s, ws *w) {
  if (!w) return;
  if (w->mem)
    for (int i = 0; i < s->nslots; i++)
      if (w->mem[i]) dnnl_memory_destroy(w->mem[i]);
  if (w->scratch_mem)
    for (int i = 0; i < s->nsteps; i++)
      if (w->scratch_mem[i]) dnnl_memory_destroy(w->scratch_mem[i]);
  if (w->stream) dnnl_stream_destroy(w->stream);
  free(w->mem);
  free(w->scratch_mem);
  free(w->arena);
  free(w->scratch);
  free(w);
}

static void dn_destroy(dn_state *s) {
  if (!s) return;
  while (s->pool) {
    ws *w = s->pool;
    s->pool = w->next;
    free_ws(s, w);
  }
  for (int i = 0; i < s->nsteps; i++) {
    if (s->steps[i].prim) dnnl_primitive_destroy(s->steps[i].prim);
    if (s->steps[i].scratch_md) dnnl_memory_desc_destroy(s->steps[i].scratch_md);
  }
  for (int i = 0; i < s->nslots; i++)
    if (s->slots[i].md) dnnl_memory_desc_destroy(s->slots[i].md);
  for (int i = 0; i < s->nowned; i++) free(s->owned[i]);
  free(s->owned);
  free(s->steps);
  free(s->slots);
  if (s->eng) dnnl_engine_destroy(s->eng);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static int plan_outputs(planner *p) {
  const dn_graph *g = p->g;
  dn_state *s = p->s;
  for (int k = 0; k < g->n_outputs; k++) {
    int e = g->outputs[k];
    if (e < 0) continue;
    const dn_entry *en = &g->entries[e];
    int have = value_slot(p, e);
    if (have < 0) return -1;
    dnnl_memory_desc_t plain = md_plain(en->ndim, en->shape);
    if (!plain) return fail(p, "oneDNN: cannot describe output %d", k);
    int root = s->slots[have].root;
    int claimed = 0;
    for (int j = 0; j < k; j++) {
      if (g->outputs[j] < 0) continue;
      int other = p->entry_slot[g->outputs[j]];
      if (other >= 0 && s->slots[other].root == root) claimed = 1;
    }
    /* write the output buffer directly when the value is plain and lives alone in the arena */
    if (!claimed && s->slots[root].kind == LOC_ARENA && md_equal(s->slots[have].md, plain) &&
        s->slots[root].size == s->slots[have].size) {
      s->slots[root].kind = LOC_OUTPUT;
      s->slots[root].index = k;
      dnnl_memory_desc_destroy(plain);
      continue;
    }
    int out = new_slot(p, plain, LOC_OUTPUT);
    if (out < 0) return -1;
    s->slots[out].index = k;
    dnnl_primitive_desc_t pd = NULL;
    DN_CHECK(p, dnnl_reorder_primitive_desc_create(&pd, s->slots[have].md, s->eng, plain, s->eng,
                                                   NULL),
             "output reorder");
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, slots[2] = {have, out};
    if (add_step(p, pd, "output", 2, args, slots) < 0) return -1;
  }
  return 0;
}

static dn_state *dn_init(const dn_graph *g, int num_threads, char *err, size_t errlen) {
  dn_state *s = calloc(1, sizeof(dn_state));
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->nthreads = num_threads > 0 ? num_threads : 1;
  s->n_inputs = g->n_inputs;
  s->n_outputs = g->n_outputs;
  planner P = {0};
  planner *p = &P;
  p->s = s;
  p->g = g;
  p->err = err;
  p->errlen = errlen;
  int ne = g->n_entries, nn = g->n_nodes;
  p->entry_slot = malloc((size_t)(ne ? ne : 1) * sizeof(int));
  p->uses = calloc((size_t)(ne ? ne : 1), sizeof(int));
  p->consumer = malloc((size_t)(ne ? ne : 1) * sizeof(int));
  p->is_output = calloc((size_t)(ne ? ne : 1), sizeof(int));
  p->produced_at = malloc((size_t)(ne ? ne : 1) * sizeof(int));
  p->done = calloc((size_t)(nn ? nn : 1), sizeof(int));
  int ok = p->entry_slot && p->uses && p->consumer && p->is_output && p->done && p->produced_at;
  if (!ok) {
    fail(p, "out of memory");
    goto bad;
  }
  for (int e = 0; e < ne; e++) {
    p->entry_slot[e] = -1;
    p->consumer[e] = -1;
    p->produced_at[e] = -1;
  }
  for (int i = 0; i < nn; i++) {
    const dn_node *n = &g->nodes[i];
    for (int k = 0; k < n->nin; k++) {
      int e = n->in[k];
      if (e < 0 || e >= ne) {
        fail(p, "node %d reads entry %d, out of range", i, e);
        goto bad;
      }
      p->uses[e]++;
      p->consumer[e] = i;
    }
    for (int k = 0; k < n->nout; k++) {
      int e = n->out[k];
      if (e < 0 || e >= ne) {
        fail(p, "node %d writes entry %d, out of range", i, e);
        goto bad;
      }
      p->produced_at[e] = i;
    }
  }
  for (int k = 0; k < g->n_outputs; k++) {
    if (g->outputs[k] < 0) continue;
    p->uses[g->outputs[k]]++;
    p->is_output[g->outputs[k]] = 1;
  }
  for (int e = 0; e < ne; e++) {
    const dn_entry *en = &g->entries[e];
    if (en->ndim > DN_MAX_RANK - 1) {
      fail(p, "entry %d has rank %d (at most %d)", e, en->ndim, DN_MAX_RANK - 1);
      goto bad;
    }
  }
  if (dnnl_engine_create(&s->eng, dnnl_cpu, 0) != dnnl_success) {
    fail(p, "oneDNN: cannot create a CPU engine");
    goto bad;
  }
  for (int k = 0; k < g->n_inputs; k++) {
    int e = g->inputs[k];
    const dn_entry *en = &g->entries[e];
    if (!en->is_f32) {
      fail(p, "input %d: oneDNN computes in f32 only", k);
      goto bad;
    }
    int id = new_slot(p, md_plain(en->ndim, en->shape), LOC_INPUT);
    if (id < 0) goto bad;
    s->slots[id].index = k;
    p->entry_slot[e] = id;
  }
  for (int i = 0; i < nn; i++) {
    if (p->done[i]) continue;
    if (plan_node(p, i) < 0) goto bad;
    p->done[i] = 1;
  }
  if (plan_outputs(p) < 0) goto bad;
  free(p->entry_slot);
  free(p->uses);
  free(p->consumer);
  free(p->is_output);
  free(p->done);
  free(p->produced_at);
  return s;
bad:
  free(p->entry_slot);
  free(p->uses);
  free(p->consumer);
  free(p->is_output);
  free(p->done);
  free(p->produced_at);
  dn_destroy(s);
  return NULL;
}

static ws *make_ws(dn_state *s) {
  ws *w = calloc(1, sizeof(ws));
  if (!w) return NULL;
  w->mem = calloc((size_t)(s->nslots ? s->nslots : 1), sizeof(dnnl_memory_t));
  w->scratch_mem = calloc((size_t)(s->nsteps ? s->nsteps : 1), sizeof(dnnl_memory_t));
  if (!w->mem || !w->scratch_mem) goto bad;
  size_t asz = s->arena_size ? s->arena_size : DN_ALIGN;
  asz = (asz + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN;
  w->arena = aligned_alloc(DN_ALIGN, asz);
  if (!w->arena) goto bad;
  if (s->scratch_size) {
    size_t ssz = (s->scratch_size + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN;
    w->scratch = aligned_alloc(DN_ALIGN, ssz);
    if (!w->scratch) goto bad;
  }
  if (dnnl_stream_create(&w->stream, s->eng, dnnl_stream_default_flags) != dnnl_success) goto bad;
  for (int i = 0; i < s->nslots; i++) {
    const slot *sl = &s->slots[i];
    const slot *root = &s->slots[sl->root];
    void *h = DNNL_MEMORY_NONE;
    if (root->kind == LOC_ARENA) h = (char *)w->arena + root->offset;
    else if (root->kind == LOC_CONST) h = root->cptr;
    if (dnnl_memory_create(&w->mem[i], sl->md, s->eng, h) != dnnl_success) goto bad;
  }
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].scratch_md &&
        dnnl_memory_create(&w->scratch_mem[i], s->steps[i].scratch_md, s->eng, w->scratch) !=
            dnnl_success)
      goto bad;
  return w;
bad:
  free_ws(s, w);
  return NULL;
}

static int dn_run(dn_state *s, void *const *inputs, void *const *outputs, char *err, size_t errlen) {
  pthread_mutex_lock(&s->lock);
  ws *w = s->pool;
  if (w) s->pool = w->next;
  pthread_mutex_unlock(&s->lock);
  if (!w) {
    w = make_ws(s);
    if (!w) {
      snprintf(err, errlen, "dnnl: cannot allocate a workspace");
      return -1;
    }
  }
  int rc = 0;
  for (int i = 0; i < s->nslots; i++) {
    const slot *root = &s->slots[s->slots[i].root];
    void *h = NULL;
    if (root->kind == LOC_INPUT) h = inputs[root->index];
    else if (root->kind == LOC_OUTPUT) h = outputs[root->index];
    else continue;
    if (dnnl_memory_set_data_handle(w->mem[i], h) != dnnl_success) {
      snprintf(err, errlen, "dnnl: cannot bind an input or output buffer");
      rc = -1;
      break;
    }
  }
  omp_set_num_threads(s->nthreads);

  for (int i = 0; rc == 0 && i < s->nsteps; i++) {
    const step *st = &s->steps[i];
    dnnl_exec_arg_t args[DN_MAX_ARGS + 1];
    int na = 0;
    for (int k = 0; k < st->nargs; k++) {
      args[na].arg = st->arg[k];
      args[na++].memory = w->mem[st->slot[k]];
    }
    if (w->scratch_mem[i]) {
      args[na].arg = DNNL_ARG_SCRATCHPAD;
      args[na++].memory = w->scratch_mem[i];
    }
    dnnl_status_t r = dnnl_primitive_execute(st->prim, w->stream, na, args);
    if (r != dnnl_success) {
      snprintf(err, errlen, "dnnl: executing step %d (%s) failed (status %d)", i, st->what,
               (int)r);
      rc = -1;
    }
  }
  if (rc == 0 && dnnl_stream_wait(w->stream) != dnnl_success) {
    snprintf(err, errlen, "dnnl: waiting for the stream failed");
    rc = -1;
  }
  pthread_mutex_lock(&s->lock);
  w->next = s->pool;
  s->pool = w;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

static size_t dn_describe(const dn_state *s, char *buf, size_t len) {
  size_t used = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < s->nsteps && used + 1 < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? "; " : "", s->steps[i].what);
    if (w < 0) break;
    used += (size_t)w;
  }
  return used < len ? used : len - 1;
}

/* ---------------------------------------------------------------------------------- */
/* The engine interface (byoc_graph_engine.h)                                         */
/* ---------------------------------------------------------------------------------- */

/* Composite nodes are flattened into their bodies: the planner does its own fusion, so
   a `dnnl.conv2d_bias_relu` composite and the same ops side by side plan alike. */
typedef struct dn_view {
  const byoc_graph_node **flat;
  dn_entry *entries;
  dn_node *nodes;
  int32_t *outputs;
} dn_view;

static int view_attr_ints(const void *ctx, int node, const char *name, int64_t *out, int max) {
  const dn_view *v = ctx;
  const byoc_graph_attr *a = byoc_graph_attr_find(v->flat[node], name);
  if (a == NULL) return -1;
  if (a->kind == BYOC_ATTR_INT) {
    if (max > 0) out[0] = a->i;
    return 1;
  }
  if (a->kind != BYOC_ATTR_INTS) return -1;
  for (int64_t i = 0; i < a->count && i < max; i++) out[i] = a->ints[i];
  return (int)a->count;
}

static int view_attr_float(const void *ctx, int node, const char *name, double *out) {
  const dn_view *v = ctx;
  const byoc_graph_attr *a = byoc_graph_attr_find(v->flat[node], name);
  if (a == NULL) return -1;
  if (a->kind == BYOC_ATTR_FLOAT) *out = a->f;
  else if (a->kind == BYOC_ATTR_INT) *out = (double)a->i;
  else return -1;
  return 0;
}

static void view_free(dn_view *v) {
  free(v->flat);
  free(v->entries);
  free(v->nodes);
  free(v->outputs);
}

static int default_threads(int32_t n) {
  if (n > 0) return n;
  const char *env = getenv("BYOC_NUM_THREADS");
  if (env != NULL && atoi(env) > 0) return atoi(env);
  return omp_get_max_threads();
}

static dn_state *byoc_dn_plan(const byoc_graph *graph, int32_t num_threads) {
  dn_view v = {0};
  int nflat = 0;
  for (int32_t i = 0; i < graph->num_nodes; i++)
    nflat += graph->nodes[i].num_body > 0 ? graph->nodes[i].num_body : 1;
  int ne = graph->num_entries;
  v.flat = calloc((size_t)(nflat ? nflat : 1), sizeof(*v.flat));
  v.nodes = calloc((size_t)(nflat ? nflat : 1), sizeof(*v.nodes));
  v.entries = calloc((size_t)(ne ? ne : 1), sizeof(*v.entries));
  v.outputs = calloc((size_t)(graph->num_outputs ? graph->num_outputs : 1), sizeof(int32_t));
  if (!v.flat || !v.nodes || !v.entries || !v.outputs) {
    view_free(&v);
    byoc_fail("dnnl: out of memory");
    return NULL;
  }
  int k = 0;
  for (int32_t i = 0; i < graph->num_nodes; i++) {
    const byoc_graph_node *n = &graph->nodes[i];
    if (n->num_body > 0) {
      for (int32_t j = 0; j < n->num_body; j++) v.flat[k++] = &n->body[j];
    } else {
      v.flat[k++] = n;
    }
  }
  for (int i = 0; i < nflat; i++) {
    const byoc_graph_node *n = v.flat[i];
    v.nodes[i].op = n->op;
    v.nodes[i].nin = n->num_inputs;
    v.nodes[i].in = n->inputs;
    v.nodes[i].nout = n->num_outputs;
    v.nodes[i].out = n->outputs;
  }
  for (int e = 0; e < ne; e++) {
    const byoc_graph_entry *ge = &graph->entries[e];
    if (ge->ndim > DN_MAX_RANK) {
      view_free(&v);
      byoc_fail("dnnl: entry %d has rank %d (at most %d)", e, (int)ge->ndim, DN_MAX_RANK);
      return NULL;
    }
    v.entries[e].is_f32 = byoc_graph_entry_is_f32(ge);
    v.entries[e].ndim = ge->ndim;
    for (int d = 0; d < ge->ndim; d++) v.entries[e].shape[d] = ge->shape[d];
    v.entries[e].data = ge->kind == BYOC_ENTRY_CONST ? ge->data : NULL;
  }
  /* the outputs the engine writes: those a node produces, at their first position */
  for (int32_t o = 0; o < graph->num_outputs; o++) {
    int32_t e = graph->outputs[o];
    const byoc_graph_entry *ge = &graph->entries[e];
    int produced = ge->kind == BYOC_ENTRY_NODE || ge->kind == BYOC_ENTRY_INNER;
    v.outputs[o] = produced && ge->output == o ? e : -1;
  }
  dn_graph g = {
      .n_entries = ne,
      .entries = v.entries,
      .n_nodes = nflat,
      .nodes = v.nodes,
      .n_inputs = graph->num_inputs,
      .inputs = graph->inputs,
      .n_outputs = graph->num_outputs,
      .outputs = v.outputs,
      .attr_ints = view_attr_ints,
      .attr_float = view_attr_float,
      .ctx = &v,
  };
  char err[512];
  err[0] = 0;
  int threads = default_threads(num_threads);
  /* oneDNN sizes a primitive's work split by omp_get_max_threads() when it is created: the
     plan is built with the thread count it will run with (set_num_threads rebuilds it) */
  int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  dn_state *s = dn_init(&g, threads, err, sizeof err);
  omp_set_num_threads(before);
  view_free(&v);
  if (s == NULL) {
    byoc_fail("dnnl (%s): %s", graph->name ? graph->name : "?", err);
    return NULL;
  }
  const char *verbose = getenv("BYOC_DNNL_VERBOSE");
  if (verbose != NULL && verbose[0] != 0 && verbose[0] != '0') {
    /* the plan, one step per primitive: "conv2d+2:brg:avx2; ..." */
    char plan[4096];
    dn_describe(s, plan, sizeof plan);
    fprintf(stderr, "dnnl plan %s: %s\n", graph->name ? graph->name : "?", plan);
  }
  return s;
}

/* The engine's state: the plan, and the graph it was built from (valid until destroy), so
   that a new thread count can rebuild it. */
typedef struct dn_engine_state {
  const byoc_graph *graph;
  dn_state *plan;
} dn_engine_state;

static void *byoc_dn_init(const byoc_graph *graph, int32_t num_threads,
                          size_t *workspace_bytes) {
  dn_engine_state *e = calloc(1, sizeof *e);
  if (e == NULL) {
    byoc_fail("dnnl: out of memory");
    return NULL;
  }
  e->graph = graph;
  e->plan = byoc_dn_plan(graph, num_threads);
  if (e->plan == NULL) {
    free(e);
    return NULL;
  }
  *workspace_bytes = 0; /* the engine pools its own workspaces (memory objects are bound) */
  return e;
}

#define DN_MAX_IO 64

static int32_t byoc_dn_run(void *state, DLTensor *const *inputs, DLTensor *const *outputs,
                               void *workspace) {
  (void)workspace;
  dn_state *s = ((dn_engine_state *)state)->plan;
  void *in[DN_MAX_IO], *out[DN_MAX_IO];
  if (s->n_inputs > DN_MAX_IO || s->n_outputs > DN_MAX_IO)
    return byoc_fail("dnnl: more than %d inputs or outputs", DN_MAX_IO);
  for (int i = 0; i < s->n_inputs; i++)
    in[i] = (char *)inputs[i]->data + inputs[i]->byte_offset;
  for (int i = 0; i < s->n_outputs; i++)
    out[i] = outputs[i] ? (char *)outputs[i]->data + outputs[i]->byte_offset : NULL;
  char err[512];
  if (dn_run(s, in, out, err, sizeof err) != 0) return byoc_fail("%s", err);
  return 0;
}

/* No run is in flight (the runtime base holds its lock): a different count rebuilds the
   plan for it, keeping the old one if that fails. */
static int32_t byoc_dn_set_num_threads(void *state, int32_t n) {
  dn_engine_state *e = state;
  if (n < 1) return byoc_fail("dnnl: set_num_threads(%d): need at least 1", (int)n);
  if (e->plan->nthreads == n) return 0;
  dn_state *plan = byoc_dn_plan(e->graph, n);
  if (plan == NULL) return -1;
  dn_destroy(e->plan);
  e->plan = plan;
  return 0;
}

static void byoc_dn_destroy(void *state) {
  dn_engine_state *e = state;
  if (e == NULL) return;
  dn_destroy(e->plan);
  free(e);
}

static const byoc_graph_engine DNNL_ENGINE = {
    BYOC_GRAPH_ENGINE_ABI,  "dnnl", byoc_dn_init, byoc_dn_run,
    byoc_dn_set_num_threads, byoc_dn_destroy,
};

/* byoc_graph_engine_def is in dnnl_int8.c (compiled next): int8 graphs there, others here. */

