// RUN: %byoc-opt %s --split-input-file -p lower-to-examplejson | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p lower-to-examplejson -t examplejson | %filecheck %s --check-prefix=TEXT

/// The seed's graph: a chain of add, subtract, multiply prints exactly the seed's text.
// CHECK-LABEL: func.func private @subgraph_0(tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"}
// CHECK-NEXT:  examplejson.module {
// CHECK-NEXT:    examplejson.subgraph @subgraph_0 {
// CHECK-NEXT:      %[[A:.*]] = examplejson.input : tensor<10x10xf32>
// CHECK-NEXT:      %[[B:.*]] = examplejson.input : tensor<10x10xf32>
// CHECK-NEXT:      %[[C:.*]] = examplejson.input : tensor<10x10xf32>
// CHECK-NEXT:      %[[D:.*]] = examplejson.input : tensor<10x10xf32>
// CHECK-NEXT:      %[[ADD:.*]] = examplejson.node add %[[A]], %[[B]] : tensor<10x10xf32>
// CHECK-NEXT:      %[[SUB:.*]] = examplejson.node sub %[[ADD]], %[[C]] : tensor<10x10xf32>
// CHECK-NEXT:      %[[MUL:.*]] = examplejson.node mul %[[SUB]], %[[D]] : tensor<10x10xf32>
// CHECK-NEXT:      examplejson.output %[[MUL]] : tensor<10x10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// TEXT:      {{^}}subgraph_0{{$}}
// TEXT-NEXT: {{^}}  input 0 10 10{{$}}
// TEXT-NEXT: {{^}}  input 1 10 10{{$}}
// TEXT-NEXT: {{^}}  input 2 10 10{{$}}
// TEXT-NEXT: {{^}}  input 3 10 10{{$}}
// TEXT-NEXT: {{^}}  add 4 inputs: 0 1 shape: 10 10{{$}}
// TEXT-NEXT: {{^}}  sub 5 inputs: 4 2 shape: 10 10{{$}}
// TEXT-NEXT: {{^}}  mul 6 inputs: 5 3 shape: 10 10{{$}}
// TEXT-NEXT: // -----
func.func private @subgraph_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

/// The host keeps calling the partition: its function stays, without a body.
// CHECK-LABEL: func.func @main
// CHECK:         %[[R:.*]] = func.call @examplejson_main_0(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @examplejson_main_0(tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "examplejson"}{{$}}
// CHECK:       examplejson.subgraph @examplejson_main_0

// TEXT:      {{^}}examplejson_main_0{{$}}
// TEXT-NEXT: {{^}}  input 0 4{{$}}
// TEXT-NEXT: {{^}}  relu 1 inputs: 0 shape: 4{{$}}
// TEXT-NEXT: // -----
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @examplejson_main_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @examplejson_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

/// A diamond: one value feeds two nodes that meet again (a DAG, not a chain).
// CHECK-LABEL: examplejson.subgraph @examplejson_diamond_0
// CHECK-NEXT:    %[[X:.*]] = examplejson.input : tensor<2x3xf32>
// CHECK-NEXT:    %[[ABS:.*]] = examplejson.node abs %[[X]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[EXP:.*]] = examplejson.node exp %[[ABS]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[SQRT:.*]] = examplejson.node sqrt %[[ABS]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[ADD:.*]] = examplejson.node add %[[EXP]], %[[SQRT]] : tensor<2x3xf32>
// CHECK-NEXT:    examplejson.output %[[ADD]] : tensor<2x3xf32>

// TEXT:      {{^}}examplejson_diamond_0{{$}}
// TEXT-NEXT: {{^}}  input 0 2 3{{$}}
// TEXT-NEXT: {{^}}  abs 1 inputs: 0 shape: 2 3{{$}}
// TEXT-NEXT: {{^}}  exp 2 inputs: 1 shape: 2 3{{$}}
// TEXT-NEXT: {{^}}  sqrt 3 inputs: 1 shape: 2 3{{$}}
// TEXT-NEXT: {{^}}  add 4 inputs: 2 3 shape: 2 3{{$}}
// TEXT-NEXT: // -----
func.func private @examplejson_diamond_0(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = nn.abs %x : tensor<2x3xf32>
  %1 = nn.exp %0 : tensor<2x3xf32>
  %2 = nn.sqrt %0 : tensor<2x3xf32>
  %3 = nn.add %1, %2 : tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}

// -----

/// Several results, one of them an argument: an explicit output line, in return order.
// CHECK-LABEL: examplejson.subgraph @examplejson_multi_0
// CHECK-NEXT:    %[[X:.*]] = examplejson.input : tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = examplejson.input : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = examplejson.node sigmoid %[[X]] : tensor<4xf32>
// CHECK-NEXT:    %[[M:.*]] = examplejson.node mul %[[S]], %[[Y]] : tensor<4xf32>
// CHECK-NEXT:    examplejson.output %[[M]], %[[S]], %[[Y]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>

// TEXT:      {{^}}examplejson_multi_0{{$}}
// TEXT-NEXT: {{^}}  input 0 4{{$}}
// TEXT-NEXT: {{^}}  input 1 4{{$}}
// TEXT-NEXT: {{^}}  sigmoid 2 inputs: 0 shape: 4{{$}}
// TEXT-NEXT: {{^}}  mul 3 inputs: 2 1 shape: 4{{$}}
// TEXT-NEXT: {{^}}  output 3 2 1{{$}}
// TEXT-NEXT: // -----
func.func private @examplejson_multi_0(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {byoc.compiler = "examplejson"} {
  %0 = nn.sigmoid %x : tensor<4xf32>
  %1 = nn.multiply %0, %y : tensor<4xf32>
  func.return %1, %0, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// Ops with attributes carry the non-default ones after the shape (`attrs:`).
// CHECK-LABEL: examplejson.subgraph @examplejson_layers_0
// CHECK:         %[[CONV:.*]] = examplejson.node conv2d %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[POOL:.*]] = examplejson.node max_pool2d %[[CONV]] {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %[[LRELU:.*]] = examplejson.node leaky_relu %[[POOL]] {alpha = 1.000000e-01 : f64} : tensor<1x4x2x2xf32>
// CHECK-NEXT:    %[[RESHAPE:.*]] = examplejson.node reshape %[[LRELU]] {newshape = array<i64: 4, 4>} : (tensor<1x4x2x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %[[SOFTMAX:.*]] = examplejson.node softmax %[[RESHAPE]] {axis = 0 : i64} : tensor<4x4xf32>
// CHECK-NEXT:    %[[AVG:.*]] = examplejson.node avg_pool2d %[[POOL]] {pool_size = array<i64: 2, 2>, ceil_mode = true, count_include_pad = true} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    examplejson.output %[[SOFTMAX]], %[[AVG]] : tensor<4x4xf32>, tensor<1x4x1x1xf32>

// TEXT:      {{^}}examplejson_layers_0{{$}}
// TEXT-NEXT: {{^}}  input 0 1 3 8 8{{$}}
// TEXT-NEXT: {{^}}  input 1 4 3 3 3{{$}}
// TEXT-NEXT: {{^}}  conv2d 2 inputs: 0 1 shape: 1 4 4 4 attrs: padding=[1,1,1,1] strides=[2,2]{{$}}
// TEXT-NEXT: {{^}}  max_pool2d 3 inputs: 2 shape: 1 4 2 2 attrs: pool_size=[2,2] strides=[2,2]{{$}}
// TEXT-NEXT: {{^}}  leaky_relu 4 inputs: 3 shape: 1 4 2 2 attrs: alpha=0.1{{$}}
// TEXT-NEXT: {{^}}  reshape 5 inputs: 4 shape: 4 4 attrs: newshape=[4,4]{{$}}
// TEXT-NEXT: {{^}}  softmax 6 inputs: 5 shape: 4 4 attrs: axis=0{{$}}
// TEXT-NEXT: {{^}}  avg_pool2d 7 inputs: 3 shape: 1 4 1 1 attrs: ceil_mode=true count_include_pad=true pool_size=[2,2]{{$}}
// TEXT-NEXT: {{^}}  output 6 7{{$}}
// TEXT-NEXT: // -----
func.func private @examplejson_layers_0(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<4x4xf32>, tensor<1x4x1x1xf32>) attributes {byoc.compiler = "examplejson"} {
  %0 = nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %1 = nn.max_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  %2 = nn.leaky_relu %1 {alpha = 0.1 : f64} : tensor<1x4x2x2xf32>
  %3 = nn.reshape %2 {newshape = array<i64: 4, 4>} : (tensor<1x4x2x2xf32>) -> tensor<4x4xf32>
  %4 = nn.softmax %3 {axis = 0 : i64} : tensor<4x4xf32>
  %5 = nn.avg_pool2d %1 {pool_size = array<i64: 2, 2>, ceil_mode = true, count_include_pad = true} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  func.return %4, %5 : tensor<4x4xf32>, tensor<1x4x1x1xf32>
}

// -----

/// Constants bound into the partition become `const` lines with their data; non-f32
/// element types are written after the shape (`dtype:`).
// CHECK-LABEL: examplejson.subgraph @examplejson_consts_0
// CHECK-NEXT:    %[[X:.*]] = examplejson.input : tensor<3xi32>
// CHECK-NEXT:    %[[C:.*]] = examplejson.const dense<[1, 2, 3]> : tensor<3xi32>
// CHECK-NEXT:    %[[ADD:.*]] = examplejson.node add %[[X]], %[[C]] : tensor<3xi32>
// CHECK-NEXT:    %[[CAST:.*]] = examplejson.node cast %[[ADD]] {dtype = "f32"} : (tensor<3xi32>) -> tensor<3xf32>
// CHECK-NEXT:    examplejson.output %[[CAST]] : tensor<3xf32>

// TEXT:      {{^}}examplejson_consts_0{{$}}
// TEXT-NEXT: {{^}}  input 0 3 dtype: i32{{$}}
// TEXT-NEXT: {{^}}  const 1 3 dtype: i32 data: 0x010000000200000003000000{{$}}
// TEXT-NEXT: {{^}}  add 2 inputs: 0 1 shape: 3 dtype: i32{{$}}
// TEXT-NEXT: {{^}}  cast 3 inputs: 2 shape: 3 attrs: dtype=f32{{$}}
// TEXT-NEXT: // -----
func.func private @examplejson_consts_0(%x: tensor<3xi32>) -> tensor<3xf32> attributes {byoc.compiler = "examplejson"} {
  %c = nn.constant dense<[1, 2, 3]> : tensor<3xi32>
  %0 = nn.add %x, %c : tensor<3xi32>
  %1 = nn.cast %0 {dtype = "f32"} : (tensor<3xi32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}

// -----

/// A composite's body is inlined: the runtime runs one nn op per line.
// CHECK-LABEL: examplejson.subgraph @examplejson_composite_0
// CHECK-NEXT:    %[[X:.*]] = examplejson.input : tensor<1x4xf32>
// CHECK-NEXT:    %[[W:.*]] = examplejson.input : tensor<3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = examplejson.input : tensor<3xf32>
// CHECK-NEXT:    %[[D:.*]] = examplejson.node dense %[[X]], %[[W]] : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    %[[BA:.*]] = examplejson.node bias_add %[[D]], %[[B]] : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    %[[R:.*]] = examplejson.node relu %[[BA]] : tensor<1x3xf32>
// CHECK-NEXT:    examplejson.output %[[R]] : tensor<1x3xf32>
func.func private @examplejson_composite_0(%x: tensor<1x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<1x3xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = byoc.composite "examplejson.dense_bias"(%x, %w, %b) : (tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%a: tensor<1x4xf32>, %aw: tensor<3x4xf32>, %ab: tensor<3xf32>):
    %1 = nn.dense %a, %aw : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
    %2 = nn.bias_add %1, %ab : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
    byoc.yield %2 : tensor<1x3xf32>
  }
  %3 = nn.relu %0 : tensor<1x3xf32>
  func.return %3 : tensor<1x3xf32>
}

// -----

/// Functions of other targets are left alone.
// CHECK-LABEL: func.func private @ccompiler_main_0
// CHECK-NEXT:    nn.relu
// CHECK-NOT:   examplejson.module
func.func private @ccompiler_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
