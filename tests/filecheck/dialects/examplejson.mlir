// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s --check-prefixes=CHECK,CUSTOM
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s
//
// Non-finite constants are checked in the custom form only: xDSL 0.75 prints them
// in a dense list as hex bit patterns but parses those back as integers
// (xdslproject/xdsl#3370), so the generic form does not read them back exactly.

/// Every line kind round-trips through the custom form (and the generic form).
// CHECK-LABEL: examplejson.subgraph @lines ids(3, 0, 7, 8, 1, 2, 4, 5) {
// CHECK-NEXT:    %[[X:.*]] = examplejson.input : tensor<2x3xf32>
// CHECK-NEXT:    %[[I:.*]] = examplejson.input : tensor<3xi32>
// CHECK-NEXT:    %[[C:.*]] = examplejson.const dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = examplejson.const dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<17xf32>
// CHECK-NEXT:    %[[A:.*]] = examplejson.node add %[[X]], %[[C]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[L:.*]] = examplejson.node leaky_relu %[[A]] {alpha = 2.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT:    %[[F:.*]] = examplejson.node cast %[[I]] {dtype = "f32"} : (tensor<3xi32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[K:.*]] = examplejson.node concatenate %[[F]], %[[F]], %[[C]] : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<9xf32>
// CHECK-NEXT:    examplejson.output %[[L]], %[[K]] : tensor<2x3xf32>, tensor<9xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  examplejson.subgraph @seed {
// CHECK-NEXT:    %[[S:.*]] = examplejson.input : tensor<10x10xf32>
// CHECK-NEXT:    %[[M:.*]] = examplejson.node mul %[[S]], %[[S]] : tensor<10x10xf32>
// CHECK-NEXT:    examplejson.output %[[M]] : tensor<10x10xf32>
// CHECK-NEXT:  }
// CUSTOM-NEXT: examplejson.subgraph @nonfinite {
// CUSTOM-NEXT:   %[[N:.*]] = examplejson.const dense<"0x0000807F0000C07F"> : tensor<2xf32>
// CUSTOM-NEXT:   examplejson.output %[[N]] : tensor<2xf32>
// CUSTOM-NEXT: }
examplejson.module {
  examplejson.subgraph @lines ids(3, 0, 7, 8, 1, 2, 4, 5) {
    %x = examplejson.input : tensor<2x3xf32>
    %i = examplejson.input : tensor<3xi32>
    %c = examplejson.const dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
    %big = examplejson.const dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<17xf32>
    %a = examplejson.node add %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = examplejson.node leaky_relu %a {alpha = 0.2 : f64} : tensor<2x3xf32>
    %f = examplejson.node cast %i {dtype = "f32"} : (tensor<3xi32>) -> tensor<3xf32>
    %k = examplejson.node concatenate %f, %f, %c : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<9xf32>
    examplejson.output %l, %k : tensor<2x3xf32>, tensor<9xf32>
  }
  examplejson.subgraph @seed {
    %0 = examplejson.input : tensor<10x10xf32>
    %1 = examplejson.node mul %0, %0 : tensor<10x10xf32>
    examplejson.output %1 : tensor<10x10xf32>
  }
  examplejson.subgraph @nonfinite {
    %0 = examplejson.const dense<"0x0000807F0000C07F"> : tensor<2xf32>
    examplejson.output %0 : tensor<2xf32>
  }
}
