// RUN: %byoc-opt %s --split-input-file -p lower-to-c | %filecheck %s --check-prefixes=CHECK,FUSED
// RUN: %byoc-opt %s --split-input-file -p 'lower-to-c{fuse=false}' | %filecheck %s --check-prefixes=CHECK,PEROP

/// The seed's subgraph. Per-op mode keeps the seed's structure: three kernels,
/// one buffer per intermediate (two), the subgraph function `<sym>_`, the
/// typed DLTensor wrapper and the packed entry. Fused mode: one loop, no buffer.
// CHECK-LABEL: func.func @main
// CHECK:         func.call @ccompiler_main_0
// CHECK:       func.func private @ccompiler_main_0(tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"}{{$}}
// CHECK:       c.module {
// CHECK-NEXT:    c.include "byoc_runtime.h"
// CHECK-NEXT:    c.include "byoc_kernels.h"

// PEROP-NEXT:    c.func static noalias @byoc_p_ccompiler_main_0_0(%[[IN0:.*]]: !c.ptr<f32, const>, %[[IN1:.*]]: !c.ptr<f32, const>, %[[OUT:.*]]: !c.ptr<f32>) {
// PEROP-NEXT:      c.verbatim "/* nn.add: 10x10 f32 */"
// PEROP-NEXT:      c.verbatim "BYOC_SIMD"
// PEROP-NEXT:      c.for %[[I:.*]] = 0 to 100 {
// PEROP-NEXT:        %[[A:.*]] = c.load %[[IN0]][%[[I]]] : !c.ptr<f32, const>
// PEROP-NEXT:        %[[B:.*]] = c.load %[[IN1]][%[[I]]] : !c.ptr<f32, const>
// PEROP-NEXT:        %[[S:.*]] = c.add %[[A]], %[[B]] : f32
// PEROP-NEXT:        c.store %[[S]], %[[OUT]][%[[I]]] : !c.ptr<f32>
// PEROP-NEXT:      }
// PEROP-NEXT:      c.return
// PEROP-NEXT:    }
// PEROP-NEXT:    c.func static noalias @byoc_p_ccompiler_main_0_1(
// PEROP:           c.sub
// PEROP:         c.func static noalias @byoc_p_ccompiler_main_0_2(
// PEROP:           c.mul
// PEROP:         c.func static @byoc_p_ccompiler_main_0_(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %in2: !c.ptr<f32, const>, %in3: !c.ptr<f32, const>, %out0: !c.ptr<f32>, %ws: !c.ptr<i8>) {
// PEROP-NEXT:      %[[BUF0:.*]] = c.buffer %ws[0, 400] : !c.ptr<f32>
// PEROP-NEXT:      c.call @byoc_p_ccompiler_main_0_0(%in0, %in1, %[[BUF0]])
// PEROP-NEXT:      %[[CBUF0:.*]] = c.cast %[[BUF0]] : !c.ptr<f32> to !c.ptr<f32, const>
// PEROP-NEXT:      %[[BUF1:.*]] = c.buffer %ws[448, 400] : !c.ptr<f32>
// PEROP-NEXT:      c.call @byoc_p_ccompiler_main_0_1(%[[CBUF0]], %in2, %[[BUF1]])
// PEROP-NEXT:      %[[CBUF1:.*]] = c.cast %[[BUF1]] : !c.ptr<f32> to !c.ptr<f32, const>
// PEROP-NEXT:      c.call @byoc_p_ccompiler_main_0_2(%[[CBUF1]], %in3, %out0)
// PEROP-NEXT:      c.return
// PEROP-NEXT:    }

// FUSED-NEXT:    c.func static noalias @byoc_p_ccompiler_main_0_0(%[[IN0:.*]]: !c.ptr<f32, const>, %[[IN1:.*]]: !c.ptr<f32, const>, %[[IN2:.*]]: !c.ptr<f32, const>, %[[IN3:.*]]: !c.ptr<f32, const>, %[[OUT:.*]]: !c.ptr<f32>) {
// FUSED-NEXT:      c.verbatim "/* nn.add, nn.subtract, nn.multiply: 10x10 f32 */"
// FUSED-NEXT:      c.verbatim "BYOC_SIMD"
// FUSED-NEXT:      c.for %[[I:.*]] = 0 to 100 {
// FUSED-NEXT:        %[[A:.*]] = c.load %[[IN0]][%[[I]]]
// FUSED-NEXT:        %[[B:.*]] = c.load %[[IN1]][%[[I]]]
// FUSED-NEXT:        %[[C:.*]] = c.load %[[IN2]][%[[I]]]
// FUSED-NEXT:        %[[D:.*]] = c.load %[[IN3]][%[[I]]]
// FUSED-NEXT:        %[[S:.*]] = c.add %[[A]], %[[B]] : f32
// FUSED-NEXT:        %[[T:.*]] = c.sub %[[S]], %[[C]] : f32
// FUSED-NEXT:        %[[U:.*]] = c.mul %[[T]], %[[D]] : f32
// FUSED-NEXT:        c.store %[[U]], %[[OUT]][%[[I]]] : !c.ptr<f32>
// FUSED-NEXT:      }
// FUSED-NEXT:      c.return
// FUSED-NEXT:    }
// FUSED-NEXT:    c.func static @byoc_p_ccompiler_main_0_(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %in2: !c.ptr<f32, const>, %in3: !c.ptr<f32, const>, %out0: !c.ptr<f32>) {
// FUSED-NEXT:      c.call @byoc_p_ccompiler_main_0_0(%in0, %in1, %in2, %in3, %out0)
// FUSED-NEXT:      c.return
// FUSED-NEXT:    }

// CHECK-NEXT:    c.func @byoc_p_ccompiler_main_0_wrapper(%in0: !c.ptr<!c.opaque<"DLTensor">>, %in1: !c.ptr<!c.opaque<"DLTensor">>, %in2: !c.ptr<!c.opaque<"DLTensor">>, %in3: !c.ptr<!c.opaque<"DLTensor">>, %out0: !c.ptr<!c.opaque<"DLTensor">>) -> i32 attributes {c.diagnostic_name = "ccompiler_main_0"} {
// CHECK-NEXT:      c.check_tensor %in0, input 0 "a" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_tensor %in1, input 1 "b" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_tensor %in2, input 2 "c" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_tensor %in3, input 3 "d" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_tensor %out0, output 0 "out0" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_disjoint(%in0, %in1, %in2, %in3, %out0) {names = ["a", "b", "c", "d", "out0"], nbytes = array<i64: 400, 400, 400, 400, 400>, num_outputs = 1 : i64}
// CHECK-NEXT:      %in0_data = c.tensor_data %in0 : !c.ptr<f32, const>
// CHECK:           %out0_data = c.tensor_data %out0 : !c.ptr<f32>
// PEROP-NEXT:      %ws = c.workspace 896 : !c.ptr<i8>
// PEROP-NEXT:      c.call @byoc_p_ccompiler_main_0_(%in0_data, %in1_data, %in2_data, %in3_data, %out0_data, %ws)
// FUSED-NEXT:      c.call @byoc_p_ccompiler_main_0_(%in0_data, %in1_data, %in2_data, %in3_data, %out0_data)
// CHECK-NEXT:      %[[Z:.*]] = c.constant 0 : i32
// CHECK-NEXT:      c.return %[[Z]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    c.func @byoc_p_ccompiler_main_0(%args: !c.ptr<!c.ptr<!c.opaque<"DLTensor">>>, %num_args: i32) -> i32 attributes {c.diagnostic_name = "ccompiler_main_0"} {
// CHECK-NEXT:      c.check_arg_count %num_args, 4 inputs, 1 outputs
// CHECK:           %[[R:.*]] = c.call @byoc_p_ccompiler_main_0_wrapper(
// CHECK-NEXT:      c.return %[[R]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    c.func @byoc_init(%consts: !c.ptr<!c.ptr<!c.opaque<"void">, const>, const>, %num_consts: i32) -> i32 {
// CHECK-NEXT:      c.check_arg_count %num_consts, 0 inputs, 0 outputs
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = func.call @ccompiler_main_0(%a, %b, %c, %d) : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}
func.func private @ccompiler_main_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

/// A diamond: both branches read x once, in one loop (fused), or in three kernels.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_diamond_0(
// FUSED:         c.for %[[I:.*]] = 0 to 32 {
// FUSED-NEXT:      %[[X:.*]] = c.load %in0[%[[I]]] : !c.ptr<f32, const>
// FUSED-NEXT:      %[[E:.*]] = c.call_opaque "expf"(%[[X]]) : (f32) -> f32
// FUSED-NEXT:      %[[ZERO:.*]] = c.constant 0.0 : f32
// FUSED-NEXT:      %[[NEG:.*]] = c.cmp lt, %[[X]], %[[ZERO]] : f32
// FUSED-NEXT:      %[[R:.*]] = c.select %[[NEG]], %[[ZERO]], %[[X]] : f32
// FUSED-NEXT:      %[[S:.*]] = c.add %[[E]], %[[R]] : f32
// FUSED-NEXT:      c.store %[[S]], %out0[%[[I]]] : !c.ptr<f32>
// FUSED-NEXT:    }
// FUSED-NOT:   c.func static noalias @byoc_p_ccompiler_diamond_1(
// PEROP:       c.func static noalias @byoc_p_ccompiler_diamond_1(
// PEROP:       c.func static noalias @byoc_p_ccompiler_diamond_2(
// CHECK:       c.func static @byoc_p_ccompiler_diamond_(
func.func private @ccompiler_diamond(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.exp %x : tensor<4x8xf32>
  %1 = nn.relu %x : tensor<4x8xf32>
  %2 = nn.add %0, %1 : tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// -----

/// Multi-output: the interior sum is also a result; the fused loop stores both.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_multi_0(
// FUSED-SAME:    %out0: !c.ptr<f32>, %out1: !c.ptr<f32>) {
// FUSED:         %[[S:.*]] = c.add
// FUSED-NEXT:    %[[T:.*]] = c.call_opaque "byoc_tanhf"(%[[S]])
// FUSED-NEXT:    c.store %[[S]], %out0[%{{.*}}]
// FUSED-NEXT:    c.store %[[T]], %out1[%{{.*}}]
// CHECK:       c.func static @byoc_p_ccompiler_multi_(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %out0: !c.ptr<f32>, %out1: !c.ptr<f32>) {
// FUSED-NEXT:    c.call @byoc_p_ccompiler_multi_0(%in0, %in1, %out0, %out1)
// PEROP-NEXT:    c.call @byoc_p_ccompiler_multi_0(%in0, %in1, %out0)
// PEROP-NEXT:    %[[C:.*]] = c.cast %out0 : !c.ptr<f32> to !c.ptr<f32, const>
// PEROP-NEXT:    c.call @byoc_p_ccompiler_multi_1(%[[C]], %out1)
// CHECK:       c.check_arg_count %num_args, 2 inputs, 2 outputs
func.func private @ccompiler_multi(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.add %x, %y : tensor<16xf32>
  %1 = nn.tanh %0 : tensor<16xf32>
  func.return %0, %1 : tensor<16xf32>, tensor<16xf32>
}

// -----

/// Broadcast: a 3x1 column times a 5-vector; the loop nest reads each by its own index.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_bcast_0(
// CHECK:         c.for %[[I:.*]] = 0 to 3 {
// CHECK-NEXT:      %[[FIVE:.*]] = c.constant 5 : index
// CHECK-NEXT:      %[[ROW:.*]] = c.mul %[[I]], %[[FIVE]] : index
// CHECK-NEXT:      c.verbatim "BYOC_SIMD"
// CHECK-NEXT:      c.for %[[J:.*]] = 0 to 5 {
// CHECK-NEXT:        %[[K:.*]] = c.add %[[ROW]], %[[J]] : index
// CHECK-NEXT:        %[[X:.*]] = c.load %in0[%[[I]]] : !c.ptr<f32, const>
// CHECK-NEXT:        %[[Y:.*]] = c.load %in1[%[[J]]] : !c.ptr<f32, const>
// CHECK-NEXT:        %[[P:.*]] = c.mul %[[X]], %[[Y]] : f32
// FUSED-NEXT:        %[[SIG:.*]] = c.call_opaque "byoc_sigmoidf"(%[[P]]) : (f32) -> f32
// FUSED-NEXT:        c.store %[[SIG]], %out0[%[[K]]] : !c.ptr<f32>
// PEROP-NEXT:        c.store %[[P]], %out0[%[[K]]] : !c.ptr<f32>
func.func private @ccompiler_bcast(%x: tensor<3x1xf32>, %y: tensor<5xf32>) -> tensor<3x5xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.multiply %x, %y : (tensor<3x1xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %1 = nn.sigmoid %0 : tensor<3x5xf32>
  func.return %1 : tensor<3x5xf32>
}

// -----

/// conv2d -> bias_add -> relu: fused, the bias and the relu are the convolution
/// kernel's epilogue (applied to each tile before it is stored: one call, no
/// intermediate; the weight stands in for the absent scale and shift); per op,
/// the convolution calls its kernel into a workspace buffer and bias and relu
/// are kernels of their own.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_conv_0(
// FUSED-NEXT:    c.verbatim "/* nn.conv2d, nn.bias_add, nn.relu: 1x4x8x8 f32 */"
// FUSED-NEXT:    c.call_opaque "byoc_conv2d_ep_f32"(%in0, %in1, %in2, %in1, %in1, %out0, %tmp0) {args = [0 : index, 1 : index, 2 : index, 3 : index, 4 : index, 5 : index, 6 : index, 1 : i64, 3 : i64, 8 : i64, 8 : i64, 4 : i64, 3 : i64, 3 : i64, 8 : i64, 8 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i32, 1 : i32, 0.000000e+00 : f32, 0.000000e+00 : f32]}
// FUSED-NOT:   c.func static noalias @byoc_p_ccompiler_conv_1(
// FUSED:       c.func static @byoc_p_ccompiler_conv_(
// FUSED-NEXT:    %[[TMP:.*]] = c.buffer %ws[0, {{.*}}] : !c.ptr<f32>
// FUSED-NEXT:    c.call @byoc_p_ccompiler_conv_0(%in0, %in1, %in2, %out0, %[[TMP]])
// PEROP-NEXT:    c.verbatim "/* nn.conv2d: 1x4x8x8 f32 */"
// PEROP-NEXT:    c.call_opaque "byoc_conv2d_f32"(%in0, %in1, %out0, %tmp0) {args = [0 : index, 1 : index, 2 : index, 3 : index, 1 : i64, 3 : i64, 8 : i64, 8 : i64, 4 : i64, 3 : i64, 3 : i64, 8 : i64, 8 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64]}
// PEROP:       c.func static noalias @byoc_p_ccompiler_conv_1(
// PEROP-NEXT:    c.verbatim "/* nn.bias_add: 1x4x8x8 f32 */"
// PEROP:       c.func static noalias @byoc_p_ccompiler_conv_2(
// PEROP:       c.func static @byoc_p_ccompiler_conv_(
// PEROP-NEXT:    %[[BUF:.*]] = c.buffer %ws[0, 1024] : !c.ptr<f32>
// PEROP-NEXT:    %[[TMP:.*]] = c.buffer %ws[1024, {{.*}}] : !c.ptr<f32>
// PEROP-NEXT:    c.call @byoc_p_ccompiler_conv_0(%in0, %in1, %[[BUF]], %[[TMP]])
func.func private @ccompiler_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  func.return %2 : tensor<1x4x8x8xf32>
}

// -----

/// Buffers are reused once their last reader has run (fused mode); per-op mode
/// gives every intermediate its own. A convolution also gets scratch for its
/// padded input, live only during its call (its im2col panels are on the stack of the thread computing them). Constants become globals; a large
/// one is bound by byoc_init and not printed.
// CHECK-LABEL: c.module {
// CHECK:         c.global @byoc_p_ccompiler_reuse_c0 init 0 = dense<"0x{{.*}}"> : tensor<4x16x32xf32>
// CHECK:       c.func static @byoc_p_ccompiler_reuse_(
// FUSED-NEXT:    c.buffer %ws[0, 8192]
// FUSED-NEXT:    c.buffer %ws[8192, 9792]
// FUSED-NEXT:    c.call @byoc_p_ccompiler_reuse_0
// FUSED:         c.buffer %ws[8192, 8192]
// FUSED-NEXT:    c.buffer %ws[16384, 9792]
// FUSED-NEXT:    c.call @byoc_p_ccompiler_reuse_1
// FUSED:         c.buffer %ws[0, 8192]
// FUSED-NEXT:    c.buffer %ws[16384, 9792]
// FUSED-NEXT:    c.call @byoc_p_ccompiler_reuse_2
// FUSED:         c.buffer %ws[8192, 8192]
// FUSED-NEXT:    c.buffer %ws[16384, 9792]
// FUSED-NEXT:    c.call @byoc_p_ccompiler_reuse_3
// FUSED-NOT:     c.buffer
// FUSED:         c.check_bound @byoc_p_ccompiler_reuse_c0
// FUSED:         c.workspace 26176
// PEROP-NEXT:    c.buffer %ws[0, 8192]
// PEROP-NEXT:    c.buffer %ws[8192, 9792]
// PEROP:         c.buffer %ws[17984, 8192]
// PEROP-NEXT:    c.buffer %ws[26176, 9792]
// PEROP:         c.buffer %ws[35968, 8192]
// PEROP-NEXT:    c.buffer %ws[44160, 9792]
// PEROP:         c.buffer %ws[53952, 8192]
// PEROP-NEXT:    c.buffer %ws[62144, 9792]
// PEROP:         c.check_bound @byoc_p_ccompiler_reuse_c0
// PEROP:         c.workspace 71936
// CHECK:       c.func @byoc_init(
// CHECK-NEXT:    c.check_arg_count %num_consts, 1 inputs, 0 outputs
// CHECK:         c.bind_global @byoc_p_ccompiler_reuse_c0,
func.func private @ccompiler_reuse(%x: tensor<1x4x16x32xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x16x32xf32> attributes {byoc.compiler = "ccompiler"} {
  %big = nn.constant dense<0.5> : tensor<4x16x32xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x16x32xf32>
  %1 = nn.conv2d %0, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x16x32xf32>
  %2 = nn.conv2d %1, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x16x32xf32>
  %r = nn.reshape %big {newshape = array<i64: 2048>} : (tensor<4x16x32xf32>) -> tensor<2048xf32>
  %s = nn.reshape %r {newshape = array<i64: 4, 16, 32>} : (tensor<2048xf32>) -> tensor<4x16x32xf32>
  %3 = nn.conv2d %2, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x16x32xf32>
  %4 = nn.add %3, %s : (tensor<1x4x16x32xf32>, tensor<4x16x32xf32>) -> tensor<1x4x16x32xf32>
  func.return %4 : tensor<1x4x16x32xf32>
}
