// Sizes no tensor can have: beyond int64, or beyond this machine's memory, are errors at
// the constant's or the value's type, never a MemoryError or OverflowError at the next op.
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

/// A splat whose byte size fits int64 but no machine's memory (4 * 2^50 bytes).
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{nn.constant: tensor<1125899906842624xf32> is 4503599627370496 bytes, more than this machine's memory}}
  %c = nn.constant dense<1.0> : tensor<1125899906842624xf32>
  %0 = nn.relu %x : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

/// A splat whose byte size does not fit int64.
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{tensor<100000000000x100000000000xf32> has 10000000000000000000000 elements of 4 bytes: its byte size does not fit int64}}
  %c = nn.constant dense<1.0> : tensor<100000000000x100000000000xf32>
  %0 = nn.relu %x : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

/// A dim beyond int64 in a function type.
// expected-error@+1 {{dimension 99999999999999999999 of tensor<99999999999999999999x3xf32> does not fit int64}}
func.func @f(%x: tensor<99999999999999999999x3xf32>) -> tensor<3xf32> {
  %0 = nn.constant dense<1.0> : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

/// A dim beyond int64 in a result type of a declaration.
// expected-error@+1 {{tensor<4611686018427387904x4xf32> has 18446744073709551616 elements of 4 bytes: its byte size does not fit int64}}
func.func private @g(tensor<3xf32>) -> tensor<4611686018427387904x4xf32>
