// RUN: %byoc-opt %s --split-input-file -p batch-take-dense | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p batch-take-dense,batch-take-dense | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p batch-take-dense | %byoc-opt --split-input-file | %filecheck %s

/// Two of three rows (one by a negative index) taken from %x, each through a dense with the
/// same constant weight: one dense of %x right after the weight, each result a take of it;
/// the takes of %x are erased, the uses of the results read the new takes.
// CHECK-LABEL: func.func @two_of_three_rows
// CHECK-NEXT:  %[[W:.*]] = nn.constant
// CHECK-NEXT:  %[[D:.*]] = nn.dense %x, %[[W]] : (tensor<3x1x4xf32>, tensor<2x4xf32>) -> tensor<3x1x2xf32>
// CHECK-NEXT:  %[[C0:.*]] = nn.constant dense<[0]> : tensor<i64>
// CHECK-NEXT:  %[[Y0:.*]] = nn.take %[[D]], %[[C0]] : (tensor<3x1x2xf32>, tensor<i64>) -> tensor<1x2xf32>
// CHECK-NEXT:  %[[C1:.*]] = nn.constant dense<[-1]> : tensor<i64>
// CHECK-NEXT:  %[[Y1:.*]] = nn.take %[[D]], %[[C1]] : (tensor<3x1x2xf32>, tensor<i64>) -> tensor<1x2xf32>
// CHECK-NEXT:  %[[R:.*]] = nn.relu %[[Y1]] : tensor<1x2xf32>
// CHECK-NEXT:  func.return %[[Y0]], %[[R]]
func.func @two_of_three_rows(%x: tensor<3x1x4xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %w = nn.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.25, -1.0, 2.0]]> : tensor<2x4xf32>
  %c0 = nn.constant dense<0> : tensor<i64>
  %r0 = nn.take %x, %c0 : (tensor<3x1x4xf32>, tensor<i64>) -> tensor<1x4xf32>
  %y0 = nn.dense %r0, %w : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %c1 = nn.constant dense<-1> : tensor<i64>
  %r1 = nn.take %x, %c1 : (tensor<3x1x4xf32>, tensor<i64>) -> tensor<1x4xf32>
  %y1 = nn.dense %r1, %w : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %y2 = nn.relu %y1 : tensor<1x2xf32>
  func.return %y0, %y2 : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

/// Rows taken along axis 1, the tensor defined after the weight: the dense goes right after
/// the tensor's definition. A take with another use stays for that use.
// CHECK-LABEL: func.func @axis_one_after_the_tensor
// CHECK-NEXT:  %[[W:.*]] = nn.constant
// CHECK-NEXT:  %[[X:.*]] = nn.relu %a : tensor<2x2x3xf32>
// CHECK-NEXT:  %[[D:.*]] = nn.dense %[[X]], %[[W]] : (tensor<2x2x3xf32>, tensor<5x3xf32>) -> tensor<2x2x5xf32>
// CHECK-NEXT:  %[[C0:.*]] = nn.constant dense<[1]> : tensor<i64>
// CHECK-NEXT:  %[[R0:.*]] = nn.take %[[X]], %[[C0]] {axis = 1 : i64} : (tensor<2x2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[Y0:.*]] = nn.take %[[D]], %[[C0]] {axis = 1 : i64} : (tensor<2x2x5xf32>, tensor<i64>) -> tensor<2x5xf32>
// CHECK-NEXT:  func.return %[[Y0]], %[[R0]]
func.func @axis_one_after_the_tensor(%a: tensor<2x2x3xf32>) -> (tensor<2x5xf32>, tensor<2x3xf32>) {
  %w = nn.constant dense<0.5> : tensor<5x3xf32>
  %x = nn.relu %a : tensor<2x2x3xf32>
  %c0 = nn.constant dense<1> : tensor<i64>
  %r0 = nn.take %x, %c0 {axis = 1 : i64} : (tensor<2x2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %y0 = nn.dense %r0, %w : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  func.return %y0, %r0 : tensor<2x5xf32>, tensor<2x3xf32>
}

// -----

/// Left alone: one row of four (less than half), a weight that is not a constant, a take
/// of a vector of indices, and two of three rows taken along the contracted (last) axis.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-5: nn.take %x
// CHECK-NOT:   nn.dense %x
func.func @left_alone(%x: tensor<4x3xf32>, %v: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %w = nn.constant dense<1.0> : tensor<2x3xf32>
  %c1 = nn.constant dense<1> : tensor<i64>
  %r1 = nn.take %x, %c1 : (tensor<4x3xf32>, tensor<i64>) -> tensor<3xf32>
  %y1 = nn.dense %r1, %w : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  %c2 = nn.constant dense<2> : tensor<i64>
  %r2 = nn.take %x, %c2 : (tensor<4x3xf32>, tensor<i64>) -> tensor<3xf32>
  %y2 = nn.dense %r2, %v : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  %i = nn.constant dense<[0, 3]> : tensor<2xi64>
  %r3 = nn.take %x, %i : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %y3 = nn.dense %r3, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  %w4 = nn.constant dense<2.0> : tensor<2x4xf32>
  %r4 = nn.take %x, %c1 {axis = 1 : i64} : (tensor<4x3xf32>, tensor<i64>) -> tensor<4xf32>
  %y4 = nn.dense %r4, %w4 : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2xf32>
  %r5 = nn.take %x, %c2 {axis = 1 : i64} : (tensor<4x3xf32>, tensor<i64>) -> tensor<4xf32>
  %y5 = nn.dense %r5, %w4 : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2xf32>
  func.return %y1, %y2, %y3, %y4, %y5 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
}
