/*
 * The chain an anchor absorbs: the nodes after it that become per-channel affine steps
 * folded into its weights and bias, and eltwise, binary or sum post-ops.
 *
 * Part of the oneDNN engine: compiled as one translation unit after dnnl_engine.c, in the
 * order byoc/targets/dnnl/target.py lists the sources.
 */

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

/* Append a post-op of `kind` for node nid; it starts after the chain's nodes so far. */
static postop *add_postop(chain *c, int kind, dnnl_alg_kind_t alg, int nid) {
  postop *po = &c->po[c->npo++];
  po->first = c->nnodes;
  po->kind = kind;
  po->alg = alg;
  po->node = nid;
  return po;
}

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
      if (drops_nan_eltwise(alg, fa)) break; /* planned alone, with its NaN guard */
      postop *po = add_postop(c, PO_ELTWISE, alg, nid);
      po->a = fa;
      po->b = fb;
    } else if (n->nin == 2 && binary_of(n, &alg, &comm)) {
      if (drops_nan_binary(alg)) break;
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
      postop *po = add_postop(c, PO_BINARY, alg, nid);
      po->src1 = other;
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
           reference convolution, hundreds of times slower) */
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
