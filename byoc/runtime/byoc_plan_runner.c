/*
 * byoc_plan_runner.c — runs a whole host plan in one native call.
 *
 * Generic code shipped with byoc: it interprets plan data that Python builds
 * once per Executable (byoc/runtime/native_plan.py), so no model needs a compile
 * of its own; the library is compiled once per machine, cached like any other,
 * and loaded once per process (it is never unloaded: it keeps no per-thread
 * state that would need a destructor). An exported artifact carries a copy, so
 * loading one needs no compiler.
 *
 * A plan is a list of steps over slots. A slot is a model input, a constant,
 * a model output, a range of the run's arena, or "Python-only" (a value that
 * host kernels make and only host kernels read: it never needs memory here).
 * A step calls
 *   - a C partition's packed entry  `int32_t f(DLTensor** args, int32_t n)`,
 *   - a graph component's entry     `int32_t f(void* module, int32_t graph,
 *                                                DLTensor** args, int32_t n)`,
 *   - or back into Python           `int32_t f(void* ctx, int32_t step,
 *                                                DLTensor** args)`
 *     (host kernels, components without a C entry);
 * args are the step's inputs, then its outputs (destination passing).
 *
 * Each run takes a workspace from the plan's free list (or makes one): the
 * DLTensor of every slot and the argument vector of every step, prebuilt when
 * the workspace is made, followed by the arena. A run only points the input and
 * output tensors at the caller's buffers, calls the steps in order, and copies
 * the outputs that are not written by a step (an input or a constant passed
 * through, one value returned twice). Concurrent runs each hold their own
 * workspace; workspaces are freed with the plan.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byoc_plan_runner.h"

#define BYOC_PLAN_EXPORT __attribute__((visibility("default")))

typedef int32_t (*byoc_plan_entry_fn)(DLTensor** args, int32_t num_args);
typedef int32_t (*byoc_plan_graph_fn)(void* module, int32_t graph, DLTensor** args,
                                      int32_t num_args);

enum { BYOC_STEP_ENTRY = 0, BYOC_STEP_GRAPH = 1, BYOC_STEP_HOST = 2 };
enum {
  BYOC_SLOT_INPUT = 0,
  BYOC_SLOT_CONSTANT = 1,
  BYOC_SLOT_OUTPUT = 2,
  BYOC_SLOT_ARENA = 3,
  BYOC_SLOT_PYTHON = 4
};

typedef struct byoc_plan_ws_ byoc_plan_ws_;
struct byoc_plan_ws_ {
  byoc_plan_ws_* next;     /* in the free list */
  byoc_plan_ws_* next_all; /* in the list of every workspace */
  DLTensor* tensors; /* one per slot */
  DLTensor** argv;   /* one per step argument */
  uint8_t* arena;
};

struct byoc_plan {
  byoc_plan_data d; /* its arrays point into this allocation */
  pthread_mutex_t lock;
  byoc_plan_ws_* free_list;
  byoc_plan_ws_* all;
  int32_t* input_slots;  /* the slots that are an input */
  int32_t num_input_slots;
  int32_t* output_slots; /* the slots that are an output's storage */
  int32_t num_output_slots;
};

static _Thread_local int32_t byoc_plan_code_;

/* The layout of byoc_plan_data and its parts; native_plan.py checks it before use (an
 * artifact may ship a runner built by another byoc). */
#define BYOC_PLAN_ABI 1
BYOC_PLAN_EXPORT uint32_t byoc_plan_abi(void);
BYOC_PLAN_EXPORT uint32_t byoc_plan_abi(void) { return BYOC_PLAN_ABI; }

/* The return code of the step that failed in this thread's last run. */
BYOC_PLAN_EXPORT int32_t byoc_plan_last_code(void);
BYOC_PLAN_EXPORT int32_t byoc_plan_last_code(void) { return byoc_plan_code_; }

static int32_t byoc_plan_check_(const byoc_plan_data* d) {
  if (d->num_slots < 0 || d->num_steps < 0 || d->num_args < 0 || d->num_copies < 0) return -1;
  for (int32_t s = 0; s < d->num_slots; ++s) {
    const byoc_plan_slot* sl = &d->slots[s];
    if (sl->kind < BYOC_SLOT_INPUT || sl->kind > BYOC_SLOT_PYTHON) return -1;
    if (sl->ndim < 0 || sl->ndim > 32) return -1;
    if (sl->kind == BYOC_SLOT_ARENA &&
        (sl->offset > d->arena_size || sl->nbytes > d->arena_size - sl->offset))
      return -1;
  }
  for (int32_t k = 0; k < d->num_steps; ++k) {
    const byoc_plan_step* st = &d->steps[k];
    if (st->num_args < 0 || st->first_arg < 0 || st->first_arg > d->num_args ||
        st->num_args > d->num_args - st->first_arg)
      return -1;
    if (st->kind == BYOC_STEP_HOST ? d->host == NULL : st->fn == NULL) return -1;
  }
  for (int32_t a = 0; a < d->num_args; ++a)
    if (d->arg_slots[a] < 0 || d->arg_slots[a] >= d->num_slots) return -1;
  for (int32_t c = 0; c < d->num_copies; ++c)
    if (d->copies[c].slot < 0 || d->copies[c].slot >= d->num_slots) return -1;
  return 0;
}

/* A runner for the plan `d` describes (copied: `d` need not outlive the call), or NULL if
 * a field is out of range or memory runs out. */
BYOC_PLAN_EXPORT byoc_plan* byoc_plan_new(const byoc_plan_data* d);
BYOC_PLAN_EXPORT byoc_plan* byoc_plan_new(const byoc_plan_data* d) {
  if (byoc_plan_check_(d) != 0) return NULL;
  size_t dims = 0;
  int32_t ni = 0, no = 0;
  for (int32_t s = 0; s < d->num_slots; ++s) {
    dims += (size_t)d->slots[s].ndim;
    ni += d->slots[s].kind == BYOC_SLOT_INPUT;
    no += d->slots[s].kind == BYOC_SLOT_OUTPUT;
  }
  size_t size = sizeof(byoc_plan) + sizeof(byoc_plan_slot) * (size_t)d->num_slots +
                sizeof(byoc_plan_step) * (size_t)d->num_steps +
                sizeof(byoc_plan_copy) * (size_t)d->num_copies + sizeof(int64_t) * dims +
                sizeof(int32_t) * ((size_t)d->num_args + (size_t)ni + (size_t)no);
  uint8_t* mem = calloc(1, size);
  if (mem == NULL) return NULL;
  byoc_plan* p = (byoc_plan*)mem;
  p->d = *d;
  uint8_t* at = mem + sizeof(byoc_plan);
  byoc_plan_slot* slots = (byoc_plan_slot*)at;
  at += sizeof(byoc_plan_slot) * (size_t)d->num_slots;
  byoc_plan_step* steps = (byoc_plan_step*)at;
  at += sizeof(byoc_plan_step) * (size_t)d->num_steps;
  byoc_plan_copy* copies = (byoc_plan_copy*)at;
  at += sizeof(byoc_plan_copy) * (size_t)d->num_copies;
  int64_t* shapes = (int64_t*)at;
  at += sizeof(int64_t) * dims;
  int32_t* arg_slots = (int32_t*)at;
  p->input_slots = arg_slots + d->num_args;
  p->output_slots = p->input_slots + ni;
  if (d->num_slots) memcpy(slots, d->slots, sizeof(byoc_plan_slot) * (size_t)d->num_slots);
  if (d->num_steps) memcpy(steps, d->steps, sizeof(byoc_plan_step) * (size_t)d->num_steps);
  if (d->num_copies) memcpy(copies, d->copies, sizeof(byoc_plan_copy) * (size_t)d->num_copies);
  if (d->num_args) memcpy(arg_slots, d->arg_slots, sizeof(int32_t) * (size_t)d->num_args);
  for (int32_t s = 0; s < d->num_slots; ++s) {
    if (slots[s].ndim > 0)
      memcpy(shapes, d->slots[s].shape, sizeof(int64_t) * (size_t)slots[s].ndim);
    slots[s].shape = shapes;
    shapes += slots[s].ndim;
    if (slots[s].kind == BYOC_SLOT_INPUT) p->input_slots[p->num_input_slots++] = s;
    if (slots[s].kind == BYOC_SLOT_OUTPUT) p->output_slots[p->num_output_slots++] = s;
  }
  p->d.slots = slots;
  p->d.steps = steps;
  p->d.copies = copies;
  p->d.arg_slots = arg_slots;
  if (pthread_mutex_init(&p->lock, NULL) != 0) {
    free(mem);
    return NULL;
  }
  return p;
}

/* Free the runner and every workspace; no run may be in flight. */
BYOC_PLAN_EXPORT void byoc_plan_free(byoc_plan* p);
BYOC_PLAN_EXPORT void byoc_plan_free(byoc_plan* p) {
  if (p == NULL) return;
  byoc_plan_ws_* w = p->all;
  while (w != NULL) {
    byoc_plan_ws_* next = w->next_all;
    free(w);
    w = next;
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static size_t byoc_plan_round_(size_t n) { return (n + 63) & ~(size_t)63; }

/* A new workspace: the tensors of every slot (the arena's and the constants' pointing at
 * their data already), the argument vector of every step, the arena. One allocation. */
static byoc_plan_ws_* byoc_plan_ws_new_(byoc_plan* p) {
  size_t head = byoc_plan_round_(sizeof(byoc_plan_ws_));
  size_t tensors = byoc_plan_round_(sizeof(DLTensor) * (size_t)p->d.num_slots);
  size_t argv = byoc_plan_round_(sizeof(DLTensor*) * (size_t)p->d.num_args);
  size_t total = head + tensors + argv + byoc_plan_round_((size_t)p->d.arena_size);
  uint8_t* mem = aligned_alloc(64, total > 0 ? total : 64);
  if (mem == NULL) return NULL;
  byoc_plan_ws_* w = (byoc_plan_ws_*)mem;
  w->tensors = (DLTensor*)(mem + head);
  w->argv = (DLTensor**)(mem + head + tensors);
  w->arena = mem + head + tensors + argv;
  for (int32_t s = 0; s < p->d.num_slots; ++s) {
    const byoc_plan_slot* sl = &p->d.slots[s];
    DLTensor* t = &w->tensors[s];
    t->data = NULL;
    if (sl->nbytes > 0) {
      if (sl->kind == BYOC_SLOT_ARENA) t->data = w->arena + sl->offset;
      if (sl->kind == BYOC_SLOT_CONSTANT) t->data = sl->data;
    }
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = sl->ndim;
    t->dtype = sl->dtype;
    t->shape = sl->shape;
    t->strides = NULL;
    t->byte_offset = 0;
  }
  for (int32_t a = 0; a < p->d.num_args; ++a) w->argv[a] = &w->tensors[p->d.arg_slots[a]];
  pthread_mutex_lock(&p->lock);
  w->next_all = p->all;
  p->all = w;
  pthread_mutex_unlock(&p->lock);
  return w;
}

/* Run the plan: `inputs` and `outputs` hold the caller's buffers (C-contiguous, of the
 * plan's dtypes and shapes). Returns 0; or k + 1 when step k failed (byoc_plan_last_code()
 * is its code; a host step's error is for the Python side to report); -1 when no
 * workspace could be allocated; -2 when an input is not aligned to its element size
 * (the caller passes an aligned copy instead). Thread-safe. */
BYOC_PLAN_EXPORT int32_t byoc_plan_run(byoc_plan* p, void* const* inputs, void* const* outputs);
BYOC_PLAN_EXPORT int32_t byoc_plan_run(byoc_plan* p, void* const* inputs, void* const* outputs) {
  for (int32_t i = 0; i < p->num_input_slots; ++i) {
    const byoc_plan_slot* sl = &p->d.slots[p->input_slots[i]];
    uintptr_t item = sl->dtype.bits > 8 ? (uintptr_t)sl->dtype.bits / 8 : 1;
    if (sl->nbytes > 0 && (uintptr_t)inputs[sl->index] % item != 0) return -2;
  }
  pthread_mutex_lock(&p->lock);
  byoc_plan_ws_* w = p->free_list;
  if (w != NULL) p->free_list = w->next;
  pthread_mutex_unlock(&p->lock);
  if (w == NULL) {
    w = byoc_plan_ws_new_(p);
    if (w == NULL) return -1;
  }
  DLTensor* tensors = w->tensors;
  for (int32_t i = 0; i < p->num_input_slots; ++i) {
    int32_t s = p->input_slots[i];
    tensors[s].data = p->d.slots[s].nbytes > 0 ? inputs[p->d.slots[s].index] : NULL;
  }
  for (int32_t i = 0; i < p->num_output_slots; ++i) {
    int32_t s = p->output_slots[i];
    tensors[s].data = p->d.slots[s].nbytes > 0 ? outputs[p->d.slots[s].index] : NULL;
  }
  int32_t result = 0;
  for (int32_t k = 0; k < p->d.num_steps; ++k) {
    const byoc_plan_step* st = &p->d.steps[k];
    DLTensor** args = w->argv + st->first_arg;
    int32_t rc;
    switch (st->kind) {
      case BYOC_STEP_ENTRY:
        rc = ((byoc_plan_entry_fn)st->fn)(args, st->num_args);
        break;
      case BYOC_STEP_GRAPH:
        rc = ((byoc_plan_graph_fn)st->fn)(st->module, st->graph, args, st->num_args);
        break;
      default:
        rc = p->d.host(p->d.host_ctx, k, args);
        break;
    }
    if (rc != 0) {
      byoc_plan_code_ = rc;
      result = k + 1;
      break;
    }
  }
  if (result == 0) {
    for (int32_t c = 0; c < p->d.num_copies; ++c) {
      const byoc_plan_copy* cp = &p->d.copies[c];
      const byoc_plan_slot* sl = &p->d.slots[cp->slot];
      if (sl->nbytes > 0) memcpy(outputs[cp->index], tensors[cp->slot].data, sl->nbytes);
    }
  }
  pthread_mutex_lock(&p->lock);
  w->next = p->free_list;
  p->free_list = w;
  pthread_mutex_unlock(&p->lock);
  return result;
}
