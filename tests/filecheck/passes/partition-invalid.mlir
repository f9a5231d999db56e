// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p partition

/// An op tagged for a target nobody registered is an error at the op.
func.func @unknown_target_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{partition: 'nn.relu' is tagged for unknown target 'nope'; known targets: cblas, ccompiler, dnnl, examplejson, graphref, test, test_<suffix>}}
  %0 = nn.relu %x {byoc.target = "nope"} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

/// So is a region of an unknown target.
func.func @unknown_target_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'byoc.region' is tagged for unknown target 'npu'}}
  %r = byoc.region "npu" -> (tensor<4xf32>) {
    %0 = nn.relu %x : tensor<4xf32>
    byoc.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

/// A malformed region: it holds an op tagged for another target.
func.func @mixed_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test_a" -> (tensor<4xf32>) {
    // expected-error@+1 {{'nn.relu' is tagged for 'test_b' inside a region of 'test_a'}}
    %0 = nn.relu %x {byoc.target = "test_b"} : tensor<4xf32>
    byoc.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

/// A malformed region: regions do not nest.
func.func @nested_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test" -> (tensor<4xf32>) {
    // expected-error@+1 {{a 'byoc.region' may not contain another region}}
    %s = byoc.region "test" -> (tensor<4xf32>) {
      %0 = nn.relu %x : tensor<4xf32>
      byoc.yield %0 : tensor<4xf32>
    }
    byoc.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

/// A composite belongs to the target its name starts with.
func.func @composite_of_another_target(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{composite 'test_a.abs_relu' is tagged for 'test_b'; a composite belongs to the target its name starts with ('test_a')}}
  %c = byoc.composite "test_a.abs_relu"(%x) {byoc.target = "test_b"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %0 = nn.abs %a : tensor<4xf32>
    %1 = nn.relu %0 : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  func.return %c : tensor<4xf32>
}

// -----

/// A hand-written tag the target's predicate rejects is an error, not a silent fallback.
func.func @predicate_rejects(%x: tensor<4xi16>) -> tensor<4xi16> {
  // expected-error@+1 {{'nn.add' is tagged for 'ccompiler', whose predicate rejects it}}
  %0 = nn.add %x, %x {byoc.target = "ccompiler"} : tensor<4xi16>
  func.return %0 : tensor<4xi16>
}
