// Every verifier error of the byoc dialect (byoc/dialects/byoc.py), and of
// its custom parser, one case a chunk.
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

/// A region is not isolated: its body takes no block arguments.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{body takes no arguments; it uses outside values}}
  %0 = byoc.region "ccompiler" -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    byoc.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

/// A region names its target.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{target must not be empty}}
  %0 = byoc.region "" -> (tensor<4xf32>) {
    byoc.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

/// byoc.yield returns exactly the parent's result types.
func.func @f(%x: tensor<4xf32>) {
  %0 = byoc.region "ccompiler" -> (tensor<4xf32>) {
    // expected-error@+1 {{yields 0 values of types () but the parent 'byoc.region' returns (tensor<4xf32>)}}
    byoc.yield
  }
  func.return
}

// -----

/// ... also for a composite, and in type as well as number.
func.func @f(%x: tensor<4xf32>) {
  %0 = byoc.composite "cblas.relu"(%x) : (tensor<4xf32>) -> tensor<4xi32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = nn.relu %a : tensor<4xf32>
    // expected-error@+1 {{yields 1 values of types (tensor<4xf32>) but the parent 'byoc.composite' returns (tensor<4xi32>)}}
    byoc.yield %1 : tensor<4xf32>
  }
  func.return
}

// -----

/// byoc.yield terminates only byoc.region and byoc.composite.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{expects parent op to be one of 'byoc.region', 'byoc.composite'}}
  byoc.yield %x : tensor<4xf32>
}

// -----

/// A composite is named <target>.<pattern>.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{composite name 'cblas' must have the form '<target>.<name>'}}
  %0 = byoc.composite "cblas"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    byoc.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

/// ... with a non-empty target and pattern.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{composite name '.relu' must have the form '<target>.<name>'}}
  %0 = byoc.composite ".relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    byoc.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

/// The composite's block arguments have its operand types.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{block argument types (tensor<2xf32>) do not match operand types (tensor<4xf32>)}}
  %0 = byoc.composite "cblas.relu"(%x) : (tensor<4xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    byoc.yield %a : tensor<2xf32>
  }
  func.return
}

// -----

/// A composite is isolated from above: its body cannot read %x.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{using value defined out of its IsolatedFromAbove parent}}
  %0 = byoc.composite "cblas.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = nn.relu %x : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  func.return
}

// -----

/// A region has exactly one block.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected a single block, but got 2 blocks}}
  %0 = byoc.region "ccompiler" -> (tensor<4xf32>) {
    byoc.yield %x : tensor<4xf32>
  ^bb1:
    byoc.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

/// The body ends with byoc.yield.
func.func @f(%x: tensor<4xf32>) {
  %0 = byoc.region "ccompiler" -> (tensor<4xf32>) {
    // expected-error@+1 {{terminates block in single-block region but is not a terminator}}
    %1 = nn.relu %x : tensor<4xf32>
  }
  func.return
}

// -----

/// Composite operands and types agree in number (parser).
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'byoc.composite' has 2 operands but 1 types}}
  %0 = byoc.composite "cblas.add"(%x, %x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    byoc.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

/// A region's target is a string literal (parser).
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{target name}}
  %0 = byoc.region ccompiler -> (tensor<4xf32>) {
    byoc.yield %x : tensor<4xf32>
  }
  func.return
}
