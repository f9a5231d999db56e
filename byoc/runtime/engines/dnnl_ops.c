/*
 * The ops that are not anchors, one primitive each, and plan_node, which picks the
 * planner of a node.
 *
 * Part of the oneDNN engine: compiled as one translation unit after dnnl_engine.c, in the
 * order byoc/targets/dnnl/target.py lists the sources.
 */

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

/* An inference eltwise primitive whose source and destination have slot x's layout; its
 * oneDNN status in *st (pd is NULL unless it is dnnl_success). */
static dnnl_primitive_desc_t eltwise_pd(planner *p, int x, dnnl_alg_kind_t alg, float a, float b,
                                        dnnl_status_t *st) {
  dnnl_primitive_attr_t attr = new_attr();
  dnnl_primitive_desc_t pd = NULL;
  const_dnnl_memory_desc_t md = p->s->slots[x].md;
  *st = dnnl_eltwise_forward_primitive_desc_create(&pd, p->s->eng, dnnl_forward_inference, alg,
                                                   md, md, a, b, attr);
  dnnl_primitive_attr_destroy(attr);
  return pd;
}

static int plan_eltwise(planner *p, int nid, dnnl_alg_kind_t alg, float a, float b) {
  const dn_node *n = &p->g->nodes[nid];
  int x = slot_for_simple(p, n->in[0]);
  if (x < 0) return -1;
  dnnl_status_t st;
  dnnl_primitive_desc_t pd = eltwise_pd(p, x, alg, a, b, &st);
  if (st != dnnl_success) return fail(p, "oneDNN: no eltwise for %s (status %d)", n->op, (int)st);
  int args[1] = {DNNL_ARG_SRC};
  if (finish_simple(p, pd, n->op + 3, 1, args, &x, n->out[0]) < 0) return -1;
  if (!drops_nan_eltwise(alg, a)) return 0;
  return add_elementwise_guard(p, GUARD_UNARY, 1, &x, n->out[0], n->op + 3);
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
    /* a broadcast against a blocked layout has only the reference kernel (slow even
       for a per-channel multiply): the plain layout has a jit one */
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
  int lead = 0, reduced = 0; /* leading dims of size 1; computed without them */
  while (lead < ye->ndim - 1 && ye->shape[lead] == 1) lead++;
  if (is_ref_impl(pd) && lead > 0) {
    /* a broadcast oneDNN's jit kernels take only without the leading 1s: (1, H, T, T) +
       (1, H, 1, T), an attention mask, is their (N, 1, W) form; ref:any takes 1.4 ms there */
    int64_t sh[DN_MAX_RANK];
    padded_shape(&g->entries[b], ye->ndim, sh);
    int r = ye->ndim - lead;
    int v0 = slot_reshaped(p, a, r, ye->shape + lead);
    int v1 = v0 < 0 ? -1 : slot_reshaped(p, b, r, sh + lead);
    dnnl_memory_desc_t dmd = v1 < 0 ? NULL : md_plain(r, ye->shape + lead);
    dnnl_primitive_desc_t lean = NULL;
    attr = new_attr();
    if (dmd && dnnl_binary_primitive_desc_create(&lean, p->s->eng, alg, p->s->slots[v0].md,
                                                 p->s->slots[v1].md, dmd, attr) == dnnl_success &&
        !is_ref_impl(lean)) {
      dnnl_primitive_desc_destroy(pd);
      pd = lean;
      s0 = v0;
      s1 = v1;
      reduced = 1;
    } else if (lean) {
      dnnl_primitive_desc_destroy(lean);
    }
    dnnl_primitive_attr_destroy(attr);
    if (dmd) dnnl_memory_desc_destroy(dmd);
  }
  int args[2] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1}, slots[2] = {s0, s1};
  if (finish_simple(p, pd, n->op + 3, 2, args, slots, n->out[0]) < 0) return -1;
  if (reduced) {
    /* the result at its own rank: a view of the same buffer */
    int view = alias_slot(p, p->entry_slot[n->out[0]], md_plain(ye->ndim, ye->shape));
    if (view < 0) return -1;
    p->entry_slot[n->out[0]] = view;
  }
  if (!drops_nan_binary(alg)) return 0;
  if (!same_shape(&g->entries[b], ye))
    return fail(p, "%s: broadcasting would lose the NaN of its smaller operand", n->op);
  return add_elementwise_guard(p, GUARD_BINARY, 2, slots, n->out[0], n->op + 3);
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
  if (finish_simple(p, pd, n->op + 3, 1, args, &x, n->out[0]) < 0) return -1;
  return is_max ? add_max_pool_guard(p, x, xe, n->out[0], k, s, pad, d) : 0;
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
  if (finish_simple(p, pd, "softmax", 1, args, &x, n->out[0]) < 0) return -1;
  return add_softmax_guard(p, x, xe, axis, n->out[0]);
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
     (a Caffe BatchNorm + Scale pair). A relu after them is not fused (fuse_norm_relu would
     lose its NaN): it is planned alone, with its guard (dnnl_guard.c) */
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
  return finish_simple(p, pd, "batch_norm", 5, args, slots, y);
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
      dnnl_status_t st;
      dnnl_primitive_desc_t pd = eltwise_pd(p, x, dnnl_eltwise_gelu_erf, 0.f, 0.f, &st);
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
