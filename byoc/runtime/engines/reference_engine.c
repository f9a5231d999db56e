/*
 * reference_engine.c — the graph runtime's reference engine (target `graphref`).
 *
 * A small, plain-C engine that proves the runtime base without a vendor
 * library: float32 nn.add / nn.subtract / nn.multiply / nn.maximum /
 * nn.minimum (numpy broadcasting), nn.relu, nn.bias_add and nn.dense
 * (x * W^T). A composite runs its body node by node, whatever its name, so
 * every composite whose inner ops are in that list is supported.
 *
 * init() flattens the graph into steps (a composite's inner nodes in place),
 * precomputes each step's loop bounds and broadcast strides, and lays out the
 * workspace: a table of one data pointer per entry, then a 64-byte aligned
 * slot for every value that is neither an input, a constant nor an output.
 * run() only fills the pointer table and executes the steps: it allocates
 * nothing and writes nothing but the workspace and the outputs, so concurrent
 * runs share only read-only state.
 */
#include "byoc_graph_engine.h"

typedef enum {
  REF_ADD,
  REF_SUB,
  REF_MUL,
  REF_MAX,
  REF_MIN,
  REF_RELU,
  REF_BIAS_ADD,
  REF_DENSE,
} ref_kind_;

typedef struct {
  int32_t kind;
  int32_t in0, in1, out; /* entry ids (in1 = -1 for unary ops) */
  int32_t ndim;          /* binary: output rank */
  int64_t shape[BYOC_GRAPH_MAX_RANK];
  int64_t stride0[BYOC_GRAPH_MAX_RANK]; /* element strides, 0 on broadcast dims */
  int64_t stride1[BYOC_GRAPH_MAX_RANK];
  int64_t numel;
  int64_t m, n, k; /* dense: [m,k] x [n,k]^T; bias_add: outer, channels, inner */
} ref_step_;

typedef struct {
  const byoc_graph* g;
  int32_t num_steps;
  ref_step_* steps;
  int64_t* offsets; /* per entry: workspace offset of its slot, or -1 */
  size_t table_bytes;
  int32_t num_threads; /* recorded: the reference engine runs on the calling thread */
} ref_state_;

static const struct {
  const char* name;
  int32_t kind;
} ref_ops_[] = {
    {"nn.add", REF_ADD},           {"nn.subtract", REF_SUB}, {"nn.multiply", REF_MUL},
    {"nn.maximum", REF_MAX},       {"nn.minimum", REF_MIN},  {"nn.relu", REF_RELU},
    {"nn.bias_add", REF_BIAS_ADD}, {"nn.dense", REF_DENSE},
};

static int32_t ref_plan_node_(const byoc_graph* g, const byoc_graph_node* node, ref_step_* st) {
  int32_t kind = -1;
  for (size_t i = 0; i < sizeof ref_ops_ / sizeof ref_ops_[0]; ++i)
    if (strcmp(ref_ops_[i].name, node->op) == 0) kind = ref_ops_[i].kind;
  if (kind < 0) return byoc_fail("%s: the reference engine has no kernel for '%s'", g->name, node->op);
  int32_t arity = kind == REF_RELU ? 1 : 2;
  if (node->num_inputs != arity || node->num_outputs != 1)
    return byoc_fail("%s: '%s' takes %d inputs and one output, the node has %d and %d", g->name,
                     node->op, (int)arity, (int)node->num_inputs, (int)node->num_outputs);
  memset(st, 0, sizeof *st);
  st->kind = kind;
  st->in0 = node->inputs[0];
  st->in1 = arity == 2 ? node->inputs[1] : -1;
  st->out = node->outputs[0];
  const byoc_graph_entry* out = &g->entries[st->out];
  const byoc_graph_entry* a = &g->entries[st->in0];
  const byoc_graph_entry* b = arity == 2 ? &g->entries[st->in1] : a;
  if (!byoc_graph_entry_is_f32(out) || !byoc_graph_entry_is_f32(a) || !byoc_graph_entry_is_f32(b))
    return byoc_fail("%s: the reference engine runs '%s' on float32 only", g->name, node->op);
  st->numel = out->numel;
  switch (kind) {
    case REF_RELU:
      if (a->numel != out->numel) return byoc_fail("%s: nn.relu changes the size", g->name);
      return 0;
    case REF_DENSE:
      if (a->ndim != 2 || b->ndim != 2 || out->ndim != 2 || a->shape[1] != b->shape[1] ||
          out->shape[0] != a->shape[0] || out->shape[1] != b->shape[0])
        return byoc_fail("%s: nn.dense wants [m,k] x [n,k] -> [m,n]", g->name);
      st->m = a->shape[0];
      st->n = b->shape[0];
      st->k = a->shape[1];
      return 0;
    case REF_BIAS_ADD: {
      int64_t axis = byoc_graph_attr_int(node, "axis", 1);
      if (axis < 0) axis += a->ndim;
      if (axis < 0 || axis >= a->ndim || b->ndim != 1 || b->shape[0] != a->shape[axis] ||
          out->numel != a->numel)
        return byoc_fail("%s: nn.bias_add: bad axis or bias shape", g->name);
      st->m = 1;
      st->k = 1;
      for (int32_t i = 0; i < axis; ++i) st->m *= a->shape[i];
      st->n = a->shape[axis];
      for (int32_t i = (int32_t)axis + 1; i < a->ndim; ++i) st->k *= a->shape[i];
      return 0;
    }
    default: {
      /* numpy broadcasting: align on the right */
      st->ndim = out->ndim;
      if (a->ndim > out->ndim || b->ndim > out->ndim)
        return byoc_fail("%s: '%s': an input has a higher rank than the output", g->name, node->op);
      int64_t s0 = 1, s1 = 1;
      for (int32_t i = out->ndim - 1; i >= 0; --i) {
        int32_t ia = i - (out->ndim - a->ndim), ib = i - (out->ndim - b->ndim);
        int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if ((da != out->shape[i] && da != 1) || (db != out->shape[i] && db != 1))
          return byoc_fail("%s: '%s': the inputs do not broadcast to the output", g->name, node->op);
        st->shape[i] = out->shape[i];
        st->stride0[i] = da == 1 ? 0 : s0;
        st->stride1[i] = db == 1 ? 0 : s1;
        s0 *= da;
        s1 *= db;
      }
      return 0;
    }
  }
}

static void ref_destroy_(void* state) {
  ref_state_* s = (ref_state_*)state;
  if (s == NULL) return;
  free(s->steps);
  free(s->offsets);
  free(s);
}

static void* ref_init_(const byoc_graph* g, int32_t num_threads, size_t* workspace_bytes) {
  ref_state_* s = (ref_state_*)calloc(1, sizeof *s);
  if (s == NULL) {
    byoc_fail("%s: out of memory", g->name);
    return NULL;
  }
  s->g = g;
  s->num_threads = num_threads;
  int32_t count = 0;
  for (int32_t i = 0; i < g->num_nodes; ++i)
    count += g->nodes[i].num_body > 0 ? g->nodes[i].num_body : 1;
  s->steps = (ref_step_*)calloc((size_t)(count ? count : 1), sizeof *s->steps);
  s->offsets = (int64_t*)calloc((size_t)(g->num_entries ? g->num_entries : 1), sizeof *s->offsets);
  if (s->steps == NULL || s->offsets == NULL) {
    ref_destroy_(s);
    byoc_fail("%s: out of memory", g->name);
    return NULL;
  }
  for (int32_t i = 0; i < g->num_nodes; ++i) {
    const byoc_graph_node* node = &g->nodes[i];
    if (node->num_body == 0) {
      if (ref_plan_node_(g, node, &s->steps[s->num_steps++])) goto fail;
    } else {
      for (int32_t j = 0; j < node->num_body; ++j)
        if (ref_plan_node_(g, &node->body[j], &s->steps[s->num_steps++])) goto fail;
    }
  }
  s->table_bytes = ((size_t)g->num_entries * sizeof(void*) + 63) / 64 * 64;
  size_t at = s->table_bytes;
  for (int32_t e = 0; e < g->num_entries; ++e) {
    const byoc_graph_entry* en = &g->entries[e];
    s->offsets[e] = -1;
    if (en->kind == BYOC_ENTRY_INPUT || en->kind == BYOC_ENTRY_CONST || en->output >= 0) continue;
    s->offsets[e] = (int64_t)at;
    at += ((size_t)en->nbytes + 63) / 64 * 64;
  }
  *workspace_bytes = at;
  return s;
fail:
  ref_destroy_(s);
  return NULL;
}

static void ref_binary_(const ref_step_* st, const float* a, const float* b, float* y) {
  int64_t idx[BYOC_GRAPH_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0;
  int32_t nd = st->ndim;
  for (int64_t i = 0; i < st->numel; ++i) {
    float x = a[oa], z = b[ob], r;
    switch (st->kind) {
      case REF_ADD: r = x + z; break;
      case REF_SUB: r = x - z; break;
      case REF_MUL: r = x * z; break;
      case REF_MAX: r = x > z || x != x ? x : z; break;
      default: r = x < z || x != x ? x : z; break;
    }
    y[i] = r;
    for (int32_t d = nd - 1; d >= 0; --d) { /* next index, row-major */
      oa += st->stride0[d];
      ob += st->stride1[d];
      if (++idx[d] < st->shape[d]) break;
      oa -= st->stride0[d] * st->shape[d];
      ob -= st->stride1[d] * st->shape[d];
      idx[d] = 0;
    }
  }
}

static int32_t ref_run_(void* state, DLTensor* const* inputs, DLTensor* const* outputs,
                        void* workspace) {
  const ref_state_* s = (const ref_state_*)state;
  const byoc_graph* g = s->g;
  void** ptr = (void**)workspace;
  for (int32_t e = 0; e < g->num_entries; ++e) {
    const byoc_graph_entry* en = &g->entries[e];
    if (en->kind == BYOC_ENTRY_INPUT)
      ptr[e] = byoc_tensor_data(inputs[en->input]);
    else if (en->kind == BYOC_ENTRY_CONST)
      ptr[e] = (void*)en->data;
    else if (en->output >= 0)
      ptr[e] = byoc_tensor_data(outputs[en->output]);
    else
      ptr[e] = (char*)workspace + s->offsets[e];
  }
  for (int32_t i = 0; i < s->num_steps; ++i) {
    const ref_step_* st = &s->steps[i];
    const float* a = (const float*)ptr[st->in0];
    const float* b = st->in1 >= 0 ? (const float*)ptr[st->in1] : NULL;
    float* y = (float*)ptr[st->out];
    switch (st->kind) {
      case REF_RELU:
        for (int64_t j = 0; j < st->numel; ++j) y[j] = a[j] > 0.0f ? a[j] : (a[j] != a[j] ? a[j] : 0.0f);
        break;
      case REF_BIAS_ADD:
        for (int64_t o = 0; o < st->m; ++o)
          for (int64_t c = 0; c < st->n; ++c)
            for (int64_t j = 0; j < st->k; ++j) {
              int64_t at = (o * st->n + c) * st->k + j;
              y[at] = a[at] + b[c];
            }
        break;
      case REF_DENSE:
        for (int64_t r = 0; r < st->m; ++r)
          for (int64_t c = 0; c < st->n; ++c) {
            double acc = 0.0;
            for (int64_t j = 0; j < st->k; ++j) acc += (double)a[r * st->k + j] * b[c * st->k + j];
            y[r * st->n + c] = (float)acc;
          }
        break;
      default:
        ref_binary_(st, a, b, y);
        break;
    }
  }
  return 0;
}

static int32_t ref_set_num_threads_(void* state, int32_t num_threads) {
  ((ref_state_*)state)->num_threads = num_threads;
  return 0;
}

static const byoc_graph_engine ref_engine_ = {
    BYOC_GRAPH_ENGINE_ABI, "reference", ref_init_, ref_run_, ref_set_num_threads_, ref_destroy_,
};

const byoc_graph_engine* byoc_graph_engine_def(void) { return &ref_engine_; }
