/*
 * byoc_plan_runner.h — the plan data byoc_plan_runner.c interprets and the functions it
 * exports.
 *
 * Python (byoc/runtime/native_plan.py) fills these structs and hands its cffi the text
 * between the BEGIN and END markers below as its declarations, so both sides read one
 * copy of the layout. That text is plain C that cffi parses: no preprocessor lines.
 */
#ifndef BYOC_PLAN_RUNNER_H_
#define BYOC_PLAN_RUNNER_H_

#include <stdint.h>

#include "dlpack.h"

/* BEGIN byoc_plan cdef */
typedef int32_t (*byoc_plan_host_fn)(void* ctx, int32_t step, DLTensor** args);

/* One slot of the plan: a model input, a constant, a model output, a range of the
 * arena, or a value only Python holds. */
typedef struct {
  int32_t kind;
  int32_t index;    /* input or output number (INPUT, OUTPUT) */
  uint64_t offset;  /* into the arena (ARENA) */
  uint64_t nbytes;
  void* data;       /* CONSTANT */
  DLDataType dtype;
  int32_t ndim;
  int64_t* shape;
} byoc_plan_slot;

typedef struct {
  int32_t kind;
  int32_t graph;
  void* fn;
  void* module;
  int32_t num_args;
  int32_t first_arg; /* into arg_slots */
} byoc_plan_step;

typedef struct {
  int32_t slot;      /* the slot output `index` reads */
  int32_t index;
} byoc_plan_copy;

/* The plan as Python describes it; byoc_plan_new copies it (shapes included). */
typedef struct {
  int32_t num_slots;
  int32_t num_steps;
  int32_t num_args;
  int32_t num_copies;
  const byoc_plan_slot* slots;
  const byoc_plan_step* steps;
  const int32_t* arg_slots;
  const byoc_plan_copy* copies;
  uint64_t arena_size;
  void* host_ctx;
  byoc_plan_host_fn host;
} byoc_plan_data;

typedef struct byoc_plan byoc_plan;

/* A plan made from a copy of `d` (shapes included); NULL if `d` is not consistent. */
byoc_plan* byoc_plan_new(const byoc_plan_data* d);
void byoc_plan_free(byoc_plan* p);
/* Run the plan on the caller's input and output buffers (return codes: byoc_plan_runner.c). */
int32_t byoc_plan_run(byoc_plan* p, void* const* inputs, void* const* outputs);
int32_t byoc_plan_last_code(void);
uint32_t byoc_plan_abi(void);
/* END byoc_plan cdef */

#endif /* BYOC_PLAN_RUNNER_H_ */
