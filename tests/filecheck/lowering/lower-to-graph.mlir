// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=graphref},lower-to-graph{target=graphref}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=graphref},lower-to-graph' | %byoc-opt --split-input-file -t graph | %filecheck %s --check-prefix=TEXT

/// A composite becomes one graph.composite named by it, its inner ops (with every
/// property, defaults included) as its body; constants become module constants, stored
/// once even when two partitions use them; the partition becomes a declaration.
// CHECK:      func.func @main(%x: tensor<2x16xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:   %0 = func.call @graphref_main_0(%x, %y)
// CHECK-NEXT:   %1 = nn.tanh %0 : tensor<2x8xf32>
// CHECK-NEXT:   %2 = func.call @graphref_main_1(%1)
// CHECK:      func.func private @graphref_main_0(tensor<2x16xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> attributes {byoc.compiler = "graphref"}
// CHECK-NEXT: func.func private @graphref_main_1(tensor<2x8xf32>) -> tensor<2x8xf32> attributes {byoc.compiler = "graphref"}
// CHECK-NEXT: graph.module {
// CHECK-NEXT:   graph.constant @graphref_main_0_const_0 dense<"0x{{.*}}"> : tensor<8x16xf32>
// CHECK-NEXT:   graph.constant @graphref_main_0_const_1 dense<[1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0]> : tensor<8xf32>
// CHECK-NEXT:   graph.graph @graphref_main_0 {
// CHECK-NEXT:     %[[X:.*]] = graph.input "x" : tensor<2x16xf32>
// CHECK-NEXT:     %[[Y:.*]] = graph.input "y" : tensor<2x8xf32>
// CHECK-NEXT:     %[[C:.*]] = graph.composite "graphref.dense_bias_relu"(%[[X]]) : (tensor<2x16xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:     ^bb0(%[[A:.*]]: tensor<2x16xf32>):
// CHECK-NEXT:       %[[W:.*]] = graph.const @graphref_main_0_const_0 : tensor<8x16xf32>
// CHECK-NEXT:       %[[B:.*]] = graph.const @graphref_main_0_const_1 : tensor<8xf32>
// CHECK-NEXT:       %[[D:.*]] = graph.node "nn.dense"(%[[A]], %[[W]]) {} : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:       %[[BA:.*]] = graph.node "nn.bias_add"(%[[D]], %[[B]]) {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:       %[[R:.*]] = graph.node "nn.relu"(%[[BA]]) {} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:       graph.yield %[[R]] : tensor<2x8xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[S:.*]] = graph.node "nn.add"(%[[C]], %[[Y]]) {} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:     graph.output %[[S]] : tensor<2x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   graph.graph @graphref_main_1 {
// CHECK-NEXT:     %[[I:.*]] = graph.input "arg0" : tensor<2x8xf32>
// CHECK-NEXT:     %[[B2:.*]] = graph.const @graphref_main_0_const_1 : tensor<8xf32>
// CHECK-NEXT:     %[[M:.*]] = graph.node "nn.multiply"(%[[I]], %[[B2]]) {} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:     graph.output %[[M]] : tensor<2x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

/// -t graph lists what the serialised blob holds: entries by id, composites with bodies.
// TEXT:      byoc-graph version 1
// TEXT-NEXT: constant @graphref_main_0_const_0: f32[8, 16] (512 bytes)
// TEXT-NEXT: constant @graphref_main_0_const_1: f32[8] (32 bytes)
// TEXT-NEXT: graph @graphref_main_0 {
// TEXT-NEXT:   input %0: f32[2, 16] "x"
// TEXT-NEXT:   input %1: f32[2, 8] "y"
// TEXT-NEXT:   const %3: f32[8, 16] = @graphref_main_0_const_0
// TEXT-NEXT:   const %4: f32[8] = @graphref_main_0_const_1
// TEXT-NEXT:   %2: f32[2, 8] = graphref.dense_bias_relu(%0, %3, %4) {
// TEXT-NEXT:     %5: f32[2, 8] = nn.dense(%0, %3)
// TEXT-NEXT:     %6: f32[2, 8] = nn.bias_add(%5, %4) {axis = 1}
// TEXT-NEXT:     %2: f32[2, 8] = nn.relu(%6)
// TEXT-NEXT:   }
// TEXT-NEXT:   %7: f32[2, 8] = nn.add(%2, %1)
// TEXT-NEXT:   output %7
// TEXT-NEXT: }
// TEXT-NEXT: graph @graphref_main_1 {
// TEXT-NEXT:   input %0: f32[2, 8] "arg0"
// TEXT-NEXT:   const %1: f32[8] = @graphref_main_0_const_1
// TEXT-NEXT:   %2: f32[2, 8] = nn.multiply(%0, %1)
// TEXT-NEXT:   output %2
// TEXT-NEXT: }
func.func @main(%x: tensor<2x16xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = nn.constant dense<0.5> : tensor<8x16xf32>
  %b = nn.constant dense<[1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0]> : tensor<8xf32>
  %0 = nn.dense %x, %w : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = nn.relu %1 : tensor<2x8xf32>
  %3 = nn.add %2, %y : tensor<2x8xf32>
  %4 = nn.tanh %3 : tensor<2x8xf32>
  %5 = nn.multiply %4, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5 : tensor<2x8xf32>
}

// -----

/// Another target's partitions are left alone.
// CHECK-LABEL: func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
// CHECK-NEXT:    %0 = nn.relu %a : tensor<4xf32>
// CHECK-NOT:   graph.module
// TEXT-NOT:    graph @
func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
