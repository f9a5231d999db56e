/*
 * dlpack.h — the DLPack tensor structures byoc's generated C uses.
 *
 * Written to the DLPack specification (https://github.com/dmlc/dlpack,
 * version 1.0, include/dlpack/dlpack.h): the same type names, field order,
 * field types and enum values, so a DLTensor from any DLPack producer
 * (numpy, PyTorch, ...) can be passed to a byoc partition unchanged. Only
 * what byoc needs is declared; DLManagedTensor is kept for completeness.
 */
#ifndef BYOC_DLPACK_H_
#define BYOC_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* The device a tensor lives on. byoc's C code accepts kDLCPU only. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* The type code of DLDataType. */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

/* Element type: float32 is {kDLFloat, 32, 1}, int32 is {kDLInt, 32, 1}. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/*
 * A tensor view. `data` plus `byte_offset` is the first element; `shape` has
 * `ndim` entries; `strides` (in elements, not bytes) is NULL for a compact
 * row-major tensor.
 */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* BYOC_DLPACK_H_ */
