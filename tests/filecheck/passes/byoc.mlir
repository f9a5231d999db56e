// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=test ops=add,subtract,multiply,abs,relu,exp,log patterns=conv2d_bias_relu}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=test ops=add,subtract,multiply,abs,relu,exp,log patterns=conv2d_bias_relu},byoc{targets=test ops=add,subtract,multiply,abs,relu,exp,log patterns=conv2d_bias_relu}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=test ops=subtract,log,multiply}' | %filecheck %s --check-prefix=ALL3
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=test ops=subtract,log}' | %filecheck %s --check-prefix=SIB

/// The seed chain (add -> subtract -> multiply, all supported): one partition.
// CHECK-LABEL: func.func @seed_chain
// CHECK-NEXT:    %[[R:.*]] = func.call @test_seed_chain_0(%x, %y, %z, %w)
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @test_seed_chain_0
// CHECK-SAME:      attributes {byoc.compiler = "test"}
// CHECK-NEXT:    nn.add
// CHECK-NEXT:    nn.subtract
// CHECK-NEXT:    nn.multiply
// CHECK-NEXT:    func.return
func.func @seed_chain(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>, %z: tensor<10x10xf32>, %w: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %a = nn.add %x, %y : tensor<10x10xf32>
  %s = nn.subtract %a, %z : tensor<10x10xf32>
  %m = nn.multiply %s, %w : tensor<10x10xf32>
  func.return %m : tensor<10x10xf32>
}

// -----

/// An unsupported op in the middle of a chain: two partitions, tanh stays in the caller.
// CHECK-LABEL: func.func @unsupported_in_the_middle
// CHECK-NEXT:    %[[A:.*]] = func.call @test_unsupported_in_the_middle_0(%x)
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[A]]
// CHECK-NEXT:    %[[M:.*]] = func.call @test_unsupported_in_the_middle_1(%[[T]], %x)
// CHECK-NEXT:    func.return %[[M]]
func.func @unsupported_in_the_middle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>
  %t = nn.tanh %a : tensor<4xf32>
  %m = nn.multiply %t, %x : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// Diamond: {abs, relu} is one partition with two results and add a second one;
/// merging them would be a cycle (abs -> tanh -> add).
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %[[A:[^,]*]], %[[B:.*]] = func.call @test_diamond_0(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = nn.tanh %[[A]]
// CHECK-NEXT:    %[[D:.*]] = func.call @test_diamond_1(%[[B]], %[[C]])
// CHECK:       func.func private @test_diamond_0
// CHECK-NEXT:    %[[X:.*]] = nn.abs
// CHECK-NEXT:    %[[Y:.*]] = nn.relu %[[X]]
// CHECK-NEXT:    func.return %[[X]], %[[Y]]
// CHECK:       func.func private @test_diamond_1
// CHECK-NEXT:    nn.add
func.func @diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.abs %x : tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32>
  %c = nn.tanh %a : tensor<4xf32>
  %d = nn.add %b, %c : tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

/// One output used by three consumers: the partition returns it once.
// CHECK-LABEL: func.func @three_consumers
// CHECK-NEXT:    %[[A:.*]] = func.call @test_three_consumers_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    nn.tanh %[[A]]
// CHECK-NEXT:    nn.sigmoid %[[A]]
// CHECK-NEXT:    nn.tanh %[[A]]
func.func @three_consumers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = nn.abs %x : tensor<4xf32>
  %b = nn.tanh %a : tensor<4xf32>
  %c = nn.sigmoid %a : tensor<4xf32>
  %d = nn.tanh %a : tensor<4xf32>
  func.return %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// a = x + y on the host, s = a - z, l = log(a), m = l * s. With subtract, log and
/// multiply supported: one partition {subtract, log, multiply}. With only
/// subtract and log: one partition too, not two as in TVM — subtract and log are
/// siblings (they share the input a, no path runs between them), and merging
/// siblings creates no cycle; multiply stays on the host.
// ALL3-LABEL: func.func @host_input
// ALL3-NEXT:    %[[A:.*]] = nn.add %x, %y
// ALL3-NEXT:    %[[M:.*]] = func.call @test_host_input_0(%[[A]], %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// ALL3-NEXT:    func.return %[[M]]
// ALL3:       func.func private @test_host_input_0
// ALL3-NEXT:    nn.subtract
// ALL3-NEXT:    nn.log
// ALL3-NEXT:    nn.multiply
// ALL3-NEXT:    func.return
// SIB-LABEL: func.func @host_input
// SIB-NEXT:    %[[A:.*]] = nn.add %x, %y
// SIB-NEXT:    %[[S:[^,]*]], %[[L:.*]] = func.call @test_host_input_0(%[[A]], %z) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// SIB-NEXT:    %[[M:.*]] = nn.multiply %[[L]], %[[S]]
// SIB-NEXT:    func.return %[[M]]
// SIB:       func.func private @test_host_input_0
// SIB-NEXT:    nn.subtract
// SIB-NEXT:    nn.log
// SIB-NEXT:    func.return
// SIB-NOT:   @test_host_input_1
func.func @host_input(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %y : tensor<4xf32>
  %s = nn.subtract %a, %z : tensor<4xf32>
  %l = nn.log %a : tensor<4xf32>
  %m = nn.multiply %l, %s : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// Three branches from one input, two of them supported chains: one partition.
// CHECK-LABEL: func.func @three_branches
// CHECK-NEXT:    %[[B:[^,]*]], %[[D:.*]] = func.call @test_three_branches_0(%x)
// CHECK-NEXT:    %[[E:.*]] = nn.sigmoid %x
// CHECK-NEXT:    func.return %[[B]], %[[D]], %[[E]]
func.func @three_branches(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = nn.relu %x : tensor<4xf32>
  %b = nn.abs %a : tensor<4xf32>
  %c = nn.exp %x : tensor<4xf32>
  %d = nn.log %c : tensor<4xf32>
  %e = nn.sigmoid %x : tensor<4xf32>
  func.return %b, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// Composites go through the whole pipeline: merged, tagged by their prefix,
/// grouped and outlined; the weights are bound into the partition.
// CHECK-LABEL: func.func @composite
// CHECK-NEXT:    %[[R:.*]] = func.call @test_composite_0(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[R]]
// CHECK:       func.func private @test_composite_0(%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK-NEXT:    %[[W:.*]] = nn.constant
// CHECK-NEXT:    %[[B:.*]] = nn.constant
// CHECK-NEXT:    byoc.composite "test.conv2d_bias_relu"(%[[X]], %[[W]], %[[B]])
func.func @composite(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x6x6xf32> {
  %w = nn.constant dense<0.5> : tensor<4x3x3x3xf32>
  %b = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %d = nn.bias_add %c, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e = nn.relu %d : tensor<1x4x6x6xf32>
  %t = nn.tanh %e : tensor<1x4x6x6xf32>
  func.return %t : tensor<1x4x6x6xf32>
}
