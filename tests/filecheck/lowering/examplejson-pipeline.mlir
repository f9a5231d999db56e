// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=examplejson},lower-to-examplejson' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=examplejson},lower-to-examplejson' -t examplejson | %filecheck %s --check-prefix=TEXT

/// End to end: the seed's graph is partitioned for examplejson and printed as the seed's text.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = func.call @examplejson_main_0(%a, %b, %c, %d)
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @examplejson_main_0({{.*}}) -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"}{{$}}
// CHECK:       examplejson.subgraph @examplejson_main_0

// TEXT:      {{^}}examplejson_main_0{{$}}
// TEXT-NEXT: {{^}}  input 0 10 10{{$}}
// TEXT-NEXT: {{^}}  input 1 10 10{{$}}
// TEXT-NEXT: {{^}}  input 2 10 10{{$}}
// TEXT-NEXT: {{^}}  input 3 10 10{{$}}
// TEXT-NEXT: {{^}}  add 4 inputs: 0 1 shape: 10 10{{$}}
// TEXT-NEXT: {{^}}  sub 5 inputs: 4 2 shape: 10 10{{$}}
// TEXT-NEXT: {{^}}  mul 6 inputs: 5 3 shape: 10 10{{$}}
// TEXT-NEXT: // -----
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

/// A multi-result op stays on the host and splits the graph in two subgraphs;
/// the bound weight travels in the first one as a const line.
// CHECK-LABEL: func.func @conv_split
// CHECK-NEXT:    %[[C:.*]] = func.call @examplejson_conv_split_0(%x)
// CHECK-NEXT:    %[[S:.*]], %[[T:.*]] = nn.split %[[C]]
// CHECK-NEXT:    %[[R:.*]] = func.call @examplejson_conv_split_1(%[[S]], %[[T]])
// CHECK:       examplejson.module {
// CHECK-NEXT:    examplejson.subgraph @examplejson_conv_split_0 {
// CHECK-NEXT:      %[[X:.*]] = examplejson.input : tensor<1x3x8x8xf32>
// CHECK-NEXT:      %[[W:.*]] = examplejson.const dense<"0x0000003F{{(0000003F)+}}"> : tensor<4x3x3x3xf32>
// CHECK-NEXT:      %[[CONV:.*]] = examplejson.node conv2d %[[X]], %[[W]] {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:      %[[RELU:.*]] = examplejson.node relu %[[CONV]] : tensor<1x4x8x8xf32>
// CHECK-NEXT:      examplejson.output %[[RELU]] : tensor<1x4x8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    examplejson.subgraph @examplejson_conv_split_1 {
// CHECK-NEXT:      %[[TOP:.*]] = examplejson.input : tensor<1x4x4x8xf32>
// CHECK-NEXT:      %[[BOTTOM:.*]] = examplejson.input : tensor<1x4x4x8xf32>
// CHECK-NEXT:      %{{.*}} = examplejson.node add %[[TOP]], %[[BOTTOM]] : tensor<1x4x4x8xf32>

// TEXT:      {{^}}examplejson_conv_split_0{{$}}
// TEXT-NEXT: {{^}}  input 0 1 3 8 8{{$}}
// TEXT-NEXT: {{^}}  const 1 4 3 3 3 data: 0x0000003F{{(0000003F)+$}}
// TEXT-NEXT: {{^}}  conv2d 2 inputs: 0 1 shape: 1 4 8 8 attrs: padding=[1,1,1,1]{{$}}
// TEXT-NEXT: {{^}}  relu 3 inputs: 2 shape: 1 4 8 8{{$}}
// TEXT-NEXT: {{^}}examplejson_conv_split_1{{$}}
// TEXT-NEXT: {{^}}  input 0 1 4 4 8{{$}}
// TEXT-NEXT: {{^}}  input 1 1 4 4 8{{$}}
// TEXT-NEXT: {{^}}  add 2 inputs: 0 1 shape: 1 4 4 8{{$}}
func.func @conv_split(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x8xf32> {
  %w = nn.constant dense<0.5> : tensor<4x3x3x3xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.relu %0 : tensor<1x4x8x8xf32>
  %2:2 = nn.split %1 {indices = array<i64: 4>, axis = 2 : i64} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
  %3 = nn.add %2#0, %2#1 : tensor<1x4x4x8xf32>
  func.return %3 : tensor<1x4x4x8xf32>
}
