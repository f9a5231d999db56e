// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s

/// Every op of the c dialect round-trips through the custom and the generic form.
// CHECK-LABEL: c.module {
// CHECK-NEXT:    c.include <"math.h">
// CHECK-NEXT:    c.include "byoc_runtime.h"
// CHECK-NEXT:    c.global @w = dense<[1.5, -0.1, 2.0]> : tensor<3xf32>
// CHECK-NEXT:    c.global @big init 0 = dense<"0x{{[0-9A-F]+}}"> : tensor<17xf32>
// CHECK-NEXT:    c.func static noalias @k(%in0: !c.ptr<f32, const>, %out0: !c.ptr<f32>) {
// CHECK-NEXT:      c.verbatim "/* a comment */"
// CHECK-NEXT:      c.for %i = 0 to 100 step 4 {
// CHECK-NEXT:        %a = c.load %in0[%i] : !c.ptr<f32, const>
// CHECK-NEXT:        %z = c.constant 0.0 : f32
// CHECK-NEXT:        %inf = c.constant 0x7F800000 : f32
// CHECK-NEXT:        %s = c.add %a, %z : f32
// CHECK-NEXT:        %d = c.sub %s, %inf : f32
// CHECK-NEXT:        %m = c.mul %d, %d : f32
// CHECK-NEXT:        %q = c.div %m, %a : f32
// CHECK-NEXT:        %n = c.neg %q : f32
// CHECK-NEXT:        %lt = c.cmp lt, %n, %z : f32
// CHECK-NEXT:        %ne = c.cmp ne, %n, %n : f32
// CHECK-NEXT:        %or = c.logical_or %lt, %ne : i1
// CHECK-NEXT:        %and = c.logical_and %or, %lt : i1
// CHECK-NEXT:        %sel = c.select %and, %z, %n : f32
// CHECK-NEXT:        %e = c.call_opaque "expf"(%sel) : (f32) -> f32
// CHECK-NEXT:        %k = c.cast %e : f32 to i32
// CHECK-NEXT:        %r = c.rem %k, %k : i32
// CHECK-NEXT:        c.store %e, %out0[%i] : !c.ptr<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      c.return
// CHECK-NEXT:    }
// CHECK-NEXT:    c.func @entry(%t: !c.ptr<!c.opaque<"DLTensor">>, %n: i32) -> i32 attributes {c.diagnostic_name = "entry"} {
// CHECK-NEXT:      c.check_arg_count %n, 1 inputs, 0 outputs
// CHECK-NEXT:      c.check_tensor %t, input 0 "a" : tensor<10x10xf32>
// CHECK-NEXT:      c.check_disjoint(%t, %t) {names = ["a", "b"], nbytes = array<i64: 400, 400>, num_outputs = 1 : i64}
// CHECK-NEXT:      c.check_bound @big
// CHECK-NEXT:      %p = c.tensor_data %t : !c.ptr<f32>
// CHECK-NEXT:      %ws = c.workspace 800 : !c.ptr<i8>
// CHECK-NEXT:      %b0 = c.buffer %ws[64, 400] : !c.ptr<f32>
// CHECK-NEXT:      %one = c.constant 1 : index
// CHECK-NEXT:      %b1 = c.ptr_offset %b0, %one : !c.ptr<f32>
// CHECK-NEXT:      %g = c.get_global @w : !c.ptr<f32, const>
// CHECK-NEXT:      c.call @k(%g, %b1) : (!c.ptr<f32, const>, !c.ptr<f32>) -> ()
// CHECK-NEXT:      c.call_opaque "byoc_copy"(%g, %b0) {args = [0 : index, 1 : index, 12 : i64]} : (!c.ptr<f32, const>, !c.ptr<f32>) -> ()
// CHECK-NEXT:      %r = c.constant 0 : i32
// CHECK-NEXT:      c.return %r : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    c.func @byoc_init(%consts: !c.ptr<!c.ptr<!c.opaque<"void">, const>, const>, %num: i32) -> i32 {
// CHECK-NEXT:      %zero = c.constant 0 : index
// CHECK-NEXT:      %raw = c.load %consts[%zero] : !c.ptr<!c.ptr<!c.opaque<"void">, const>, const>
// CHECK-NEXT:      %typed = c.cast %raw : !c.ptr<!c.opaque<"void">, const> to !c.ptr<f32, const>
// CHECK-NEXT:      c.bind_global @big, %typed : !c.ptr<f32, const>
// CHECK-NEXT:      %ok = c.constant 0 : i32
// CHECK-NEXT:      c.return %ok : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    c.func @declared(i32) -> i32
// CHECK-NEXT:  }
c.module {
  c.include <"math.h">
  c.include "byoc_runtime.h"
  c.global @w = dense<[1.5, -0.1, 2.0]> : tensor<3xf32>
  c.global @big init 0 = dense<1.0> : tensor<17xf32>
  c.func static noalias @k(%in0: !c.ptr<f32, const>, %out0: !c.ptr<f32>) {
    c.verbatim "/* a comment */"
    c.for %i = 0 to 100 step 4 {
      %a = c.load %in0[%i] : !c.ptr<f32, const>
      %z = c.constant 0.0 : f32
      %inf = c.constant 0x7F800000 : f32
      %s = c.add %a, %z : f32
      %d = c.sub %s, %inf : f32
      %m = c.mul %d, %d : f32
      %q = c.div %m, %a : f32
      %n = c.neg %q : f32
      %lt = c.cmp lt, %n, %z : f32
      %ne = c.cmp ne, %n, %n : f32
      %or = c.logical_or %lt, %ne : i1
      %and = c.logical_and %or, %lt : i1
      %sel = c.select %and, %z, %n : f32
      %e = c.call_opaque "expf"(%sel) : (f32) -> f32
      %k = c.cast %e : f32 to i32
      %r = c.rem %k, %k : i32
      c.store %e, %out0[%i] : !c.ptr<f32>
    }
    c.return
  }
  c.func @entry(%t: !c.ptr<!c.opaque<"DLTensor">>, %n: i32) -> i32 attributes {c.diagnostic_name = "entry"} {
    c.check_arg_count %n, 1 inputs, 0 outputs
    c.check_tensor %t, input 0 "a" : tensor<10x10xf32>
    c.check_disjoint(%t, %t) {names = ["a", "b"], nbytes = array<i64: 400, 400>, num_outputs = 1 : i64}
    c.check_bound @big
    %p = c.tensor_data %t : !c.ptr<f32>
    %ws = c.workspace 800 : !c.ptr<i8>
    %b0 = c.buffer %ws[64, 400] : !c.ptr<f32>
    %one = c.constant 1 : index
    %b1 = c.ptr_offset %b0, %one : !c.ptr<f32>
    %g = c.get_global @w : !c.ptr<f32, const>
    c.call @k(%g, %b1) : (!c.ptr<f32, const>, !c.ptr<f32>) -> ()
    c.call_opaque "byoc_copy"(%g, %b0) {args = [0 : index, 1 : index, 12 : i64]} : (!c.ptr<f32, const>, !c.ptr<f32>) -> ()
    %r = c.constant 0 : i32
    c.return %r : i32
  }
  c.func @byoc_init(%consts: !c.ptr<!c.ptr<!c.opaque<"void">, const>, const>, %num: i32) -> i32 {
    %zero = c.constant 0 : index
    %raw = c.load %consts[%zero] : !c.ptr<!c.ptr<!c.opaque<"void">, const>, const>
    %typed = c.cast %raw : !c.ptr<!c.opaque<"void">, const> to !c.ptr<f32, const>
    c.bind_global @big, %typed : !c.ptr<f32, const>
    %ok = c.constant 0 : i32
    c.return %ok : i32
  }
  c.func @declared(i32) -> i32
}
