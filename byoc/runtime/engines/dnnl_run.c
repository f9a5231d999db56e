/*
 * Planning a whole graph (dn_init), running it on pooled workspaces (dn_run), and the
 * byoc_graph_engine.h adapter.
 *
 * Part of the oneDNN engine: compiled as one translation unit after dnnl_engine.c, in the
 * order byoc/targets/dnnl/target.py lists the sources.
 */

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
    for (int k = 0; k < 3; k++)
      if (s->steps[i].reorder[k]) dnnl_primitive_destroy(s->steps[i].reorder[k]);
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

/* ---------------------------------------------------------------------------------- */
/* Threads per primitive                                                               */
/* ---------------------------------------------------------------------------------- */

/* Each primitive gets the engine's thread count only when its work gives every thread at
   least a grain; a smaller one is created and run with one thread, so it opens no OpenMP
   region. A region of libgomp's team ends at a barrier every member must reach: on a
   loaded machine the calling thread waits there for a core for its worker, once per
   primitive, whatever the primitive's size (docs/threads.md, "oneDNN's threads").
   oneDNN fixes a primitive's split when it is created (from omp_get_max_threads()) and
   reads the count again when it runs, so both happen under the count chosen here. The
   grains (DN_MAC_GRAIN, DN_MOVE_GRAIN) are next to add_step in dnnl_engine.c, which
   reorders use too. */

/* The work of node `nid`: multiply-adds for an anchor (*macs = 1), else the elements of
   its operands and result. */
static int64_t node_work(const planner *p, int nid, int *macs) {
  const dn_node *n = &p->g->nodes[nid];
  const dn_entry *y = &p->g->entries[n->out[0]];
  const dn_entry *x = n->nin > 0 ? &p->g->entries[n->in[0]] : y;
  const dn_entry *w = n->nin > 1 ? &p->g->entries[n->in[1]] : NULL;
  *macs = 1;
  if (w != NULL && (op_is(n, "nn.conv2d") || op_is(n, "nn.conv2d_transpose"))) {
    /* conv2d: each output sums (I / groups) x KH x KW products; conv2d_transpose: each
       input element is spread over (O / groups) x KH x KW outputs */
    int64_t per = 1;
    for (int i = 1; i < w->ndim; i++) per *= w->shape[i];
    return (op_is(n, "nn.conv2d") ? numel(y) : numel(x)) * per;
  }
  if (op_is(n, "nn.dense") || op_is(n, "nn.matmul"))
    return numel(y) * (x->ndim > 0 ? x->shape[x->ndim - 1] : 1);
  *macs = 0;
  int64_t work = numel(y);
  for (int i = 0; i < n->nin; i++) work += numel(&p->g->entries[n->in[i]]);
  return work;
}

static int node_threads(const planner *p, int nid) {
  int macs;
  int64_t work = node_work(p, nid, &macs);
  return threads_for(p->s->nthreads, work, macs ? DN_MAC_GRAIN : DN_MOVE_GRAIN);
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
    omp_set_num_threads(threads_for(s->nthreads, 2 * numel(en), DN_MOVE_GRAIN));
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

/* The planner's own tables (the plan itself lives in the dn_state). */
static void planner_free(planner *p) {
  free(p->entry_slot);
  free(p->uses);
  free(p->consumer);
  free(p->is_output);
  free(p->done);
  free(p->produced_at);
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
    omp_set_num_threads(node_threads(p, i));
    if (plan_node(p, i) < 0) goto bad;
    p->done[i] = 1;
  }
  if (plan_outputs(p) < 0) goto bad;
  planner_free(p);
  return s;
bad:
  planner_free(p);
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
  int threads = 0; /* the calling thread's OpenMP count, as each step was created with */
  for (int i = 0; rc == 0 && i < s->nsteps; i++) {
    const step *st = &s->steps[i];
    if (st->nthreads > 0 && st->nthreads != threads) {
      threads = st->nthreads;
      omp_set_num_threads(threads);
    }
    if (st->guard != GUARD_NONE) {
      if (run_guard(st, w) < 0) {
        snprintf(err, errlen, "dnnl: step %d (%s) failed", i, st->what);
        rc = -1;
      }
      continue;
    }
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
  if (threads != s->nthreads) omp_set_num_threads(s->nthreads);
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
    /* with more than one thread, each primitive says how many it runs on: "...@1" */
    const step *st = &s->steps[i];
    int w = s->nthreads > 1 && st->nthreads > 0
                ? snprintf(buf + used, len - used, "%s%s@%d", i ? "; " : "", st->what, st->nthreads)
                : snprintf(buf + used, len - used, "%s%s", i ? "; " : "", st->what);
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
