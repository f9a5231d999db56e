// --verify-diagnostics checks MLIR-style expectations against the diagnostics
// each chunk produces: `expected-error@+N`, `@-N`, `@above` (the previous line
// without an expectation), `@below` (the next such line), no designator (the
// same line), and `expected-error-re` with `{{regex}}` fragments. The text is
// a substring of the message. All matched: exit 0.
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics
// Without the flag the same input is an error.
// RUN: not %byoc-opt %s --split-input-file 2>&1 | %filecheck %s --check-prefix=PLAIN
// PLAIN: error: 'nn.add' op operand shapes 4, 5 are not broadcast-compatible

/// @+N counts lines down from the comment.
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{operand shapes 4, 5 are not broadcast-compatible}}

  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return
}

// -----

/// @-N counts lines up.
func.func @f(%a: tensor<4xf32>) {
  %0 = nn.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  // expected-error@-1 {{does not match the inferred type}}
  func.return
}

// -----

/// @above: the previous line that holds no expectation.
func.func @f(%a: tensor<2x2xf32>) {
  %0 = nn.softmax %a {axis = 3 : i64} : tensor<2x2xf32>
  // expected-error@above {{axis 3 is out of range for rank 2}}
  func.return
}

// -----

/// @above skips expectation lines: the error and its note both point at the
/// opening brace's line (the parse error is at the end of the input, below).
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note@above {{to close the region opened here}}
  // expected-error@below {{unexpected end of input: expected '}'}}

// -----

/// @below: the next line that holds no expectation.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@below {{Operation nn.frobnicate is not registered}}
  %0 = nn.frobnicate %a : tensor<4xf32>
  func.return
}

// -----

/// No designator: the diagnostic is on the comment's own line.
func.func @f(%a: tensor<4xi32>) {
  %0 = nn.sigmoid %a : tensor<4xi32> // expected-error {{element type i32 is not supported}}
  func.return
}

// -----

/// -re: literal text with {{regex}} fragments.
func.func @f(%a: tensor<6xf32>) {
  // expected-error-re@+1 {{cannot reshape {{[0-9]+}} elements [6] into [{{[0-9, ]+}}]}}
  %0 = nn.reshape %a {newshape = array<i64: 4, 2>} : (tensor<6xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

/// A chunk without expectations must produce no diagnostic; its output is printed.
func.func @ok(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
