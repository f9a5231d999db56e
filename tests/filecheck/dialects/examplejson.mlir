// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s --check-prefixes=CHECK,CUSTOM
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s
//
// Non-finite constants are checked in the custom form only: xDSL 0.75 prints them
// in a dense list as hex bit patterns but parses those back as integers
// (xdslproject/xdsl#3370), so the generic form does not read them back exactly.

/// Every line kind round-trips through the custom form (and the generic form).
// CHECK-LABEL: examplejson.subgraph @lines {
// CHECK-NEXT:    examplejson.input 3 : tensor<2x3xf32>
// CHECK-NEXT:    examplejson.input 0 : tensor<3xi32>
// CHECK-NEXT:    examplejson.const 7 dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
// CHECK-NEXT:    examplejson.const 8 dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<17xf32>
// CHECK-NEXT:    examplejson.node add 1 inputs(3, 7) : tensor<2x3xf32>
// CHECK-NEXT:    examplejson.node leaky_relu 2 inputs(1) {alpha = 2.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT:    examplejson.node cast 4 inputs(0) {dtype = "f32"} : tensor<3xf32>
// CHECK-NEXT:    examplejson.node concatenate 5 inputs(4, 4, 7) : tensor<9xf32>
// CHECK-NEXT:    examplejson.output 2, 5
// CHECK-NEXT:  }
// CHECK-NEXT:  examplejson.subgraph @seed {
// CHECK-NEXT:    examplejson.input 0 : tensor<10x10xf32>
// CHECK-NEXT:    examplejson.node mul 1 inputs(0, 0) : tensor<10x10xf32>
// CHECK-NEXT:    examplejson.output 1
// CHECK-NEXT:  }
// CUSTOM-NEXT: examplejson.subgraph @nonfinite {
// CUSTOM-NEXT:   examplejson.const 0 dense<"0x0000807F0000C07F"> : tensor<2xf32>
// CUSTOM-NEXT:   examplejson.output 0
// CUSTOM-NEXT: }
examplejson.module {
  examplejson.subgraph @lines {
    examplejson.input 3 : tensor<2x3xf32>
    examplejson.input 0 : tensor<3xi32>
    examplejson.const 7 dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
    examplejson.const 8 dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<17xf32>
    examplejson.node add 1 inputs(3, 7) : tensor<2x3xf32>
    examplejson.node leaky_relu 2 inputs(1) {alpha = 0.2 : f64} : tensor<2x3xf32>
    examplejson.node cast 4 inputs(0) {dtype = "f32"} : tensor<3xf32>
    examplejson.node concatenate 5 inputs(4, 4, 7) : tensor<9xf32>
    examplejson.output 2, 5
  }
  examplejson.subgraph @seed {
    examplejson.input 0 : tensor<10x10xf32>
    examplejson.node mul 1 inputs(0, 0) : tensor<10x10xf32>
    examplejson.output 1
  }
  examplejson.subgraph @nonfinite {
    examplejson.const 0 dense<"0x0000807F0000C07F"> : tensor<2xf32>
    examplejson.output 0
  }
}
