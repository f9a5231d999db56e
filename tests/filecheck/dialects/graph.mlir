// The graph dialect round-trips through its text (byoc/dialects/graph.py).
// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s

// CHECK:      graph.module {
// CHECK-NEXT:   graph.constant @w dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<2x3xf32>
// CHECK-NEXT:   graph.constant @big dense<"0x{{[0-9A-F]+}}"> : tensor<17xf32>
// CHECK-NEXT:   graph.graph @p0 {
// CHECK-NEXT:     %[[X:.*]] = graph.input "x" : tensor<1x3xf32>
// CHECK-NEXT:     %[[W:.*]] = graph.const @w : tensor<2x3xf32>
// CHECK-NEXT:     %[[D:.*]] = graph.node "nn.dense"(%[[X]], %[[W]]) {} : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:     %[[C0:.*]], %[[C1:.*]] = graph.composite "t.relu_clip"(%[[D]]) : (tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
// CHECK-NEXT:     ^bb0(%[[A:.*]]: tensor<1x2xf32>):
// CHECK-NEXT:       %[[R:.*]] = graph.node "nn.relu"(%[[A]]) {} : (tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:       %[[K:.*]] = graph.node "nn.clip"(%[[R]]) {a_min = 0.000000e+00 : f64, a_max = 6.000000e+00 : f64, mode = "x", sizes = array<i64: 1, 2>} : (tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:       graph.yield %[[R]], %[[K]] : tensor<1x2xf32>, tensor<1x2xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     graph.output %[[C1]], %[[D]] : tensor<1x2xf32>, tensor<1x2xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

graph.module {
  graph.constant @w dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<2x3xf32>
  graph.constant @big dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<17xf32>
  graph.graph @p0 {
    %0 = graph.input "x" : tensor<1x3xf32>
    %1 = graph.const @w : tensor<2x3xf32>
    %2 = graph.node "nn.dense"(%0, %1) {} : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
    %3:2 = graph.composite "t.relu_clip"(%2) : (tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
    ^bb0(%a: tensor<1x2xf32>):
      %4 = graph.node "nn.relu"(%a) {} : (tensor<1x2xf32>) -> tensor<1x2xf32>
      %5 = graph.node "nn.clip"(%4) {a_min = 0.0 : f64, a_max = 6.0 : f64, mode = "x", sizes = array<i64: 1, 2>} : (tensor<1x2xf32>) -> tensor<1x2xf32>
      graph.yield %4, %5 : tensor<1x2xf32>, tensor<1x2xf32>
    }
    graph.output %3#1, %2 : tensor<1x2xf32>, tensor<1x2xf32>
  }
}
