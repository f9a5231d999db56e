/*
 * Anchors (conv2d, conv2d_transpose, dense, matmul), each planned as one primitive with
 * as much of its chain as oneDNN takes.
 *
 * Part of the oneDNN engine: compiled as one translation unit after dnnl_engine.c, in the
 * order byoc/targets/dnnl/target.py lists the sources.
 */

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

/* What plan_anchor derives from an anchor node before asking oneDNN for a primitive: the
   shapes oneDNN computes in, and the weights and bias with the chain's per-channel affine
   steps folded in. */
typedef struct anchor {
  anchor_kind kind;
  int node, x, w;
  int wconst;                              /* the weight is a constant */
  int64_t strides[2], pad[4], dil[2], opad[2], groups; /* conv2d / conv2d_transpose */
  int axis;                                /* the channel axis of the output */
  int64_t channels;
  int64_t src_dims[DN_MAX_RANK], wdims[DN_MAX_RANK + 1], dst_dims[DN_MAX_RANK];
  int64_t wsrc_strides[DN_MAX_RANK + 1];   /* the given weight's layout, in wdims' order */
  int src_rank, w_rank, dst_rank;
  int64_t bias_dims[DN_MAX_RANK];
  int bias_rank, has_bias;
  float *shift;                            /* the bias (has_bias), owned */
  const float *wdata;                      /* the weights to reorder: given, or wscaled */
  float *wscaled;                          /* the weights times the folded scale, owned */
} anchor;

static void anchor_free(anchor *A) {
  free(A->shift);
  free(A->wscaled);
  A->shift = A->wscaled = NULL;
}

static void row_major_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t st = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= dims[i];
  }
}

/* conv2d and conv2d_transpose: strides, padding, dilation, output padding, groups. */
static int conv_attrs(planner *p, anchor *A) {
  const dn_node *n = &p->g->nodes[A->node];
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  if (p->g->entries[A->x].ndim != 4) return fail(p, "%s: data must be 4-D (NCHW)", n->op);
  if (ints_attr(p, A->node, "strides", A->strides, 2, ones) < 0) return -1;
  if (ints_attr(p, A->node, "padding", A->pad, 4, zeros) < 0) return -1;
  if (ints_attr(p, A->node, "dilation", A->dil, 2, ones) < 0) return -1;
  if (A->kind == A_DECONV && ints_attr(p, A->node, "output_padding", A->opad, 2, zeros) < 0)
    return -1;
  A->groups = int_attr(p, A->node, "groups", 1);
  return 0;
}

/* conv2d: NCHW data, OIHW weight, (G, O/G, I, KH, KW) when grouped. */
static void conv_dims(anchor *A, const dn_entry *xe, const dn_entry *we, const dn_entry *ye) {
  A->src_rank = A->dst_rank = 4;
  memcpy(A->src_dims, xe->shape, 4 * sizeof(int64_t));
  memcpy(A->dst_dims, ye->shape, 4 * sizeof(int64_t));
  int64_t O = we->shape[0], I = we->shape[1], KH = we->shape[2], KW = we->shape[3];
  if (A->groups > 1) {
    A->w_rank = 5;
    int64_t d[5] = {A->groups, O / A->groups, I, KH, KW};
    memcpy(A->wdims, d, sizeof d);
  } else {
    A->w_rank = 4;
    memcpy(A->wdims, we->shape, 4 * sizeof(int64_t));
  }
  row_major_strides(A->w_rank, A->wdims, A->wsrc_strides);
}

/* conv2d_transpose: the weight is ours, (C, O/G, KH, KW) with C = G * Ig, read in oneDNN's
   (G, O/G, Ig, KH, KW) or (O, C, KH, KW) order through strides. */
static void deconv_dims(anchor *A, const dn_entry *xe, const dn_entry *we, const dn_entry *ye) {
  A->src_rank = A->dst_rank = 4;
  memcpy(A->src_dims, xe->shape, 4 * sizeof(int64_t));
  memcpy(A->dst_dims, ye->shape, 4 * sizeof(int64_t));
  int64_t C = we->shape[0], Og = we->shape[1], KH = we->shape[2], KW = we->shape[3];
  int64_t Ig = C / A->groups;
  if (A->groups > 1) {
    A->w_rank = 5;
    int64_t d[5] = {A->groups, Og, Ig, KH, KW};
    int64_t s5[5] = {Ig * Og * KH * KW, KH * KW, Og * KH * KW, KW, 1};
    memcpy(A->wdims, d, sizeof d);
    memcpy(A->wsrc_strides, s5, sizeof s5);
  } else {
    A->w_rank = 4;
    int64_t d[4] = {Og, C, KH, KW};
    int64_t s4[4] = {KH * KW, Og * KH * KW, KW, 1};
    memcpy(A->wdims, d, sizeof d);
    memcpy(A->wsrc_strides, s4, sizeof s4);
  }
}

/* dense: a matmul of the data as (rows, K) by the weight (N, K) read as (K, N). */
static void dense_dims(anchor *A, const dn_entry *xe, const dn_entry *we) {
  int64_t K = xe->shape[xe->ndim - 1], N = we->shape[0];
  A->src_rank = A->dst_rank = A->w_rank = 2;
  A->src_dims[0] = numel(xe) / K;
  A->src_dims[1] = K;
  A->dst_dims[0] = A->src_dims[0];
  A->dst_dims[1] = N;
  A->wdims[0] = K;
  A->wdims[1] = N;
  A->wsrc_strides[0] = 1;
  A->wsrc_strides[1] = K;
}

/* matmul: both operands padded with leading 1s to the output's rank (broadcast batches). */
static int matmul_dims(planner *p, anchor *A, const dn_entry *xe, const dn_entry *we,
                       const dn_entry *ye) {
  if (xe->ndim < 2 || we->ndim < 2) return fail(p, "nn.matmul: operands of rank < 2");
  A->src_rank = A->dst_rank = A->w_rank = ye->ndim;
  padded_shape(xe, A->src_rank, A->src_dims);
  padded_shape(we, A->src_rank, A->wdims);
  memcpy(A->dst_dims, ye->shape, (size_t)A->dst_rank * sizeof(int64_t));
  row_major_strides(A->w_rank, A->wdims, A->wsrc_strides);
  return 0;
}

/* The dims oneDNN computes in, and the bias's: (channels) for a convolution, else
   (1, ..., 1, channels) at the output's rank. */
static int anchor_dims(planner *p, anchor *A) {
  const dn_graph *g = p->g;
  const dn_entry *xe = &g->entries[A->x], *we = &g->entries[A->w];
  const dn_entry *ye = &g->entries[g->nodes[A->node].out[0]];
  switch (A->kind) {
  case A_CONV: conv_dims(A, xe, we, ye); break;
  case A_DECONV: deconv_dims(A, xe, we, ye); break;
  case A_DENSE: dense_dims(A, xe, we); break;
  case A_MATMUL:
    if (matmul_dims(p, A, xe, we, ye) < 0) return -1;
    break;
  }
  A->bias_rank = (A->kind == A_CONV || A->kind == A_DECONV) ? 1 : A->dst_rank;
  if (A->bias_rank == 1) A->bias_dims[0] = A->channels;
  else {
    for (int i = 0; i < A->dst_rank; i++) A->bias_dims[i] = 1;
    A->bias_dims[A->dst_rank - 1] = A->channels;
  }
  return 0;
}

/* The constant weights times the per-channel `scale` of the folded chain, into A->wscaled:
   output channel o is the weight's first dim for conv2d and dense, (group, O/G) of the
   transposed convolution's (C, O/G) dims, the last dim for matmul. */
static int scale_weights(planner *p, anchor *A, const float *scale) {
  const dn_entry *we = &p->g->entries[A->w];
  const float *wdata = we->data;
  int64_t cnt = numel(we);
  float *ws = A->wscaled = malloc((size_t)cnt * sizeof(float));
  if (!ws) return fail(p, "out of memory");
  if (A->kind == A_CONV) {
    int64_t per = cnt / we->shape[0];
    for (int64_t i = 0; i < cnt; i++) ws[i] = wdata[i] * scale[i / per];
  } else if (A->kind == A_DECONV) {
    int64_t C = we->shape[0], Og = we->shape[1], kk = we->shape[2] * we->shape[3];
    int64_t Ig = C / A->groups;
    for (int64_t ci = 0; ci < C; ci++)
      for (int64_t oo = 0; oo < Og; oo++) {
        float sc = scale[(ci / Ig) * Og + oo];
        for (int64_t k = 0; k < kk; k++) {
          int64_t idx = (ci * Og + oo) * kk + k;
          ws[idx] = wdata[idx] * sc;
        }
      }
  } else if (A->kind == A_DENSE) {
    int64_t K = we->shape[1];
    for (int64_t i = 0; i < cnt; i++) ws[i] = wdata[i] * scale[i / K];
  } else {
    int64_t N = we->shape[we->ndim - 1];
    for (int64_t i = 0; i < cnt; i++) ws[i] = wdata[i] * scale[i % N];
  }
  A->wdata = ws;
  return 0;
}

/* The primitive descriptor of the anchor's family for these memory descriptors. */
static dnnl_status_t anchor_primitive(planner *p, const anchor *A, dnnl_primitive_desc_t *pd,
                                      const_dnnl_memory_desc_t src_md,
                                      const_dnnl_memory_desc_t w_md,
                                      const_dnnl_memory_desc_t b_md,
                                      const_dnnl_memory_desc_t d_md,
                                      const_dnnl_primitive_attr_t attr) {
  if (A->kind == A_CONV) {
    dnnl_dims_t s2 = {A->strides[0], A->strides[1]}, d2 = {A->dil[0] - 1, A->dil[1] - 1};
    dnnl_dims_t pl = {A->pad[0], A->pad[1]}, pr = {A->pad[2], A->pad[3]};
    return dnnl_convolution_forward_primitive_desc_create(
        pd, p->s->eng, dnnl_forward_inference, dnnl_convolution_direct, src_md, w_md, b_md,
        d_md, s2, d2, pl, pr, attr);
  }
  if (A->kind == A_DECONV) {
    dnnl_dims_t s2 = {A->strides[0], A->strides[1]}, d2 = {A->dil[0] - 1, A->dil[1] - 1};
    dnnl_dims_t pl = {A->pad[0], A->pad[1]};
    dnnl_dims_t pr = {A->pad[2] - A->opad[0], A->pad[3] - A->opad[1]};
    return dnnl_deconvolution_forward_primitive_desc_create(
        pd, p->s->eng, dnnl_forward_inference, dnnl_deconvolution_direct, src_md, w_md, b_md,
        d_md, s2, d2, pl, pr, attr);
  }
  return dnnl_matmul_primitive_desc_create(pd, p->s->eng, src_md, w_md, b_md, d_md, attr);
}

/* A primitive for the anchor and as much of its chain as oneDNN takes: the whole chain,
   then shorter ones (each drop rolls back the reorders planned for it). A chain with a
   residual first probes the layout oneDNN writes without post-ops and brings the residuals
   to it. A convolution at the partition's edges first tries reading the caller's input or
   writing the caller's output in plain layout (saving a reorder), kept only if oneDNN has a
   fast kernel for it. Fills src1_slots (the binary and sum operands) and *pd. */
static int find_primitive(planner *p, const anchor *A, chain *c, int *src1_slots,
                          dnnl_primitive_desc_t *pd_out) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[A->node];
  int npo = c->npo;
  dnnl_primitive_desc_t pd = NULL;
  int nslots_before = p->s->nslots, nsteps_before = p->s->nsteps;
  size_t arena_before = p->s->arena_size;
  int rc = -1;
  dnnl_memory_desc_t want = NULL; /* the dst layout, when residuals must match it */
  int plain_edges = A->kind == A_CONV || A->kind == A_DECONV;
  for (;;) {
    int plain_src = plain_edges && p->entry_slot[A->x] >= 0 &&
                    p->s->slots[p->s->slots[p->entry_slot[A->x]].root].kind == LOC_INPUT;
    int plain_dst = plain_edges && p->is_output[c->result];
    int residual = 0;
    for (int i = 0; i < npo; i++)
      if (c->po[i].kind == PO_SUM ||
          (c->po[i].kind == PO_BINARY && !is_const(p, c->po[i].src1) &&
           same_shape(&g->entries[c->po[i].src1], &g->entries[c->result])))
        residual = 1;
    dnnl_primitive_attr_t attr = NULL;
    if (residual && want == NULL) {
      attr = new_attr(); /* the probe */
    } else {
      attr = chain_attr(p, c, npo, A->dst_rank, A->dst_dims, want, src1_slots);
    }
    if (!attr) break;
    int probing = residual && want == NULL;
    if (probing || want) plain_dst = 0;
    if (!plain_src && !plain_dst) plain_edges = 0;
    dnnl_memory_desc_t src_md =
        plain_src ? md_plain(A->src_rank, A->src_dims) : md_any(A->src_rank, A->src_dims);
    dnnl_memory_desc_t w_md = A->wconst ? md_any(A->w_rank, A->wdims)
                                        : md_strided(A->w_rank, A->wdims, A->wsrc_strides);
    dnnl_memory_desc_t b_md = A->has_bias ? md_plain(A->bias_rank, A->bias_dims) : NULL;
    dnnl_memory_desc_t d_md = want       ? md_clone(want)
                              : plain_dst ? md_plain(A->dst_rank, A->dst_dims)
                                          : md_any(A->dst_rank, A->dst_dims);
    if (A->kind == A_MATMUL || A->kind == A_DENSE) {
      /* matmul takes plain activations (the dense inputs are reshaped views) */
      dnnl_memory_desc_destroy(src_md);
      src_md = md_plain(A->src_rank, A->src_dims);
      dnnl_memory_desc_destroy(d_md);
      d_md = md_plain(A->dst_rank, A->dst_dims);
    }
    dnnl_status_t st = anchor_primitive(p, A, &pd, src_md, w_md, b_md, d_md, attr);
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
      /* the probe read the plain source: probe again with the layouts oneDNN picks, else
         the residual stays plain while the source is blocked, and only oneDNN's reference
         convolution (hundreds of times slower) takes mixed layouts */
      if (want) dnnl_memory_desc_destroy(want);
      want = NULL;
      continue;
    }
    if (st == dnnl_success && (npo == 0 || !is_ref_impl(pd))) {
      rc = 0;
      break;
    }
    if (st == dnnl_success) {
      /* only oneDNN's reference kernel takes this post-op (a matmul adding an attention
         mask that broadcasts over rows: 26 ms where the jit kernel and a binary step after
         it take 0.05 ms): drop it, as if oneDNN had rejected it */
      dnnl_primitive_desc_destroy(pd);
      pd = NULL;
      st = dnnl_unimplemented;
    }
    if (npo == 0) {
      fail(p, "oneDNN has no implementation of %s here (status %d)", n->op, (int)st);
      break;
    }
    /* drop the last post-op and the nodes from it on; roll back its reorders */
    rollback(p, nslots_before, nsteps_before, arena_before);
    npo--;
    c->nnodes = c->po[npo].first; /* the nodes before the dropped post-op */
    c->npo = npo;
    c->result = c->nnodes ? g->nodes[c->nodes[c->nnodes - 1]].out[0] : n->out[0];
  }
  if (want) dnnl_memory_desc_destroy(want);
  *pd_out = rc < 0 ? NULL : pd;
  return rc;
}

/* The step running `pd` (consumed): its source, weights (a constant reordered once, or a
   view of a computed one), bias, post-op operands and destination (a sum post-op's residual,
   else a new arena slot), which becomes the slot of the chain's result. */
static int add_anchor_step(planner *p, const anchor *A, const chain *c, const int *src1_slots,
                           dnnl_primitive_desc_t pd) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[A->node];
  int args[DN_MAX_ARGS], slots[DN_MAX_ARGS], na = 0;
  const_dnnl_memory_desc_t q_src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const_dnnl_memory_desc_t q_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const_dnnl_memory_desc_t q_dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  int sid;
  if (A->kind == A_DENSE || A->kind == A_MATMUL)
    sid = slot_reshaped(p, A->x, A->src_rank, A->src_dims);
  else sid = slot_as(p, A->x, q_src);
  if (sid < 0) goto bad;
  args[na] = DNNL_ARG_SRC;
  slots[na++] = sid;
  if (A->wconst) {
    dnnl_memory_desc_t wsrc = md_strided(A->w_rank, A->wdims, A->wsrc_strides);
    sid = reorder_const(p, wsrc, A->wdata, q_w);
    dnnl_memory_desc_destroy(wsrc);
  } else if (A->kind == A_MATMUL || A->kind == A_DENSE) {
    /* a computed weight: a view of its plain buffer ((N, K) read as (K, N) for dense) */
    sid = slot_plain(p, A->w);
    if (sid >= 0) sid = alias_slot(p, sid, md_strided(A->w_rank, A->wdims, A->wsrc_strides));
  } else {
    sid = fail(p, "%s: the weight must be a constant", n->op);
  }
  if (sid < 0) goto bad;
  args[na] = DNNL_ARG_WEIGHTS;
  slots[na++] = sid;
  if (A->has_bias) {
    sid = new_slot(p, md_plain(A->bias_rank, A->bias_dims), LOC_CONST);
    if (sid < 0) goto bad;
    void *buf = owned_alloc(p, p->s->slots[sid].size);
    if (!buf) {
      fail(p, "out of memory");
      goto bad;
    }
    memcpy(buf, A->shift, (size_t)A->channels * sizeof(float));
    p->s->slots[sid].cptr = buf;
    args[na] = DNNL_ARG_BIAS;
    slots[na++] = sid;
  }
  int dst = -1;
  for (int i = 0; i < c->npo; i++) {
    if (c->po[i].kind == PO_SUM) dst = src1_slots[i];
    else if (c->po[i].kind == PO_BINARY) {
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
    snprintf(what, sizeof what, "%s+%d", n->op + 3, c->nnodes);
    int rc = add_step(p, pd, what, na, args, slots);
    pd = NULL;
    if (rc < 0) goto bad;
  }
  /* the chain's result: dst, viewed with its own rank for dense over rank > 2 */
  if (A->kind == A_DENSE && g->entries[n->out[0]].ndim != 2) {
    const dn_entry *re = &g->entries[c->result];
    dst = alias_slot(p, dst, md_plain(re->ndim, re->shape));
    if (dst < 0) goto bad;
  }
  p->entry_slot[c->result] = dst;
  for (int i = 0; i < c->nnodes; i++) p->done[c->nodes[i]] = 1;
  return 0;
bad:
  if (pd) dnnl_primitive_desc_destroy(pd);
  return -1;
}

/* An anchor (conv2d, conv2d_transpose, dense, matmul) and the chain after it as one step. */
static int plan_anchor(planner *p, int a, anchor_kind kind) {
  const dn_graph *g = p->g;
  const dn_node *n = &g->nodes[a];
  anchor A;
  memset(&A, 0, sizeof A);
  A.kind = kind;
  A.node = a;
  A.x = n->in[0];
  A.w = n->in[1];
  A.wconst = is_const(p, A.w);
  A.groups = 1;
  if ((kind == A_CONV || kind == A_DECONV) && conv_attrs(p, &A) < 0) return -1;
  const dn_entry *xe = &g->entries[A.x], *we = &g->entries[A.w], *ye = &g->entries[n->out[0]];
  int rank = ye->ndim;
  A.axis = (kind == A_CONV || kind == A_DECONV) ? 1 : rank - 1;
  A.channels = ye->shape[A.axis];
  int affine_ok = A.wconst && (kind != A_MATMUL || we->ndim == 2);
  chain c;
  collect_chain(p, a, A.axis, A.channels, affine_ok, kind == A_DENSE && xe->ndim != 2, &c);

  /* per-channel scale/shift folded into the weights and the bias */
  float *scale = NULL;
  A.has_bias = c.n_affine > 0;
  if (A.has_bias) {
    A.shift = calloc((size_t)A.channels, sizeof(float));
    if (!A.shift) return fail(p, "out of memory");
    if (fold_affine(p, &c, A.channels, &scale, A.shift) < 0) {
      anchor_free(&A);
      return -1;
    }
  }
  A.wdata = we->data;
  int rc = anchor_dims(p, &A);
  if (rc == 0 && scale && A.wconst) rc = scale_weights(p, &A, scale);
  free(scale);

  int src1_slots[DN_MAX_CHAIN];
  dnnl_primitive_desc_t pd = NULL;
  if (rc == 0) rc = find_primitive(p, &A, &c, src1_slots, &pd);
  if (rc == 0) rc = add_anchor_step(p, &A, &c, src1_slots, pd);
  anchor_free(&A);
  return rc;
}
