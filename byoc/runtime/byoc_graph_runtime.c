/*
 * byoc_graph_runtime.c — the native graph runtime base (see byoc_graph_runtime.h,
 * byoc_graph_engine.h and docs/graph.md).
 *
 * Compiled as the first part of one translation unit whose second part is the
 * target's engine. Loading reads the version-1 blob through a bounds-checked
 * cursor; every count is checked against the bytes left before anything is
 * allocated for it, every id against its table, every dtype, rank, dim and size
 * against the limits, and the graph structure (each value defined once, before
 * its uses; composite bodies closed) before the engine sees it. A malformed blob
 * is a NULL return with a message, never a crash.
 *
 * Runs check their DLTensors exactly as the generated C does (byoc_check_tensor,
 * byoc_check_disjoint), take a per-thread workspace of the size the engine asked
 * for (byoc_workspace: allocated on a thread's first run), and pass a gate that
 * set_num_threads closes: it waits for the runs in flight only (byoc_run_gate_).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c11 */
#endif
#include "byoc_graph_engine.h"
#include "byoc_graph_runtime.h"

#define BYOC_GRAPH_MAGIC "BYOCGRPH"
#define BYOC_GRAPH_HEADER 24
#define BYOC_GRAPH_MAX_STRING 4096
#define BYOC_GRAPH_MAX_BYTES ((uint64_t)1 << 40)

/* ---- an arena: every allocation of a module, freed together ------------- */

typedef struct {
  void** blocks;
  size_t count;
  size_t capacity;
} byoc_arena_;

static void* byoc_arena_alloc_(byoc_arena_* a, size_t n, size_t align) {
  if (a->count == a->capacity) {
    size_t cap = a->capacity ? a->capacity * 2 : 64;
    void** grown = (void**)realloc(a->blocks, cap * sizeof *grown);
    if (grown == NULL) return NULL;
    a->blocks = grown;
    a->capacity = cap;
  }
  size_t size = n == 0 ? align : (n + align - 1) / align * align;
  if (size < n) return NULL;
  void* p = aligned_alloc(align, size);
  if (p == NULL) return NULL;
  memset(p, 0, size);
  a->blocks[a->count++] = p;
  return p;
}

static void byoc_arena_free_(byoc_arena_* a) {
  for (size_t i = 0; i < a->count; ++i) free(a->blocks[i]);
  free(a->blocks);
  a->blocks = NULL;
  a->count = a->capacity = 0;
}

/* ---- the module ------------------------------------------------------------ */

typedef struct {
  const char* name;
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[BYOC_GRAPH_MAX_RANK];
  uint64_t nbytes;
  const void* data;
} byoc_graph_const_;

typedef struct {
  byoc_graph view;
  void* state;       /* the engine's, NULL until init succeeded */
  size_t workspace;  /* bytes per run */
  int32_t num_args;
  const char** arg_labels; /* "input 'x' (#0)" */
  const char** arg_names;
  int64_t* arg_nbytes;     /* per argument, for byoc_check_disjoint */
  int32_t* copy_from;      /* per output: -1, or the argument index (input) it copies */
  const void** copy_data;  /* per output: constant data it copies, or NULL */
} byoc_graph_inst_;

/*
 * Runs and set_num_threads: a writer-preferring gate. Runs enter while no thread count
 * change is waiting; a change waits only for the runs already in flight, and runs that
 * arrive meanwhile wait for it. (A pthread_rwlock_t lets a stream of readers starve the
 * writer: with glibc's default, set_num_threads under eight looping runners took up to
 * seconds.)
 */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t changed; /* a run left, or a change finished */
  int32_t runs;           /* runs in flight */
  int32_t changes;        /* set_num_threads calls waiting or in progress */
  bool changing;          /* one of them holds the gate */
} byoc_run_gate_;

static int byoc_gate_init_(byoc_run_gate_* g) {
  g->runs = g->changes = 0;
  g->changing = false;
  if (pthread_mutex_init(&g->mu, NULL) != 0) return -1;
  if (pthread_cond_init(&g->changed, NULL) != 0) {
    pthread_mutex_destroy(&g->mu);
    return -1;
  }
  return 0;
}

static void byoc_gate_destroy_(byoc_run_gate_* g) {
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->mu);
}

static void byoc_gate_run_enter_(byoc_run_gate_* g) {
  pthread_mutex_lock(&g->mu);
  while (g->changes > 0) pthread_cond_wait(&g->changed, &g->mu);
  g->runs++;
  pthread_mutex_unlock(&g->mu);
}

static void byoc_gate_run_exit_(byoc_run_gate_* g) {
  pthread_mutex_lock(&g->mu);
  if (--g->runs == 0 && g->changes > 0) pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->mu);
}

static void byoc_gate_change_enter_(byoc_run_gate_* g) {
  pthread_mutex_lock(&g->mu);
  g->changes++;
  while (g->runs > 0 || g->changing) pthread_cond_wait(&g->changed, &g->mu);
  g->changing = true;
  pthread_mutex_unlock(&g->mu);
}

static void byoc_gate_change_exit_(byoc_run_gate_* g) {
  pthread_mutex_lock(&g->mu);
  g->changing = false;
  g->changes--;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->mu);
}

struct byoc_graph_module {
  byoc_arena_ arena;
  const byoc_graph_engine* engine;
  int32_t num_constants;
  byoc_graph_const_* constants;
  int32_t num_graphs;
  byoc_graph_inst_* graphs;
  int32_t num_threads;
  byoc_run_gate_ gate;
};

/* ---- the cursor -------------------------------------------------------------- */

typedef struct {
  const uint8_t* p;
  uint64_t left;
  const char* where; /* what is being read, for messages */
} byoc_cursor_;

static int32_t byoc_rd_(byoc_cursor_* c, void* out, uint64_t n) {
  if (n > c->left) {
    memset(out, 0, (size_t)n); /* callers stop on the error; this keeps every path defined */
    return byoc_fail("graph blob truncated while reading %s", c->where);
  }
  memcpy(out, c->p, (size_t)n);
  c->p += n;
  c->left -= n;
  return 0;
}

static int32_t byoc_rd_u8_(byoc_cursor_* c, uint8_t* v) { return byoc_rd_(c, v, 1); }

static int32_t byoc_rd_u32_(byoc_cursor_* c, uint32_t* v) {
  uint8_t b[4];
  if (byoc_rd_(c, b, 4)) return -1;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return 0;
}

static int32_t byoc_rd_u64_(byoc_cursor_* c, uint64_t* v) {
  uint8_t b[8];
  if (byoc_rd_(c, b, 8)) return -1;
  uint64_t x = 0;
  for (int i = 7; i >= 0; --i) x = x << 8 | b[i];
  *v = x;
  return 0;
}

static int32_t byoc_rd_i64_(byoc_cursor_* c, int64_t* v) {
  uint64_t u;
  if (byoc_rd_u64_(c, &u)) return -1;
  memcpy(v, &u, sizeof u);
  return 0;
}

static int32_t byoc_rd_f64_(byoc_cursor_* c, double* v) {
  uint64_t u;
  if (byoc_rd_u64_(c, &u)) return -1;
  memcpy(v, &u, sizeof u);
  return 0;
}

/* A count of items each at least `min_size` bytes: no larger than what is left. */
static int32_t byoc_rd_count_(byoc_cursor_* c, uint32_t* n, uint64_t min_size, uint32_t limit) {
  if (byoc_rd_u32_(c, n)) return -1;
  if (*n > limit || (min_size > 0 && (uint64_t)*n > c->left / min_size))
    return byoc_fail("graph blob: %s count %u is larger than the blob allows", c->where,
                     (unsigned)*n);
  return 0;
}

/* A string (u32 length + bytes, no NUL inside), copied NUL-terminated into the arena. */
static int32_t byoc_rd_str_(byoc_cursor_* c, byoc_arena_* a, const char** out, uint32_t* len) {
  uint32_t n;
  if (byoc_rd_u32_(c, &n)) return -1;
  if (n > BYOC_GRAPH_MAX_STRING || n > c->left)
    return byoc_fail("graph blob: a string of %u bytes in %s runs past the end or the limit",
                     (unsigned)n, c->where);
  char* s = (char*)byoc_arena_alloc_(a, (size_t)n + 1, 8);
  if (s == NULL) return byoc_fail("graph blob: out of memory");
  if (byoc_rd_(c, s, n)) return -1;
  if (memchr(s, '\0', n) != NULL) return byoc_fail("graph blob: a string in %s holds a NUL", c->where);
  s[n] = '\0';
  *out = s;
  if (len) *len = n;
  return 0;
}

static bool byoc_dtype_ok_(uint8_t code, uint8_t bits) {
  switch (code) {
    case kDLFloat: return bits == 16 || bits == 32 || bits == 64;
    case kDLInt:
    case kDLUInt: return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case kDLBool: return bits == 8;
    default: return false;
  }
}

/* dtype (code, bits), rank, dims; fills numel and nbytes. */
static int32_t byoc_rd_type_(byoc_cursor_* c, DLDataType* dt, int32_t* ndim, int64_t* shape,
                             int64_t* numel, uint64_t* nbytes) {
  uint8_t code, bits, rank;
  if (byoc_rd_u8_(c, &code) || byoc_rd_u8_(c, &bits) || byoc_rd_u8_(c, &rank)) return -1;
  if (!byoc_dtype_ok_(code, bits))
    return byoc_fail("graph blob: %s has an unknown dtype (code %u, %u bits)", c->where,
                     (unsigned)code, (unsigned)bits);
  if (rank > BYOC_GRAPH_MAX_RANK)
    return byoc_fail("graph blob: %s has rank %u, above %d", c->where, (unsigned)rank,
                     BYOC_GRAPH_MAX_RANK);
  dt->code = code;
  dt->bits = bits;
  dt->lanes = 1;
  *ndim = rank;
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (byoc_rd_i64_(c, &shape[i])) return -1;
    if (shape[i] < 0 || (uint64_t)shape[i] > BYOC_GRAPH_MAX_BYTES)
      return byoc_fail("graph blob: %s has dim %lld", c->where, (long long)shape[i]);
    if (shape[i] != 0 && n > BYOC_GRAPH_MAX_BYTES / (uint64_t)shape[i])
      return byoc_fail("graph blob: %s is larger than the runtime allows", c->where);
    n *= (uint64_t)shape[i];
  }
  if (n > BYOC_GRAPH_MAX_BYTES / 8) return byoc_fail("graph blob: %s is too large", c->where);
  *numel = (int64_t)n;
  *nbytes = n * (bits / 8);
  return 0;
}

static bool byoc_same_type_(DLDataType a, int32_t an, const int64_t* as, DLDataType b, int32_t bn,
                            const int64_t* bs) {
  if (a.code != b.code || a.bits != b.bits || an != bn) return false;
  for (int32_t i = 0; i < an; ++i)
    if (as[i] != bs[i]) return false;
  return true;
}

/* ---- graphs ------------------------------------------------------------------- */

static int32_t byoc_rd_ids_(byoc_cursor_* c, byoc_arena_* a, int32_t num_entries, int32_t* n,
                            const int32_t** out) {
  uint32_t count;
  if (byoc_rd_count_(c, &count, 4, 1u << 24)) return -1;
  int32_t* ids = (int32_t*)byoc_arena_alloc_(a, (size_t)count * 4, 8);
  if (ids == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t v;
    if (byoc_rd_u32_(c, &v)) return -1;
    if (v >= (uint32_t)num_entries)
      return byoc_fail("graph blob: %s refers to entry %u of %d", c->where, (unsigned)v,
                       (int)num_entries);
    ids[i] = (int32_t)v;
  }
  *n = (int32_t)count;
  *out = ids;
  return 0;
}

static int32_t byoc_rd_node_(byoc_cursor_* c, byoc_arena_* a, int32_t num_entries,
                             byoc_graph_node* node, int depth) {
  uint32_t n;
  if (byoc_rd_str_(c, a, &node->op, NULL)) return -1;
  if (node->op[0] == '\0') return byoc_fail("graph blob: a node in %s has no op name", c->where);
  if (byoc_rd_count_(c, &n, 5, 1u << 16)) return -1;
  byoc_graph_attr* attrs = (byoc_graph_attr*)byoc_arena_alloc_(a, (size_t)n * sizeof *attrs, 8);
  if (attrs == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < n; ++i) {
    byoc_graph_attr* at = &attrs[i];
    uint8_t kind;
    uint32_t len;
    if (byoc_rd_str_(c, a, &at->name, NULL) || byoc_rd_u8_(c, &kind)) return -1;
    at->kind = kind;
    switch (kind) {
      case BYOC_ATTR_INT:
        if (byoc_rd_i64_(c, &at->i)) return -1;
        at->count = 1;
        break;
      case BYOC_ATTR_FLOAT:
        if (byoc_rd_f64_(c, &at->f)) return -1;
        at->count = 1;
        break;
      case BYOC_ATTR_STRING:
        if (byoc_rd_str_(c, a, &at->s, &len)) return -1;
        at->count = len;
        break;
      case BYOC_ATTR_INTS:
      case BYOC_ATTR_FLOATS: {
        uint32_t k;
        if (byoc_rd_count_(c, &k, 8, 1u << 24)) return -1;
        void* vals = byoc_arena_alloc_(a, (size_t)k * 8, 8);
        if (vals == NULL) return byoc_fail("graph blob: out of memory");
        for (uint32_t j = 0; j < k; ++j) {
          if (kind == BYOC_ATTR_INTS ? byoc_rd_i64_(c, &((int64_t*)vals)[j])
                                     : byoc_rd_f64_(c, &((double*)vals)[j]))
            return -1;
        }
        at->count = k;
        if (kind == BYOC_ATTR_INTS)
          at->ints = (const int64_t*)vals;
        else
          at->floats = (const double*)vals;
        break;
      }
      default:
        return byoc_fail("graph blob: attribute '%s' of '%s' has unknown kind %u", at->name,
                         node->op, (unsigned)kind);
    }
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(attrs[j].name, at->name) == 0)
        return byoc_fail("graph blob: '%s' has attribute '%s' twice", node->op, at->name);
  }
  node->num_attrs = (int32_t)n;
  node->attrs = attrs;
  if (byoc_rd_ids_(c, a, num_entries, &node->num_inputs, &node->inputs)) return -1;
  if (byoc_rd_ids_(c, a, num_entries, &node->num_outputs, &node->outputs)) return -1;
  if (node->num_outputs == 0) return byoc_fail("graph blob: node '%s' has no outputs", node->op);
  uint32_t nb;
  if (byoc_rd_count_(c, &nb, 16, 1u << 20)) return -1;
  if (nb > 0 && depth > 0)
    return byoc_fail("graph blob: node '%s' inside a composite has a body", node->op);
  byoc_graph_node* body = (byoc_graph_node*)byoc_arena_alloc_(a, (size_t)nb * sizeof *body, 8);
  if (body == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < nb; ++i)
    if (byoc_rd_node_(c, a, num_entries, &body[i], depth + 1)) return -1;
  node->num_body = (int32_t)nb;
  node->body = nb ? body : NULL;
  return 0;
}

/*
 * The structure: each entry is what its kind says, defined once before any use.
 * `defined` is scratch of num_entries bytes.
 */
static int32_t byoc_check_graph_(byoc_graph* g, byoc_graph_entry* entries, uint8_t* defined) {
  const char* gn = g->name;
  for (int32_t i = 0; i < g->num_entries; ++i) defined[i] = 0;
  for (int32_t i = 0; i < g->num_inputs; ++i) {
    int32_t e = g->inputs[i];
    if (entries[e].kind != BYOC_ENTRY_INPUT || entries[e].input >= 0)
      return byoc_fail("graph blob: @%s: input %d is entry %d, not a fresh input entry", gn, (int)i,
                       (int)e);
    entries[e].input = i;
    defined[e] = 1;
  }
  for (int32_t e = 0; e < g->num_entries; ++e) {
    if (entries[e].kind == BYOC_ENTRY_INPUT && entries[e].input < 0)
      return byoc_fail("graph blob: @%s: entry %d is an input the graph does not take", gn, (int)e);
    if (entries[e].kind == BYOC_ENTRY_CONST) defined[e] = 1;
  }
  for (int32_t n = 0; n < g->num_nodes; ++n) {
    const byoc_graph_node* node = &g->nodes[n];
    for (int32_t i = 0; i < node->num_inputs; ++i) {
      int32_t e = node->inputs[i];
      if (!defined[e] || entries[e].kind == BYOC_ENTRY_INNER)
        return byoc_fail("graph blob: @%s: node %d ('%s') reads entry %d before it is defined", gn,
                         (int)n, node->op, (int)e);
    }
    for (int32_t i = 0; i < node->num_body; ++i) {
      const byoc_graph_node* in = &node->body[i];
      for (int32_t k = 0; k < in->num_inputs; ++k) {
        int32_t e = in->inputs[k];
        bool ok = entries[e].kind == BYOC_ENTRY_INNER ? defined[e] == 2 && entries[e].parent == n
                                                      : false;
        for (int32_t j = 0; !ok && j < node->num_inputs; ++j) ok = node->inputs[j] == e;
        if (!ok)
          return byoc_fail("graph blob: @%s: '%s' inside composite '%s' reads entry %d, which is "
                           "neither an input of the composite nor computed before it inside",
                           gn, in->op, node->op, (int)e);
      }
      for (int32_t k = 0; k < in->num_outputs; ++k) {
        int32_t e = in->outputs[k];
        bool of_composite = false;
        for (int32_t j = 0; j < node->num_outputs; ++j) of_composite |= node->outputs[j] == e;
        if (defined[e] || !(entries[e].kind == BYOC_ENTRY_INNER ||
                            (of_composite && entries[e].kind == BYOC_ENTRY_NODE)))
          return byoc_fail("graph blob: @%s: '%s' inside composite '%s' defines entry %d, which "
                           "is defined twice or not a value of the composite",
                           gn, in->op, node->op, (int)e);
        defined[e] = 2;
        if (entries[e].kind == BYOC_ENTRY_INNER) {
          entries[e].node = i;
          entries[e].parent = n;
        }
      }
    }
    for (int32_t i = 0; i < node->num_outputs; ++i) {
      int32_t e = node->outputs[i];
      bool from_body = node->num_body > 0 && defined[e] == 2;
      if (entries[e].kind != BYOC_ENTRY_NODE || (defined[e] && !from_body) ||
          (node->num_body > 0 && !from_body))
        return byoc_fail("graph blob: @%s: node %d ('%s') output entry %d is defined twice, not "
                         "a node entry, or not computed by the composite's body",
                         gn, (int)n, node->op, (int)e);
      defined[e] = 1;
      entries[e].node = n;
    }
    for (int32_t i = 0; i < node->num_body; ++i) /* inner values stay private to the body */
      for (int32_t k = 0; k < node->body[i].num_outputs; ++k)
        if (entries[node->body[i].outputs[k]].kind == BYOC_ENTRY_INNER)
          defined[node->body[i].outputs[k]] = 3;
  }
  for (int32_t e = 0; e < g->num_entries; ++e)
    if (entries[e].kind == BYOC_ENTRY_NODE && entries[e].node < 0)
      return byoc_fail("graph blob: @%s: no node computes entry %d", gn, (int)e);
  if (g->num_outputs == 0) return byoc_fail("graph blob: @%s has no outputs", gn);
  for (int32_t i = 0; i < g->num_outputs; ++i) {
    int32_t e = g->outputs[i];
    if (entries[e].kind == BYOC_ENTRY_INNER)
      return byoc_fail("graph blob: @%s: output %d is a value inside a composite", gn, (int)i);
    if (entries[e].output < 0) entries[e].output = i;
  }
  return 0;
}

static int32_t byoc_rd_graph_(byoc_cursor_* c, byoc_graph_module* m, byoc_graph* g) {
  byoc_arena_* a = &m->arena;
  uint32_t n;
  g->abi_version = BYOC_GRAPH_ENGINE_ABI;
  c->where = "a graph name";
  if (byoc_rd_str_(c, a, &g->name, NULL)) return -1;
  for (int32_t i = 0; i < m->num_graphs; ++i)
    if (m->graphs[i].view.name != NULL && m->graphs[i].view.name != g->name &&
        strcmp(m->graphs[i].view.name, g->name) == 0)
      return byoc_fail("graph blob: two graphs named '%s'", g->name);
  c->where = "the entries";
  if (byoc_rd_count_(c, &n, 8, 1u << 24)) return -1;
  byoc_graph_entry* entries = (byoc_graph_entry*)byoc_arena_alloc_(a, (size_t)n * sizeof *entries, 8);
  uint8_t* defined = (uint8_t*)byoc_arena_alloc_(a, n, 8);
  if (entries == NULL || defined == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < n; ++i) {
    byoc_graph_entry* e = &entries[i];
    uint8_t kind;
    int64_t* shape = (int64_t*)byoc_arena_alloc_(a, BYOC_GRAPH_MAX_RANK * 8, 8);
    if (shape == NULL) return byoc_fail("graph blob: out of memory");
    if (byoc_rd_u8_(c, &kind)) return -1;
    if (kind > BYOC_ENTRY_INNER)
      return byoc_fail("graph blob: @%s: entry %u has unknown kind %u", g->name, (unsigned)i,
                       (unsigned)kind);
    e->kind = kind;
    if (byoc_rd_type_(c, &e->dtype, &e->ndim, shape, &e->numel, &e->nbytes)) return -1;
    e->shape = shape;
    if (byoc_rd_str_(c, a, &e->name, NULL)) return -1;
    e->node = e->parent = e->input = e->output = -1;
    if (kind == BYOC_ENTRY_CONST) {
      const byoc_graph_const_* k = NULL;
      for (int32_t j = 0; j < m->num_constants && k == NULL; ++j)
        if (strcmp(m->constants[j].name, e->name) == 0) k = &m->constants[j];
      if (k == NULL)
        return byoc_fail("graph blob: @%s: entry %u binds constant '%s', which the blob lacks",
                         g->name, (unsigned)i, e->name);
      if (!byoc_same_type_(k->dtype, k->ndim, k->shape, e->dtype, e->ndim, e->shape))
        return byoc_fail("graph blob: @%s: constant '%s' has another dtype or shape than its use",
                         g->name, e->name);
      e->data = k->data;
    }
  }
  uint64_t total = 0; /* engines may add up every entry's size without overflowing */
  for (uint32_t i = 0; i < n; ++i) {
    total += entries[i].nbytes;
    if (total > BYOC_GRAPH_MAX_BYTES)
      return byoc_fail("graph blob: @%s: its values add up to more than %llu bytes", g->name,
                       (unsigned long long)BYOC_GRAPH_MAX_BYTES);
  }
  g->num_entries = (int32_t)n;
  g->entries = entries;
  c->where = "the graph inputs";
  if (byoc_rd_ids_(c, a, g->num_entries, &g->num_inputs, &g->inputs)) return -1;
  c->where = "the graph outputs";
  if (byoc_rd_ids_(c, a, g->num_entries, &g->num_outputs, &g->outputs)) return -1;
  c->where = "the nodes";
  if (byoc_rd_count_(c, &n, 16, 1u << 24)) return -1;
  byoc_graph_node* nodes = (byoc_graph_node*)byoc_arena_alloc_(a, (size_t)n * sizeof *nodes, 8);
  if (nodes == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < n; ++i)
    if (byoc_rd_node_(c, a, g->num_entries, &nodes[i], 0)) return -1;
  g->num_nodes = (int32_t)n;
  g->nodes = nodes;
  return byoc_check_graph_(g, entries, defined);
}

/* What a run needs besides the view: argument labels, sizes, and outputs the base fills. */
static int32_t byoc_prepare_inst_(byoc_graph_module* m, byoc_graph_inst_* gi) {
  byoc_arena_* a = &m->arena;
  const byoc_graph* g = &gi->view;
  int32_t n = g->num_inputs + g->num_outputs;
  gi->num_args = n;
  gi->arg_labels = (const char**)byoc_arena_alloc_(a, (size_t)n * sizeof(char*), 8);
  gi->arg_names = (const char**)byoc_arena_alloc_(a, (size_t)n * sizeof(char*), 8);
  gi->arg_nbytes = (int64_t*)byoc_arena_alloc_(a, (size_t)n * 8, 8);
  gi->copy_from = (int32_t*)byoc_arena_alloc_(a, (size_t)g->num_outputs * 4, 8);
  gi->copy_data = (const void**)byoc_arena_alloc_(a, (size_t)g->num_outputs * sizeof(void*), 8);
  if (!gi->arg_labels || !gi->arg_names || !gi->arg_nbytes || !gi->copy_from || !gi->copy_data)
    return byoc_fail("graph runtime: out of memory");
  for (int32_t i = 0; i < n; ++i) {
    bool is_in = i < g->num_inputs;
    const byoc_graph_entry* e = &g->entries[is_in ? g->inputs[i] : g->outputs[i - g->num_inputs]];
    char* label = (char*)byoc_arena_alloc_(a, strlen(e->name) + 64, 8);
    if (label == NULL) return byoc_fail("graph runtime: out of memory");
    if (is_in) {
      snprintf(label, strlen(e->name) + 64, "input '%s' (#%d)", e->name, (int)i);
      gi->arg_names[i] = e->name;
    } else {
      char* name = (char*)byoc_arena_alloc_(a, 32, 8);
      if (name == NULL) return byoc_fail("graph runtime: out of memory");
      snprintf(name, 32, "out%d", (int)(i - g->num_inputs));
      snprintf(label, strlen(e->name) + 64, "output 'out%d' (#%d)", (int)(i - g->num_inputs),
               (int)(i - g->num_inputs));
      gi->arg_names[i] = name;
    }
    gi->arg_labels[i] = label;
    gi->arg_nbytes[i] = (int64_t)e->nbytes;
  }
  for (int32_t o = 0; o < g->num_outputs; ++o) {
    const byoc_graph_entry* e = &g->entries[g->outputs[o]];
    gi->copy_from[o] = -1;
    gi->copy_data[o] = NULL;
    if (e->kind == BYOC_ENTRY_INPUT)
      gi->copy_from[o] = e->input;
    else if (e->kind == BYOC_ENTRY_CONST)
      gi->copy_data[o] = e->data;
    else if (e->output != o)
      gi->copy_from[o] = g->num_inputs + e->output; /* a later copy of an output */
  }
  return 0;
}

static int32_t byoc_parse_(byoc_graph_module* m, const uint8_t* blob, uint64_t size) {
  byoc_arena_* a = &m->arena;
  byoc_cursor_ c = {blob, size, "the header"};
  char magic[8];
  uint32_t version, flags, n;
  uint64_t total;
  if (blob == NULL) return byoc_fail("graph blob: NULL");
  if (byoc_rd_(&c, magic, 8) || memcmp(magic, BYOC_GRAPH_MAGIC, 8) != 0)
    return byoc_fail("not a byoc graph blob (bad magic)");
  if (byoc_rd_u32_(&c, &version) || byoc_rd_u32_(&c, &flags) || byoc_rd_u64_(&c, &total)) return -1;
  if (version != BYOC_GRAPH_FORMAT_VERSION)
    return byoc_fail("graph blob has format version %u; this runtime reads version %d",
                     (unsigned)version, BYOC_GRAPH_FORMAT_VERSION);
  if (flags != 0) return byoc_fail("graph blob has unknown flags %#x", (unsigned)flags);
  if (total != size)
    return byoc_fail("graph blob says it is %llu bytes, it is %llu (truncated?)",
                     (unsigned long long)total, (unsigned long long)size);
  c.where = "the constants";
  if (byoc_rd_count_(&c, &n, 15, 1u << 24)) return -1;
  m->constants = (byoc_graph_const_*)byoc_arena_alloc_(a, (size_t)n * sizeof *m->constants, 8);
  if (m->constants == NULL) return byoc_fail("graph blob: out of memory");
  for (uint32_t i = 0; i < n; ++i) {
    byoc_graph_const_* k = &m->constants[i];
    int64_t numel;
    uint64_t stored;
    c.where = "a constant";
    if (byoc_rd_str_(&c, a, &k->name, NULL)) return -1;
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(m->constants[j].name, k->name) == 0)
        return byoc_fail("graph blob: two constants named '%s'", k->name);
    if (byoc_rd_type_(&c, &k->dtype, &k->ndim, k->shape, &numel, &k->nbytes)) return -1;
    if (byoc_rd_u64_(&c, &stored)) return -1;
    if (stored != k->nbytes)
      return byoc_fail("graph blob: constant '%s' stores %llu bytes, its type needs %llu", k->name,
                       (unsigned long long)stored, (unsigned long long)k->nbytes);
    if (stored > c.left)
      return byoc_fail("graph blob: constant '%s' runs past the end", k->name);
    void* data = byoc_arena_alloc_(a, (size_t)stored, BYOC_ALIGNMENT);
    if (data == NULL) return byoc_fail("graph blob: out of memory for constant '%s'", k->name);
    if (byoc_rd_(&c, data, stored)) return -1;
    k->data = data;
    m->num_constants = (int32_t)(i + 1);
  }
  c.where = "the graphs";
  if (byoc_rd_count_(&c, &n, 20, 1u << 20)) return -1;
  m->graphs = (byoc_graph_inst_*)byoc_arena_alloc_(a, (size_t)n * sizeof *m->graphs, 8);
  if (m->graphs == NULL) return byoc_fail("graph blob: out of memory");
  m->num_graphs = (int32_t)n;
  for (uint32_t i = 0; i < n; ++i) {
    if (byoc_rd_graph_(&c, m, &m->graphs[i].view)) return -1;
    if (byoc_prepare_inst_(m, &m->graphs[i])) return -1;
  }
  if (c.left != 0)
    return byoc_fail("graph blob: %llu bytes after the last graph", (unsigned long long)c.left);
  return 0;
}

/* ---- the exported API --------------------------------------------------------- */

BYOC_EXPORT void byoc_graph_module_free(byoc_graph_module* m) {
  if (m == NULL) return;
  for (int32_t i = 0; i < m->num_graphs; ++i)
    if (m->graphs[i].state != NULL) m->engine->destroy(m->graphs[i].state);
  byoc_gate_destroy_(&m->gate);
  byoc_arena_free_(&m->arena);
  free(m);
}

BYOC_EXPORT byoc_graph_module* byoc_graph_module_load(const uint8_t* blob, uint64_t size,
                                                      int32_t num_threads) {
  const byoc_graph_engine* engine = byoc_graph_engine_def();
  if (engine == NULL || engine->abi_version != BYOC_GRAPH_ENGINE_ABI || engine->init == NULL ||
      engine->run == NULL || engine->destroy == NULL) {
    byoc_fail("graph engine '%s' does not implement engine ABI %d",
              engine && engine->name ? engine->name : "?", BYOC_GRAPH_ENGINE_ABI);
    return NULL;
  }
  byoc_graph_module* m = (byoc_graph_module*)calloc(1, sizeof *m);
  if (m == NULL) {
    byoc_fail("graph runtime: out of memory");
    return NULL;
  }
  if (byoc_gate_init_(&m->gate) != 0) {
    free(m);
    byoc_fail("graph runtime: cannot create a lock");
    return NULL;
  }
  m->engine = engine;
  m->num_threads = num_threads < 1 ? 1 : num_threads;
  if (byoc_parse_(m, blob, size) != 0) {
    m->num_graphs = 0; /* no engine state yet */
    byoc_graph_module_free(m);
    return NULL;
  }
  for (int32_t i = 0; i < m->num_graphs; ++i) {
    byoc_graph_inst_* gi = &m->graphs[i];
    size_t ws = 0;
    byoc_error_message_[0] = '\0';
    gi->state = engine->init(&gi->view, m->num_threads, &ws);
    if (gi->state == NULL) {
      if (byoc_error_message_[0] == '\0')
        byoc_fail("%s: the %s engine could not plan the graph", gi->view.name, engine->name);
      byoc_graph_module_free(m);
      return NULL;
    }
    gi->workspace = ws;
  }
  return m;
}

BYOC_EXPORT int32_t byoc_graph_module_num_graphs(const byoc_graph_module* m) {
  return m ? m->num_graphs : 0;
}

BYOC_EXPORT int32_t byoc_graph_module_find(const byoc_graph_module* m, const char* name) {
  for (int32_t i = 0; m != NULL && name != NULL && i < m->num_graphs; ++i)
    if (strcmp(m->graphs[i].view.name, name) == 0) return i;
  return byoc_fail("graph module has no graph '%s'", name ? name : "(null)");
}

BYOC_EXPORT const char* byoc_graph_module_graph_name(const byoc_graph_module* m, int32_t g) {
  return m != NULL && g >= 0 && g < m->num_graphs ? m->graphs[g].view.name : "";
}

BYOC_EXPORT int32_t byoc_graph_module_num_args(const byoc_graph_module* m, int32_t g,
                                               int32_t* num_inputs, int32_t* num_outputs) {
  if (m == NULL || g < 0 || g >= m->num_graphs) return byoc_fail("no graph #%d", (int)g);
  *num_inputs = m->graphs[g].view.num_inputs;
  *num_outputs = m->graphs[g].view.num_outputs;
  return 0;
}

BYOC_EXPORT int32_t byoc_graph_module_arg(const byoc_graph_module* m, int32_t g, int32_t a,
                                          uint8_t* code, uint8_t* bits, int32_t* ndim,
                                          int64_t* shape, const char** name) {
  if (m == NULL || g < 0 || g >= m->num_graphs) return byoc_fail("no graph #%d", (int)g);
  const byoc_graph_inst_* gi = &m->graphs[g];
  const byoc_graph* v = &gi->view;
  if (a < 0 || a >= gi->num_args) return byoc_fail("@%s has no argument #%d", v->name, (int)a);
  const byoc_graph_entry* e =
      &v->entries[a < v->num_inputs ? v->inputs[a] : v->outputs[a - v->num_inputs]];
  *code = e->dtype.code;
  *bits = e->dtype.bits;
  *ndim = e->ndim;
  for (int32_t i = 0; i < e->ndim; ++i) shape[i] = e->shape[i];
  *name = gi->arg_names[a];
  return 0;
}

BYOC_EXPORT int32_t byoc_graph_run(byoc_graph_module* m, int32_t g, DLTensor** args,
                                   int32_t num_args) {
  if (m == NULL || g < 0 || g >= m->num_graphs) return byoc_fail("no graph #%d", (int)g);
  byoc_graph_inst_* gi = &m->graphs[g];
  const byoc_graph* v = &gi->view;
  if (num_args != gi->num_args)
    return byoc_fail("%s: expected %d arguments (%d inputs, %d outputs), got %d", v->name,
                     (int)gi->num_args, (int)v->num_inputs, (int)v->num_outputs, (int)num_args);
  if (args == NULL && num_args > 0) return byoc_fail("%s: the argument array is NULL", v->name);
  for (int32_t i = 0; i < num_args; ++i) {
    const byoc_graph_entry* e =
        &v->entries[i < v->num_inputs ? v->inputs[i] : v->outputs[i - v->num_inputs]];
    if (byoc_check_tensor(v->name, gi->arg_labels[i], args[i], e->dtype.code, e->dtype.bits,
                          e->ndim, e->shape))
      return -1;
  }
  if (byoc_check_disjoint(v->name, num_args, v->num_outputs, (const DLTensor* const*)args,
                          gi->arg_names, gi->arg_nbytes))
    return -1;
  void* ws = NULL;
  if (gi->workspace > 0) {
    ws = byoc_workspace(gi->workspace);
    if (ws == NULL)
      return byoc_fail("%s: out of memory for a %zu-byte workspace", v->name, gi->workspace);
  }
  byoc_error_message_[0] = '\0';
  byoc_gate_run_enter_(&m->gate);
  int32_t rc = m->engine->run(gi->state, args, args + v->num_inputs, ws);
  byoc_gate_run_exit_(&m->gate);
  if (rc != 0) {
    if (byoc_error_message_[0] == '\0') byoc_fail("%s: the %s engine failed", v->name, m->engine->name);
    return -1;
  }
  for (int32_t o = 0; o < v->num_outputs; ++o) {
    const void* src = gi->copy_data[o];
    if (gi->copy_from[o] >= 0) src = byoc_tensor_data(args[gi->copy_from[o]]);
    if (src != NULL && gi->arg_nbytes[v->num_inputs + o] > 0)
      memcpy(byoc_tensor_data(args[v->num_inputs + o]), src,
             (size_t)gi->arg_nbytes[v->num_inputs + o]);
  }
  return 0;
}

BYOC_EXPORT int32_t byoc_graph_module_set_num_threads(byoc_graph_module* m, int32_t num_threads) {
  if (m == NULL) return byoc_fail("graph module is NULL");
  if (num_threads < 1) return byoc_fail("number of threads must be >= 1, got %d", (int)num_threads);
  int32_t rc = 0;
  byoc_gate_change_enter_(&m->gate);
  m->num_threads = num_threads;
  for (int32_t i = 0; i < m->num_graphs && rc == 0; ++i)
    if (m->engine->set_num_threads != NULL)
      rc = m->engine->set_num_threads(m->graphs[i].state, num_threads);
  byoc_gate_change_exit_(&m->gate);
  return rc;
}

BYOC_EXPORT int32_t byoc_graph_module_num_threads(const byoc_graph_module* m) {
  return m ? m->num_threads : 0;
}

BYOC_EXPORT const char* byoc_graph_engine_name(void) {
  const byoc_graph_engine* e = byoc_graph_engine_def();
  return e && e->name ? e->name : "";
}

BYOC_EXPORT uint32_t byoc_graph_format_version(void) { return BYOC_GRAPH_FORMAT_VERSION; }

/* ---- the engine follows ---------------------------------------------------------- */
