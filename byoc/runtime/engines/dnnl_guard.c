/*
 * Guards: NaN and infinities as the reference gives them, where oneDNN's kernels lose them.
 *
 * oneDNN's x86 kernels compute relu, clip, hard_sigmoid, exp's input clamp, maximum,
 * minimum, max pooling and softmax's row maximum with MAXPS/MINPS, which return the second
 * operand when either is NaN: a NaN becomes a number, a window holding a NaN pools to a
 * number, a softmax row with a NaN or +inf gets one NaN where the reference fills the row.
 * A guard step runs right after the primitive and restores what the reference computes:
 *
 *   GUARD_UNARY    dst[i] = src[i] where src[i] is NaN (src and dst share one layout)
 *   GUARD_BINARY   dst[i] = a[i] where a[i] is NaN, else b[i] where b[i] is NaN
 *   GUARD_SOFTMAX  a row holding a NaN or +inf, or only -inf, is all NaN
 *   GUARD_MAX_POOL a window holding a NaN is NaN; one whose elements are all -inf is -inf
 *
 * The elementwise guards need no layout: they pass over the buffers as they are. The row
 * and window guards first scan the source (in whatever layout it has) for a NaN or an
 * infinity and stop there when it holds none: one read of the source, the common case.
 * Otherwise the source and the result are reordered to plain row-major temporaries, the
 * rows or windows fixed there, and the result reordered back.
 *
 * Part of the oneDNN engine: compiled as one translation unit after dnnl_engine.c, in the
 * order byoc/targets/dnnl/target.py lists the sources.
 */

static int drops_nan_eltwise(dnnl_alg_kind_t alg, float a) {
  return (alg == dnnl_eltwise_relu && a == 0.f) || alg == dnnl_eltwise_clip_v2 ||
         alg == dnnl_eltwise_clip || alg == dnnl_eltwise_hardsigmoid || alg == dnnl_eltwise_exp;
}

static int drops_nan_binary(dnnl_alg_kind_t alg) {
  return alg == dnnl_binary_max || alg == dnnl_binary_min;
}

static step *new_guard(planner *p, int kind, const char *what) {
  dn_state *s = p->s;
  if (s->nsteps == s->capsteps) {
    int cap = s->capsteps ? 2 * s->capsteps : 32;
    step *n = realloc(s->steps, (size_t)cap * sizeof(step));
    if (!n) {
      fail(p, "out of memory");
      return NULL;
    }
    s->steps = n;
    s->capsteps = cap;
  }
  step *st = &s->steps[s->nsteps++];
  memset(st, 0, sizeof(*st));
  st->guard = kind;
  snprintf(st->what, sizeof st->what, "guard:%s", what);
  return st;
}

/* The guard of an elementwise step that wrote entry y's slot from `srcs` slots (same layout). */
static int add_elementwise_guard(planner *p, int kind, int nsrc, const int *srcs, int y,
                                 const char *what) {
  int dst = p->entry_slot[y];
  for (int i = 0; i < nsrc; i++)
    if (!md_equal(p->s->slots[srcs[i]].md, p->s->slots[dst].md))
      return fail(p, "%s: the NaN guard needs its operands in the result's layout", what);
  step *st = new_guard(p, kind, what);
  if (!st) return -1;
  st->nargs = nsrc + 1;
  for (int i = 0; i < nsrc; i++) st->slot[i] = srcs[i];
  st->slot[nsrc] = dst;
  st->geo[0] = (int64_t)(dnnl_memory_desc_get_size(p->s->slots[dst].md) / sizeof(float));
  return 0;
}

/* A reorder primitive from layout `from` to `to`, or NULL (in *out) when they are equal. */
static int guard_reorder(planner *p, const_dnnl_memory_desc_t from, const_dnnl_memory_desc_t to,
                         dnnl_primitive_t *out) {
  *out = NULL;
  if (md_equal(from, to)) return 0;
  dnnl_primitive_desc_t pd = NULL;
  DN_CHECK(p, dnnl_reorder_primitive_desc_create(&pd, from, p->s->eng, to, p->s->eng, NULL),
           "guard reorder");
  dnnl_status_t st = dnnl_primitive_create(out, pd);
  dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) return fail(p, "oneDNN: cannot create a guard reorder (status %d)", (int)st);
  return 0;
}

/* The guard of a row or window step: source slot `x` (entry xe), result entry y. Slots:
   source, result, plain source, plain result. */
static step *add_plain_guard(planner *p, int kind, int x, const dn_entry *xe, int y,
                             const char *what) {
  const dn_entry *ye = &p->g->entries[y];
  int dst = p->entry_slot[y];
  dnnl_memory_desc_t xplain = md_plain(xe->ndim, xe->shape);
  dnnl_memory_desc_t yplain = md_plain(ye->ndim, ye->shape);
  if (!xplain || !yplain) {
    if (xplain) dnnl_memory_desc_destroy(xplain);
    if (yplain) dnnl_memory_desc_destroy(yplain);
    fail(p, "oneDNN: cannot describe the guard of %s", what);
    return NULL;
  }
  int xs = md_equal(p->s->slots[x].md, xplain) ? x : new_slot(p, md_clone(xplain), LOC_ARENA);
  int ys = md_equal(p->s->slots[dst].md, yplain) ? dst : new_slot(p, md_clone(yplain), LOC_ARENA);
  step *st = NULL;
  if (xs >= 0 && ys >= 0) st = new_guard(p, kind, what);
  if (st) {
    st->nargs = 4;
    st->slot[0] = x;
    st->slot[1] = dst;
    st->slot[2] = xs;
    st->slot[3] = ys;
    if (guard_reorder(p, p->s->slots[x].md, xplain, &st->reorder[0]) < 0 ||
        guard_reorder(p, p->s->slots[dst].md, yplain, &st->reorder[1]) < 0 ||
        guard_reorder(p, yplain, p->s->slots[dst].md, &st->reorder[2]) < 0)
      st = NULL;
    else
      st->geo[0] = (int64_t)(dnnl_memory_desc_get_size(p->s->slots[x].md) / sizeof(float));
  }
  dnnl_memory_desc_destroy(xplain);
  dnnl_memory_desc_destroy(yplain);
  return st;
}

static int add_softmax_guard(planner *p, int x, const dn_entry *xe, int axis, int y) {
  step *st = add_plain_guard(p, GUARD_SOFTMAX, x, xe, y, "softmax");
  if (!st) return -1;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= xe->shape[i];
  for (int i = axis + 1; i < xe->ndim; i++) inner *= xe->shape[i];
  st->geo[1] = outer;
  st->geo[2] = xe->shape[axis];
  st->geo[3] = inner;
  return 0;
}

/* k, s, pad (top, left), d: the pool's window; the result's shape gives OH, OW. */
static int add_max_pool_guard(planner *p, int x, const dn_entry *xe, int y, const int64_t *k,
                              const int64_t *s, const int64_t *pad, const int64_t *d) {
  step *st = add_plain_guard(p, GUARD_MAX_POOL, x, xe, y, "max_pool2d");
  if (!st) return -1;
  const dn_entry *ye = &p->g->entries[y];
  int64_t geo[15] = {xe->shape[0] * xe->shape[1], xe->shape[2], xe->shape[3], ye->shape[2],
                     ye->shape[3], k[0], k[1], s[0], s[1], pad[0], pad[1], d[0], d[1]};
  memcpy(&st->geo[1], geo, 13 * sizeof(int64_t));
  return 0;
}

/* ---- run time ------------------------------------------------------------------ */

static float *guard_data(ws *w, int slot) {
  void *h = NULL;
  dnnl_memory_get_data_handle(w->mem[slot], &h);
  return (float *)h;
}

static int guard_exec_reorder(ws *w, dnnl_primitive_t prim, int from, int to) {
  if (prim == NULL) return 0;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, w->mem[from]}, {DNNL_ARG_TO, w->mem[to]}};
  if (dnnl_primitive_execute(prim, w->stream, 2, args) != dnnl_success) return -1;
  return dnnl_stream_wait(w->stream) == dnnl_success ? 0 : -1;
}

static void guard_softmax_rows(const float *x, float *y, const int64_t *geo) {
  int64_t outer = geo[1], len = geo[2], inner = geo[3];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      const float *xr = x + o * len * inner + i;
      int poisoned = 0, all_neg_inf = len > 0;
      for (int64_t j = 0; j < len; j++) {
        float v = xr[j * inner];
        if (isnan(v) || v == INFINITY) poisoned = 1;
        if (v != -INFINITY) all_neg_inf = 0;
      }
      if (poisoned || all_neg_inf)
        for (int64_t j = 0; j < len; j++) y[o * len * inner + i + j * inner] = NAN;
    }
}

static void guard_max_pool_windows(const float *x, float *y, const int64_t *geo) {
  int64_t nc = geo[1], h = geo[2], wd = geo[3], oh = geo[4], ow = geo[5];
  int64_t kh = geo[6], kw = geo[7], sh = geo[8], sw = geo[9], pt = geo[10], pl = geo[11];
  int64_t dh = geo[12], dw = geo[13];
  for (int64_t c = 0; c < nc; c++)
    for (int64_t r = 0; r < oh; r++)
      for (int64_t q = 0; q < ow; q++) {
        int has_nan = 0, seen = 0, all_neg_inf = 1;
        for (int64_t i = 0; i < kh && !has_nan; i++) {
          int64_t ih = r * sh - pt + i * dh;
          if (ih < 0 || ih >= h) continue;
          for (int64_t j = 0; j < kw; j++) {
            int64_t iw = q * sw - pl + j * dw;
            if (iw < 0 || iw >= wd) continue;
            float v = x[(c * h + ih) * wd + iw];
            seen = 1;
            if (isnan(v)) {
              has_nan = 1;
              break;
            }
            if (v != -INFINITY) all_neg_inf = 0;
          }
        }
        float *out = &y[(c * oh + r) * ow + q];
        if (has_nan) *out = NAN;
        else if (seen && all_neg_inf) *out = -INFINITY;
      }
}

/* Run guard step `st` on workspace w (after the stream has finished the step before it). */
static int run_guard(const step *st, ws *w) {
  if (dnnl_stream_wait(w->stream) != dnnl_success) return -1;
  if (st->guard == GUARD_UNARY || st->guard == GUARD_BINARY) {
    int nsrc = st->guard == GUARD_UNARY ? 1 : 2;
    const float *a = guard_data(w, st->slot[0]);
    const float *b = nsrc == 2 ? guard_data(w, st->slot[1]) : NULL;
    float *y = guard_data(w, st->slot[nsrc]);
    for (int64_t i = 0; i < st->geo[0]; i++) {
      if (isnan(a[i])) y[i] = a[i];
      else if (b && isnan(b[i])) y[i] = b[i];
    }
    return 0;
  }
  /* rows and windows: nothing to do unless the source holds a NaN or an infinity */
  const float *x = guard_data(w, st->slot[0]);
  int64_t i = 0;
  while (i < st->geo[0] && isfinite(x[i])) i++;
  if (i == st->geo[0]) return 0;
  if (guard_exec_reorder(w, st->reorder[0], st->slot[0], st->slot[2]) < 0 ||
      guard_exec_reorder(w, st->reorder[1], st->slot[1], st->slot[3]) < 0)
    return -1;
  const float *xp = guard_data(w, st->slot[2]);
  float *yp = guard_data(w, st->slot[3]);
  if (st->guard == GUARD_SOFTMAX) guard_softmax_rows(xp, yp, st->geo);
  else guard_max_pool_windows(xp, yp, st->geo);
  return guard_exec_reorder(w, st->reorder[2], st->slot[3], st->slot[1]);
}
