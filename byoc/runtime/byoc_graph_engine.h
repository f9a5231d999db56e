/*
 * byoc_graph_engine.h — the interface a graph engine implements (engine ABI 1).
 *
 * A target that runs its partitions on the native graph runtime
 * (`byoc_graph_runtime.c`, docs/graph.md) supplies only an engine: one C
 * source that includes this header and defines
 *
 *     const byoc_graph_engine* byoc_graph_engine_def(void);
 *
 * returning a static table of four functions (below). The runtime base, the
 * engine and any other engine source of the target are compiled as ONE
 * translation unit (base first, then the engine sources in order) into one
 * shared library, so an engine reports errors exactly like the generated C:
 * `return byoc_fail("...")` (or `byoc_fail(...); return NULL;` in `init`),
 * and the message reaches Python as the exception text. Keep the engine's
 * own functions `static`.
 *
 * Lifetime, per partition graph of a loaded component:
 *
 *   init(graph, num_threads, &workspace_bytes)   once, single-threaded: parse
 *        what it needs from `graph`, bind constants, choose kernels, allocate
 *        everything a run needs -- the execution plan is built here, never in
 *        run(). Returns the engine's state, or NULL after byoc_fail().
 *        `graph` and everything it points to (constant data included) stay
 *        valid and unchanged until destroy(state).
 *   run(state, inputs, outputs, workspace)       any number of times, from any
 *        number of threads AT ONCE: no mutable state shared between calls
 *        without a lock. The base has already checked every DLTensor against
 *        the graph (CPU device, dtype, rank, shape, row-major compact,
 *        aligned to its elements, outputs disjoint from inputs and from each
 *        other). `workspace` is `workspace_bytes` bytes (as init asked; NULL
 *        when 0), 64-byte aligned, private to this call, uninitialised.
 *        Returns 0, or -1 after byoc_fail().
 *   set_num_threads(state, n)                    n >= 1; the base never calls it
 *        while a run() of the same state is in flight (it holds a
 *        writer-preferring gate). Returns 0 or -1 after byoc_fail(). May be NULL if
 *        the engine is single-threaded.
 *   destroy(state)                               once, no run in flight.
 *
 * The graph (one partition):
 *
 *   entries  every value: graph inputs, constants, node outputs, and the
 *            values inside composite bodies. Each has a dtype and a static
 *            shape. Entry ids index `graph->entries`. The base guarantees
 *            the sizes of all entries of a graph add up to at most 2^40
 *            bytes, so an engine can sum them (plus padding) in a size_t.
 *   nodes    top-level nodes in execution (topological) order. `op` is an nn
 *            op name ("nn.conv2d") or a composite's name ("dnnl.conv2d_relu").
 *   body     a composite node carries its body: the inner nn nodes in order,
 *            over the same entry ids. An inner node reads the composite's
 *            inputs (the entries of `node->inputs`, already substituted for
 *            the composite's block arguments), constants, or inner values
 *            (kind BYOC_ENTRY_INNER) that earlier inner nodes produce; the
 *            composite's outputs are produced by inner nodes. So an engine
 *            can match the composite by name and read the inner ops'
 *            attributes (e.g. the conv2d's strides, the clip's bounds), or
 *            simply run the body node by node. Every entry an inner node
 *            reads that is not produced inside the body is also one of the
 *            composite node's inputs.
 *   inputs / outputs   entry ids in run()'s order. An entry that is an output
 *            has `output` >= 0 (its first position in run()'s outputs); the
 *            engine writes every output entry that a node produces into
 *            outputs[entry->output]. Outputs that are inputs or constants, and
 *            the later copies of an entry listed twice, are filled in by the
 *            base after run() returns.
 */
#ifndef BYOC_GRAPH_ENGINE_H_
#define BYOC_GRAPH_ENGINE_H_

#include "byoc_runtime.h"

#define BYOC_GRAPH_ENGINE_ABI 1
#define BYOC_GRAPH_MAX_RANK 8 /* the largest `ndim` of an entry */

/* ---- the graph view ------------------------------------------------------- */

typedef enum {
  BYOC_ENTRY_INPUT = 0, /* a graph input: inputs[entry->input] in run() */
  BYOC_ENTRY_CONST = 1, /* a constant, bound by name at init: `data` */
  BYOC_ENTRY_NODE = 2,  /* an output of a top-level node */
  BYOC_ENTRY_INNER = 3, /* a value produced inside a composite body */
} byoc_graph_entry_kind;

typedef struct {
  int32_t kind;          /* byoc_graph_entry_kind */
  DLDataType dtype;      /* lanes == 1 */
  int32_t ndim;          /* 0 (a scalar) .. 8 */
  const int64_t* shape;  /* ndim dims, each >= 0 */
  int64_t numel;         /* product of the dims */
  uint64_t nbytes;       /* numel * dtype.bits / 8 */
  const char* name;      /* constants: the name they are bound by; inputs: the partition
                            argument's name; others: "" */
  const void* data;      /* constants: row-major data, 64-byte aligned, read only; else NULL */
  int32_t node;          /* the producing node: index in `nodes` (NODE) or in the composite's
                            `body` (INNER, with `parent` the composite's index); -1 otherwise */
  int32_t parent;        /* INNER: index of the composite node in `nodes`; -1 otherwise */
  int32_t input;         /* INPUT: its position in run()'s inputs; -1 otherwise */
  int32_t output;        /* first position in run()'s outputs, or -1 if not a graph output */
} byoc_graph_entry;

typedef enum {
  BYOC_ATTR_INT = 0,    /* `i` (booleans are 0/1) */
  BYOC_ATTR_FLOAT = 1,  /* `f` */
  BYOC_ATTR_STRING = 2, /* `s`, NUL-terminated, `count` bytes before the NUL */
  BYOC_ATTR_INTS = 3,   /* `ints`, `count` values */
  BYOC_ATTR_FLOATS = 4, /* `floats`, `count` values */
} byoc_graph_attr_kind;

typedef struct {
  const char* name; /* the nn op's property name ("strides", "a_min", ...) */
  int32_t kind;     /* byoc_graph_attr_kind */
  int64_t count;
  int64_t i;
  double f;
  const char* s;
  const int64_t* ints;
  const double* floats;
} byoc_graph_attr;

typedef struct byoc_graph_node {
  const char* op; /* "nn.add", or a composite's "<target>.<pattern>" */
  int32_t num_attrs;
  const byoc_graph_attr* attrs; /* every property of the nn op, defaults included;
                                   composites: none (see `body`) */
  int32_t num_inputs;
  const int32_t* inputs; /* entry ids */
  int32_t num_outputs;
  const int32_t* outputs; /* entry ids */
  int32_t num_body;
  const struct byoc_graph_node* body; /* composites: the inner nodes in order; else NULL */
} byoc_graph_node;

typedef struct {
  uint32_t abi_version; /* BYOC_GRAPH_ENGINE_ABI */
  const char* name;     /* the partition's symbol ("dnnl_main_0") */
  int32_t num_entries;
  const byoc_graph_entry* entries;
  int32_t num_nodes;
  const byoc_graph_node* nodes;
  int32_t num_inputs;
  const int32_t* inputs; /* entry ids, run()'s input order */
  int32_t num_outputs;
  const int32_t* outputs; /* entry ids, run()'s output order */
} byoc_graph;

/* ---- the engine --------------------------------------------------------- */

typedef struct {
  uint32_t abi_version; /* BYOC_GRAPH_ENGINE_ABI */
  const char* name;     /* "reference", "dnnl", ... (messages, docs) */
  void* (*init)(const byoc_graph* graph, int32_t num_threads, size_t* workspace_bytes);
  int32_t (*run)(void* state, DLTensor* const* inputs, DLTensor* const* outputs, void* workspace);
  int32_t (*set_num_threads)(void* state, int32_t num_threads);
  void (*destroy)(void* state);
} byoc_graph_engine;

/* Defined by the engine source. */
const byoc_graph_engine* byoc_graph_engine_def(void);

/* ---- helpers for engines ------------------------------------------------ */

/* The attribute `name` of `node`, or NULL. */
static inline const byoc_graph_attr* byoc_graph_attr_find(const byoc_graph_node* node,
                                                          const char* name) {
  for (int32_t i = 0; i < node->num_attrs; ++i)
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  return NULL;
}

/* An INT attribute, or `fallback` if absent or of another kind. */
static inline int64_t byoc_graph_attr_int(const byoc_graph_node* node, const char* name,
                                          int64_t fallback) {
  const byoc_graph_attr* a = byoc_graph_attr_find(node, name);
  return a != NULL && a->kind == BYOC_ATTR_INT ? a->i : fallback;
}

/* A FLOAT attribute (an INT one converted), or `fallback`. */
static inline double byoc_graph_attr_float(const byoc_graph_node* node, const char* name,
                                           double fallback) {
  const byoc_graph_attr* a = byoc_graph_attr_find(node, name);
  if (a == NULL) return fallback;
  if (a->kind == BYOC_ATTR_FLOAT) return a->f;
  if (a->kind == BYOC_ATTR_INT) return (double)a->i;
  return fallback;
}

/* A STRING attribute, or `fallback`. */
static inline const char* byoc_graph_attr_string(const byoc_graph_node* node, const char* name,
                                                 const char* fallback) {
  const byoc_graph_attr* a = byoc_graph_attr_find(node, name);
  return a != NULL && a->kind == BYOC_ATTR_STRING ? a->s : fallback;
}

/* An INTS attribute: its values and *count, or NULL (and *count = 0). */
static inline const int64_t* byoc_graph_attr_ints(const byoc_graph_node* node, const char* name,
                                                  int64_t* count) {
  const byoc_graph_attr* a = byoc_graph_attr_find(node, name);
  if (a == NULL || a->kind != BYOC_ATTR_INTS) {
    *count = 0;
    return NULL;
  }
  *count = a->count;
  return a->ints;
}

/* Whether an entry has dtype float32 (the common case engines test). */
static inline bool byoc_graph_entry_is_f32(const byoc_graph_entry* e) {
  return e->dtype.code == kDLFloat && e->dtype.bits == 32 && e->dtype.lanes == 1;
}

#endif /* BYOC_GRAPH_ENGINE_H_ */
