/*
 * byoc_graph_runtime.h — the native graph runtime base: what its library exports.
 *
 * A graph library is `byoc_graph_runtime.c` and one engine (byoc_graph_engine.h)
 * compiled as one translation unit. It loads a serialised graph blob (format
 * version 1, docs/graph.md) once: every field is checked before it is used, the
 * constants are bound by name, and the engine builds each graph's plan. Then any
 * number of threads may run its graphs at once.
 *
 * Errors follow the generated C: a function that fails returns NULL or -1 and
 * `byoc_last_error()` (byoc_runtime.h) says why, on the calling thread.
 *
 *   byoc_graph_module* m = byoc_graph_module_load(blob, size, num_threads);
 *   int32_t g = byoc_graph_module_find(m, "dnnl_main_0");
 *   DLTensor* args[] = {&x, &w, &y};   // inputs, then outputs (destination passing)
 *   if (byoc_graph_run(m, g, args, 3) != 0) puts(byoc_last_error());
 *   byoc_graph_module_free(m);
 *
 * Whoever loads the library calls byoc_retain() once after dlopen and
 * byoc_release() once before dlclose, with no call in flight (byoc_runtime.h).
 */
#ifndef BYOC_GRAPH_RUNTIME_H_
#define BYOC_GRAPH_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include "dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BYOC_GRAPH_FORMAT_VERSION 1

/* graph_module.py hands cffi the declarations between BEGIN and END (no preprocessor lines). */
/* BEGIN byoc_graph cdef */
typedef struct byoc_graph_module byoc_graph_module;

/* Parse and check `blob`, bind its constants, and let the engine plan every graph
 * with `num_threads` threads (< 1: 1). NULL on any error. `blob` is not kept. */
byoc_graph_module* byoc_graph_module_load(const uint8_t* blob, uint64_t size, int32_t num_threads);

/* Free a module (engines' states included); no run of it may be in flight. */
void byoc_graph_module_free(byoc_graph_module* m);

int32_t byoc_graph_module_num_graphs(const byoc_graph_module* m);

/* The index of the graph named `name`, or -1 (and byoc_last_error says so). */
int32_t byoc_graph_module_find(const byoc_graph_module* m, const char* name);

/* The name of graph `g` ("" if out of range). */
const char* byoc_graph_module_graph_name(const byoc_graph_module* m, int32_t g);

/* The signature of graph `g`: its number of inputs and outputs. -1 if out of range. */
int32_t byoc_graph_module_num_args(const byoc_graph_module* m, int32_t g, int32_t* num_inputs,
                                   int32_t* num_outputs);

/* Argument `a` of graph `g` (inputs, then outputs): DLPack dtype code and bits, rank, up to
 * 8 dims into `shape`, and its name (inputs: the argument's; outputs: "out<i>"). -1 if out of
 * range. */
int32_t byoc_graph_module_arg(const byoc_graph_module* m, int32_t g, int32_t a, uint8_t* code,
                              uint8_t* bits, int32_t* ndim, int64_t* shape, const char** name);

/* Run graph `g`: `args` holds its inputs, then its outputs (written). Thread-safe. */
int32_t byoc_graph_run(byoc_graph_module* m, int32_t g, DLTensor** args, int32_t num_args);

/* Tell the engine how many threads each run may use (>= 1); waits for runs in flight. */
int32_t byoc_graph_module_set_num_threads(byoc_graph_module* m, int32_t num_threads);
int32_t byoc_graph_module_num_threads(const byoc_graph_module* m);

/* The engine compiled into this library ("reference", "dnnl", ...). */
const char* byoc_graph_engine_name(void);
uint32_t byoc_graph_format_version(void);
/* END byoc_graph cdef */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BYOC_GRAPH_RUNTIME_H_ */
