// Every verifier error of the nn dialect (byoc/dialects/nn/), one case a chunk,
// and the errors of its custom parser.
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

/// Operands must broadcast (numpy rules).
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{operand shapes 4, 5 are not broadcast-compatible}}
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// The declared result type must be the inferred one.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{result type tensor<5xf32> does not match the inferred type tensor<4xf32>}}
  %0 = nn.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}

// -----

/// A multi-result op: every result type is checked.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{does not match the inferred type tensor<1xf32>, tensor<3xf32>}}
  %0:2 = nn.split %a {indices = array<i64: 1>} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return
}

// -----

/// divide takes numbers, not bool.
func.func @f(%a: tensor<4xi1>) {
  // expected-error@+1 {{element type i1 is not supported (expected one of f32, f64, f16, i8, i16, i32, i64, ui8, ui16, ui32, ui64)}}
  %0 = nn.divide %a, %a : tensor<4xi1>
  func.return
}

// -----

/// add takes numbers, not bool.
func.func @f(%a: tensor<4xi1>) {
  // expected-error@+1 {{element type i1 is not supported (expected one of f32, f64, f16, i8, i16, i32, i64, ui8, ui16, ui32, ui64)}}
  %0 = nn.add %a, %a : tensor<4xi1>
  func.return
}

// -----

/// Operands share one element type.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error@+1 {{all operands must have the same element type, got f32 and i32}}
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----

/// Operands are ranked tensors (the IRDL constraint).
func.func @f(%a: f32) {
  // expected-error@+1 {{operand 'x' at position 0 does not verify}}
  %0 = nn.relu %a : f32
  func.return
}

// -----

/// A property of the wrong kind (the IRDL constraint).
func.func @f(%a: tensor<2x2xf32>) {
  // expected-error@+1 {{should be of base attribute integer}}
  %0 = nn.softmax %a {axis = 1.0 : f64} : tensor<2x2xf32>
  func.return
}

// -----

/// A required property is missing (the IRDL constraint).
func.func @f(%a: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{property 'pool_size' expected}}
  %0 = nn.max_pool2d %a : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

/// An axis outside the rank.
func.func @f(%a: tensor<2x2xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.softmax %a {axis = 2 : i64} : tensor<2x2xf32>
  func.return
}

// -----

/// clip bounds must be ordered.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{a_min 6.0 is greater than a_max 0.0}}
  %0 = nn.clip %a {a_min = 6.0 : f64, a_max = 0.0 : f64} : tensor<4xf32>
  func.return
}

// -----

/// cast only to the element types of nn.ELEMENT_TYPES.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{cast to 'bf16' is not supported (f32, f64, f16, i32, i64, i8, i16, ui8, ui16, ui32, ui64, i1)}}
  %0 = nn.cast %a {dtype = "bf16"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// conv2d data is NCHW.
func.func @f(%x: tensor<1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{data must have rank 4, got 3}}
  %0 = nn.conv2d %x, %w : (tensor<1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

/// conv2d strides have two values.
func.func @f(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{'strides' must have 2 values, got 1}}
  %0 = nn.conv2d %x, %w {strides = array<i64: 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

/// conv2d strides are positive.
func.func @f(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{strides and dilation must be positive}}
  %0 = nn.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

/// conv2d padding is non-negative.
func.func @f(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{padding must be non-negative}}
  %0 = nn.conv2d %x, %w {padding = array<i64: -1, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

/// The window must fit the padded input.
func.func @f(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{window of extent 3 does not fit input size 2 with padding (0, 0)}}
  %0 = nn.conv2d %x, %w : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  func.return
}

// -----

/// groups must divide the channels.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error@+1 {{groups 3 must divide the input channels 4 and output channels 6}}
  %0 = nn.conv2d %x, %w {groups = 3 : i64} : (tensor<1x4x4x4xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32>
  func.return
}

// -----

/// The weight's I is C / groups.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error@+1 {{weight has 3 input channels per group, expected 4 (4 / groups 1)}}
  %0 = nn.conv2d %x, %w : (tensor<1x4x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

/// conv2d_transpose: groups must divide the input channels.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+1 {{groups 3 must divide the input channels 4}}
  %0 = nn.conv2d_transpose %x, %w {groups = 3 : i64} : (tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x3x6x6xf32>
  func.return
}

// -----

/// conv2d_transpose: the weight is (C, O / groups, KH, KW).
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<3x1x3x3xf32>) {
  // expected-error@+1 {{weight has 3 input channels, data has 4}}
  %0 = nn.conv2d_transpose %x, %w : (tensor<1x4x4x4xf32>, tensor<3x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  func.return
}

// -----

/// conv2d_transpose: positive strides.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+1 {{strides and dilation must be positive}}
  %0 = nn.conv2d_transpose %x, %w {dilation = array<i64: 1, 0>} : (tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  func.return
}

// -----

/// conv2d_transpose: non-negative output_padding.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+1 {{padding and output_padding must be non-negative}}
  %0 = nn.conv2d_transpose %x, %w {output_padding = array<i64: -1, 0>} : (tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x1x5x6xf32>
  func.return
}

// -----

/// conv2d_transpose: the crop must leave something.
func.func @f(%x: tensor<1x4x2x2xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+1 {{padding [3, 3, 3, 3] leaves an empty output}}
  %0 = nn.conv2d_transpose %x, %w {padding = array<i64: 3, 3, 3, 3>} : (tensor<1x4x2x2xf32>, tensor<4x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  func.return
}

// -----

/// dense data needs a contraction dimension.
func.func @f(%x: tensor<f32>, %w: tensor<2x1xf32>) {
  // expected-error@+1 {{data must have rank at least 1}}
  %0 = nn.dense %x, %w : (tensor<f32>, tensor<2x1xf32>) -> tensor<2xf32>
  func.return
}

// -----

/// dense contraction sizes agree.
func.func @f(%x: tensor<4x16xf32>, %w: tensor<2x8xf32>) {
  // expected-error@+1 {{contraction sizes differ: data has 16, weight has 8}}
  %0 = nn.dense %x, %w : (tensor<4x16xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// dense weight is (N, K).
func.func @f(%x: tensor<4x16xf32>, %w: tensor<1x2x16xf32>) {
  // expected-error@+1 {{weight must have rank 2, got 3}}
  %0 = nn.dense %x, %w : (tensor<4x16xf32>, tensor<1x2x16xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// matmul operands are at least vectors.
func.func @f(%x: tensor<f32>, %w: tensor<2xf32>) {
  // expected-error@+1 {{matmul operands must have rank at least 1}}
  %0 = nn.matmul %x, %w : (tensor<f32>, tensor<2xf32>) -> tensor<f32>
  func.return
}

// -----

/// matmul contraction sizes agree.
func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) {
  // expected-error@+1 {{contraction sizes differ: 3 and 4}}
  %0 = nn.matmul %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

/// matmul batch dimensions broadcast.
func.func @f(%x: tensor<2x2x3xf32>, %w: tensor<3x3x5xf32>) {
  // expected-error@+1 {{are not broadcast-compatible}}
  %0 = nn.matmul %x, %w : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  func.return
}

// -----

/// bias_add: one bias per channel.
func.func @f(%x: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{bias has 3 elements, data has 8 along axis 1}}
  %0 = nn.bias_add %x, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

/// bias_add: the bias is a vector.
func.func @f(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error@+1 {{bias must have rank 1, got 2}}
  %0 = nn.bias_add %x, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

/// batch_norm parameters have one value per channel.
func.func @f(%x: tensor<1x3x2x2xf32>, %g: tensor<2xf32>, %v: tensor<3xf32>) {
  // expected-error@+1 {{gamma has 2 elements, data has 3 along axis 1}}
  %0 = nn.batch_norm %x, %g, %v, %v, %v : (tensor<1x3x2x2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  func.return
}

// -----

/// pool_size is positive.
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{pool_size must be positive}}
  %0 = nn.max_pool2d %x {pool_size = array<i64: 0, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x3xf32>
  func.return
}

// -----

/// Pool padding stays inside the window.
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{padding must be smaller than the pooling window}}
  %0 = nn.avg_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 2, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x5x3xf32>
  func.return
}

// -----

/// Pools take NCHW data.
func.func @f(%x: tensor<1x4x4xf32>) {
  // expected-error@+1 {{data must have rank 4, got 3}}
  %0 = nn.max_pool2d %x {pool_size = array<i64: 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x3x3xf32>
  func.return
}

// -----

/// Global pools take NCHW data.
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{data must have rank 4, got 2}}
  %0 = nn.global_avg_pool2d %x : (tensor<4x4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

/// lrn size is positive.
func.func @f(%x: tensor<1x4x2x2xf32>) {
  // expected-error@+1 {{size 0 must be positive}}
  %0 = nn.lrn %x {size = 0 : i64} : tensor<1x4x2x2xf32>
  func.return
}

// -----

/// reshape's newshape has at most one -1 (the rest), no other negative dim.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{newshape [-1, -1] must be non-negative, with at most one -1 (the rest)}}
  %0 = nn.reshape %x {newshape = array<i64: -1, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

/// reshape keeps the element count.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{cannot reshape 6 elements [2, 3] into [4, 2]}}
  %0 = nn.reshape %x {newshape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// flatten axis within [-rank, rank].
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{axis 4 is out of range for rank 3}}
  %0 = nn.flatten %x {axis = 4 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  func.return
}

// -----

/// transpose axes are a permutation.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{axes [0, 0, 1] is not a permutation of rank 3}}
  %0 = nn.transpose %x {axes = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}

// -----

/// concatenate: other dimensions agree.
func.func @f(%x: tensor<3x3xf32>, %y: tensor<2x5xf32>) {
  // expected-error@+1 {{input #1 has shape [2, 5], incompatible with [3, 3] along axis 0}}
  %0 = nn.concatenate %x, %y : (tensor<3x3xf32>, tensor<2x5xf32>) -> tensor<5x3xf32>
  func.return
}

// -----

/// concatenate needs an input.
func.func @f() {
  // expected-error@+1 {{concatenate needs at least one input}}
  %0 = nn.concatenate : () -> tensor<1xf32>
  func.return
}

// -----

/// take indices are integers.
func.func @f(%x: tensor<3x2xf32>, %i: tensor<2xf32>) {
  // expected-error@+1 {{indices must be i32 or i64, got f32}}
  %0 = nn.take %x, %i : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

/// take from an empty axis.
func.func @f(%x: tensor<0x2xf32>, %i: tensor<2xi64>) {
  // expected-error@+1 {{cannot take from the empty axis 0}}
  %0 = nn.take %x, %i : (tensor<0x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  func.return
}

// -----

/// pad_mode is one of numpy's.
func.func @f(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{pad_mode 'mirror' is not one of constant, edge, reflect, wrap}}
  %0 = nn.pad %x {pad_width = array<i64: 1, 1, 1, 1>, pad_mode = "mirror"} : (tensor<2x2xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

/// pad_width is non-negative.
func.func @f(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{pad_width must be non-negative}}
  %0 = nn.pad %x {pad_width = array<i64: -1, 0, 0, 0>} : (tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return
}

// -----

/// reflect padding is smaller than the dimension.
func.func @f(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{reflect padding must be smaller than the dimension}}
  %0 = nn.pad %x {pad_width = array<i64: 2, 0, 0, 0>, pad_mode = "reflect"} : (tensor<2x2xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// pad_width has a (before, after) pair per dimension.
func.func @f(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{'pad_width' must have 4 values, got 2}}
  %0 = nn.pad %x {pad_width = array<i64: 1, 1>} : (tensor<2x2xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// split indices are non-decreasing and inside the axis.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{indices [3, 1] must be non-decreasing within [0, 4]}}
  %0:3 = nn.split %x {indices = array<i64: 3, 1>} : (tensor<4xf32>) -> (tensor<3xf32>, tensor<0xf32>, tensor<3xf32>)
  func.return
}

// -----

/// strided_slice strides are non-zero.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{strides must be non-zero}}
  %0 = nn.strided_slice %x {begin = array<i64: 0>, end = array<i64: 4>, strides = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// strided_slice bounds lie within the dimension.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{begin 0 / end 5 out of range [0, 4] for size 4 and stride 1}}
  %0 = nn.strided_slice %x {begin = array<i64: 0>, end = array<i64: 5>} : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}

// -----

/// strided_slice has a stride per dimension.
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{'strides' must have 2 values, got 1}}
  %0 = nn.strided_slice %x {begin = array<i64: 0, 0>, end = array<i64: 4, 4>, strides = array<i64: 1>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

/// resize2d method.
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{method 'cubic' is not one of nearest_neighbor, linear}}
  %0 = nn.resize2d %x {size = array<i64: 4, 4>, method = "cubic"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

/// resize2d coordinate_transformation_mode.
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{coordinate_transformation_mode 'center' is not one of}}
  %0 = nn.resize2d %x {size = array<i64: 4, 4>, coordinate_transformation_mode = "center"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

/// resize2d rounding_method.
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{rounding_method 'up' is not one of}}
  %0 = nn.resize2d %x {size = array<i64: 4, 4>, rounding_method = "up"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

/// resize2d size is positive.
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{size must be positive}}
  %0 = nn.resize2d %x {size = array<i64: 0, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x0x4xf32>
  func.return
}

// -----

/// resize2d scales are non-negative.
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{scales must be non-negative}}
  %0 = nn.resize2d %x {size = array<i64: 4, 4>, scale_h = -2.0 : f64} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

/// Reductions name each axis once.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axes [1, -1] repeat an axis}}
  %0 = nn.reduce_sum %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

/// reduce_mean is for floats only.
func.func @f(%x: tensor<2x3xi32>) {
  // expected-error@+1 {{element type i32 is not supported (expected one of f32, f64, f16)}}
  %0 = nn.reduce_mean %x : (tensor<2x3xi32>) -> tensor<i32>
  func.return
}

// -----

/// Constants hold the element types of nn.ELEMENT_TYPES (no bf16).
func.func @f() {
  // expected-error@+1 {{nn.constant needs a tensor of an nn element type (nn.ELEMENT_TYPES), got tensor<2xbf16>}}
  %0 = nn.constant dense<[1.0, 2.0]> : tensor<2xbf16>
  func.return
}

// -----

/// A constant's value has its result type (generic form).
func.func @f() {
  // expected-error@+1 {{value type tensor<2xf32> does not match result type tensor<3xf32>}}
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

/// Operand and type counts agree (parser).
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{'nn.add' has 2 operands but 1 operand types}}
  %0 = nn.add %a, %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// A constant needs a value per element (parser).
func.func @f() {
  // expected-error@+1 {{constant has 3 values, tensor<2xf32> needs 2}}
  %0 = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<2xf32>
  func.return
}

// -----

/// A hex payload has the tensor's byte size (parser).
func.func @f() {
  // expected-error@+1 {{hex payload holds 4 bytes, tensor<2xf32> needs 8}}
  %0 = nn.constant dense<"0x0000803F"> : tensor<2xf32>
  func.return
}

// -----

/// A hex payload starts with 0x (parser).
func.func @f() {
  // expected-error@+1 {{hex payload must start with 0x}}
  %0 = nn.constant dense<"0000803F"> : tensor<1xf32>
  func.return
}

// -----

/// A hex payload is hex (parser).
func.func @f() {
  // expected-error@+1 {{malformed hex payload}}
  %0 = nn.constant dense<"0xZZ00803F"> : tensor<1xf32>
  func.return
}

// -----

/// A constant's type is a tensor (parser).
func.func @f() {
  // expected-error@+1 {{nn.constant needs a tensor of an nn element type (nn.ELEMENT_TYPES), got f32}}
  %0 = nn.constant dense<[1.0]> : f32
  func.return
}

// -----

/// An elided constant cannot be read back (parser).
func.func @f() {
  // expected-error@+1 {{an elided constant (dense_resource<__elided__>) cannot be read back}}
  %0 = nn.constant dense_resource<__elided__> : tensor<64xf32>
  func.return
}

// -----

/// A dim above int64 is rejected where the type is written, not carried to the C code.
// expected-error@+1 {{dimension 99999999999999999999 of tensor<99999999999999999999xf32> does not fit int64}}
func.func @f(%a: tensor<99999999999999999999xf32>) {
  %0 = nn.relu %a : tensor<99999999999999999999xf32>
  func.return
}

// -----

/// An element count whose byte size overflows int64 (2**62 * 4 elements of 4 bytes).
// expected-error@+1 {{tensor<4611686018427387904x4xf32> has 18446744073709551616 elements of 4 bytes: its byte size does not fit int64}}
func.func @f(%a: tensor<4611686018427387904x4xf32>) {
  %0 = nn.relu %a : tensor<4611686018427387904x4xf32>
  func.return
}

// -----

/// The byte size, not only the element count: 2**61 i64 elements are 2**64 bytes.
// expected-error@+1 {{has 2305843009213693952 elements of 8 bytes: its byte size does not fit int64}}
func.func @f(%a: tensor<2305843009213693952xi64>) {
  %0 = nn.relu %a : tensor<2305843009213693952xi64>
  func.return
}

// -----

/// A dynamic dim is legal; the dims the relation knows are still checked.
func.func @f(%a: tensor<?x3xf32>, %w: tensor<5x3xf32>) {
  // expected-error@+1 {{result type tensor<?x4xf32> is not compatible with the inferred type tensor<?x5xf32>}}
  %0 = nn.dense %a, %w : (tensor<?x3xf32>, tensor<5x3xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

/// A result type is checked too (a reshape into a byte size above int64).
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{has 4611686018427387904 elements of 4 bytes}}
  %0 = nn.reshape %a {newshape = array<i64: 4611686018427387904>} : (tensor<4xf32>) -> tensor<4611686018427387904xf32>
  func.return
}

// -----

/// Issue 14 item 12: an i32 pad_value must be an i32 (inf).
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{pad_value inf is not a value of the element type i32}}
  %0 = nn.pad %a {pad_width = array<i64: 1, 1>, pad_value = 0x7FF0000000000000 : f64} : (tensor<2xi32>) -> tensor<4xi32>
  func.return
}

// -----

/// 1e20 does not fit i32.
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{pad_value 1e+20 is not a value of the element type i32}}
  %0 = nn.pad %a {pad_width = array<i64: 1, 1>, pad_value = 1.0e20 : f64} : (tensor<2xi32>) -> tensor<4xi32>
  func.return
}

// -----

/// 2**31 is one above the largest i32.
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{pad_value 2147483648.0 is not a value of the element type i32}}
  %0 = nn.pad %a {pad_width = array<i64: 1, 1>, pad_value = 2147483648.0 : f64} : (tensor<2xi32>) -> tensor<4xi32>
  func.return
}

// -----

/// A fraction is not an integer value.
func.func @f(%a: tensor<2xi64>) {
  // expected-error@+1 {{pad_value 0.5 is not a value of the element type i64}}
  %0 = nn.pad %a {pad_width = array<i64: 1, 1>, pad_value = 0.5 : f64} : (tensor<2xi64>) -> tensor<4xi64>
  func.return
}

// -----

/// An f32 pad_value beyond f32's range (inf and nan are f32 values, 1e300 is not).
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{pad_value 1e+300 is out of the range of the element type f32}}
  %0 = nn.pad %a {pad_width = array<i64: 1, 1>, pad_value = 1.0e300 : f64} : (tensor<2xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// Issue 14 item 13: pool padding is checked against the dilated window (k - 1) * d + 1 = 3,
/// not k * d = 4: padding 3 with a 2x2 window of dilation 2 is rejected.
func.func @f(%x: tensor<1x1x5x5xf32>) {
  // expected-error@+1 {{padding must be smaller than the pooling window (dilated extent 3x3), got [3, 3, 3, 3]}}
  %0 = nn.max_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x9x9xf32>
  func.return
}

// -----

/// The same rule for one side only (bottom), and for avg_pool2d.
func.func @f(%x: tensor<1x1x5x5xf32>) {
  // expected-error@+1 {{padding must be smaller than the pooling window (dilated extent 3x3), got [0, 0, 3, 0]}}
  %0 = nn.avg_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 3, 0>, dilation = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x7x4xf32>
  func.return
}

// -----

/// ONNX coverage, part B: gather indices are integers, scatter updates match the data.
func.func @f(%x: tensor<2x3xf32>, %i: tensor<2x3xf32>) {
  // expected-error@+1 {{indices must be i32 or i64, got f32}}
  %0 = nn.gather_elements %x, %i : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>, %i: tensor<1x1xi64>, %u: tensor<1x2xf32>) {
  // expected-error@+1 {{updates has shape [1, 2], expected [1, 3]}}
  %0 = nn.scatter_nd %x, %i, %u : (tensor<2x3xf32>, tensor<1x1xi64>, tensor<1x2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{coordinate_transformation_mode 'crop' is not one of}}
  %0 = nn.resize %x {size = array<i64: 4, 6>, coordinate_transformation_mode = "crop"} : (tensor<2x3xf32>) -> tensor<4x6xf32>
  func.return
}
