// --verify-diagnostics fails (exit 1) listing every expectation not produced
// and every diagnostic not expected, each at its location.
// RUN: not %byoc-opt %s --split-input-file --verify-diagnostics 2>&1 | %filecheck %s

/// An expectation nothing produced.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:6: error: expected error "no such error" was not produced
  // expected-error@+1 {{no such error}}
  %0 = nn.relu %a : tensor<4xf32>
  func.return
}

// -----

/// A diagnostic nobody expected.
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:3: error: unexpected error: 'nn.add' op operand shapes 4, 5 are not broadcast-compatible
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// The right text on the wrong line is both unexpected and not produced.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 3]]:3: error: unexpected error: 'nn.relu' op result type
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:6: error: expected error "result type" was not produced
  // expected-error@+2 {{result type}}
  %0 = nn.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}

// -----

/// The wrong severity: a warning is not an error.
func.func @f(%a: tensor<4xi32>) {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 3]]:3: error: unexpected error: 'nn.exp' op element type i32 is not supported
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:6: error: expected warning "element type" was not produced
  // expected-warning@+1 {{element type}}
  %0 = nn.exp %a : tensor<4xi32>
  func.return
}

// -----

/// Text that is not a substring of the message.
func.func @f(%a: tensor<4xi32>) {
  // CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 1]]:6: error: expected error "element type i64" was not produced
  // expected-error@+1 {{element type i64}}
  %0 = nn.exp %a : tensor<4xi32>
  func.return
}
