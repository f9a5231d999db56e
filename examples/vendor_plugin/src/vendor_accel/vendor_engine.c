/*
 * vendor_engine.c — the example vendor's graph engine (target `vendoraccel`).
 *
 * What a vendor writes to run byoc partitions on its own code: one C file
 * implementing byoc_graph_engine.h. It runs float32 nn.relu, nn.clip,
 * nn.add, nn.subtract, nn.multiply (operands of one shape, as the target's
 * predicates promise) and the composite `vendoraccel.add_relu`, whose body it
 * runs node by node.
 *
 * init() turns the graph into a list of steps and sizes the workspace (one
 * pointer per entry, then a slot per intermediate value); run() fills the
 * pointer table and executes the steps, touching nothing shared, so runs from
 * several threads at once are safe.
 */
#include "byoc_graph_engine.h"

typedef enum { V_RELU, V_CLIP, V_ADD, V_SUB, V_MUL } v_kind_;

typedef struct {
  int32_t kind;
  int32_t in0, in1, out; /* entry ids; in1 = -1 for unary ops */
  int64_t numel;
  float lo, hi; /* clip bounds */
} v_step_;

typedef struct {
  const byoc_graph* g;
  int32_t num_steps;
  v_step_* steps;
  int64_t* offsets; /* per entry: workspace offset of its slot, or -1 */
} v_state_;

static const struct {
  const char* name;
  int32_t kind;
  int32_t arity;
} v_ops_[] = {
    {"nn.relu", V_RELU, 1},     {"nn.clip", V_CLIP, 1},     {"nn.add", V_ADD, 2},
    {"nn.subtract", V_SUB, 2},  {"nn.multiply", V_MUL, 2},
};

static int32_t v_plan_(const byoc_graph* g, const byoc_graph_node* node, v_step_* st) {
  int32_t kind = -1, arity = 0;
  for (size_t i = 0; i < sizeof v_ops_ / sizeof v_ops_[0]; ++i)
    if (strcmp(v_ops_[i].name, node->op) == 0) {
      kind = v_ops_[i].kind;
      arity = v_ops_[i].arity;
    }
  if (kind < 0) return byoc_fail("%s: the vendor engine has no kernel for '%s'", g->name, node->op);
  if (node->num_inputs != arity || node->num_outputs != 1)
    return byoc_fail("%s: '%s' takes %d inputs and one output", g->name, node->op, (int)arity);
  memset(st, 0, sizeof *st);
  st->kind = kind;
  st->in0 = node->inputs[0];
  st->in1 = arity == 2 ? node->inputs[1] : -1;
  st->out = node->outputs[0];
  const byoc_graph_entry* out = &g->entries[st->out];
  for (int32_t i = 0; i < arity; ++i) {
    const byoc_graph_entry* in = &g->entries[node->inputs[i]];
    if (!byoc_graph_entry_is_f32(in) || in->numel != out->numel)
      return byoc_fail("%s: '%s' runs on float32 operands of the result's shape", g->name,
                       node->op);
  }
  if (!byoc_graph_entry_is_f32(out))
    return byoc_fail("%s: '%s' runs on float32 only", g->name, node->op);
  st->numel = out->numel;
  st->lo = (float)byoc_graph_attr_float(node, "a_min", 0.0);
  st->hi = (float)byoc_graph_attr_float(node, "a_max", 0.0);
  return 0;
}

static void v_destroy_(void* state) {
  v_state_* s = (v_state_*)state;
  if (s == NULL) return;
  free(s->steps);
  free(s->offsets);
  free(s);
}

static void* v_init_(const byoc_graph* g, int32_t num_threads, size_t* workspace_bytes) {
  (void)num_threads; /* one thread per run: the example keeps it simple */
  v_state_* s = (v_state_*)calloc(1, sizeof *s);
  if (s == NULL) {
    byoc_fail("%s: out of memory", g->name);
    return NULL;
  }
  s->g = g;
  int32_t count = 0;
  for (int32_t i = 0; i < g->num_nodes; ++i)
    count += g->nodes[i].num_body > 0 ? g->nodes[i].num_body : 1;
  s->steps = (v_step_*)calloc((size_t)(count ? count : 1), sizeof *s->steps);
  s->offsets = (int64_t*)calloc((size_t)(g->num_entries ? g->num_entries : 1), sizeof *s->offsets);
  if (s->steps == NULL || s->offsets == NULL) {
    v_destroy_(s);
    byoc_fail("%s: out of memory", g->name);
    return NULL;
  }
  for (int32_t i = 0; i < g->num_nodes; ++i) {
    const byoc_graph_node* node = &g->nodes[i];
    int32_t n = node->num_body > 0 ? node->num_body : 1;
    for (int32_t j = 0; j < n; ++j) {
      const byoc_graph_node* inner = node->num_body > 0 ? &node->body[j] : node;
      if (v_plan_(g, inner, &s->steps[s->num_steps++])) {
        v_destroy_(s);
        return NULL;
      }
    }
  }
  size_t at = ((size_t)g->num_entries * sizeof(void*) + 63) / 64 * 64;
  for (int32_t e = 0; e < g->num_entries; ++e) {
    const byoc_graph_entry* en = &g->entries[e];
    s->offsets[e] = -1;
    if (en->kind == BYOC_ENTRY_INPUT || en->kind == BYOC_ENTRY_CONST || en->output >= 0) continue;
    s->offsets[e] = (int64_t)at;
    at += ((size_t)en->nbytes + 63) / 64 * 64;
  }
  *workspace_bytes = at;
  return s;
}

/* NaN in, NaN out: every kernel keeps a NaN operand, as the numpy reference does. */
static float v_relu_(float x) { return x > 0.0f || x != x ? x : 0.0f; }

static float v_clip_(float x, float lo, float hi) {
  if (x != x) return x;
  return x < lo ? lo : (x > hi ? hi : x);
}

static int32_t v_run_(void* state, DLTensor* const* inputs, DLTensor* const* outputs,
                      void* workspace) {
  const v_state_* s = (const v_state_*)state;
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
    const v_step_* st = &s->steps[i];
    const float* a = (const float*)ptr[st->in0];
    const float* b = st->in1 >= 0 ? (const float*)ptr[st->in1] : NULL;
    float* y = (float*)ptr[st->out];
    for (int64_t j = 0; j < st->numel; ++j) {
      switch (st->kind) {
        case V_RELU: y[j] = v_relu_(a[j]); break;
        case V_CLIP: y[j] = v_clip_(a[j], st->lo, st->hi); break;
        case V_ADD: y[j] = a[j] + b[j]; break;
        case V_SUB: y[j] = a[j] - b[j]; break;
        default: y[j] = a[j] * b[j]; break;
      }
    }
  }
  return 0;
}

static const byoc_graph_engine v_engine_ = {
    BYOC_GRAPH_ENGINE_ABI, "vendor", v_init_, v_run_, NULL, v_destroy_,
};

const byoc_graph_engine* byoc_graph_engine_def(void) { return &v_engine_; }
