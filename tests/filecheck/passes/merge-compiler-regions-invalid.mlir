// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p merge-compiler-regions
// RUN: not %byoc-opt %s -p 'merge-compiler-regions{min-ops=-1}' 2>&1 | %filecheck %s --check-prefix=MINOPS

/// An op tagged for an unknown target is an error at the op (a typo never means
/// "run it on the host").
func.func @unknown_target(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{merge-compiler-regions: 'nn.relu' is tagged for unknown target 'tset'}}
  %0 = nn.relu %x {byoc.target = "tset"} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

/// So is a region of an unknown target.
func.func @unknown_region_target(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'byoc.region' is tagged for unknown target 'npu'}}
  %r = byoc.region "npu" -> (tensor<4xf32>) {
    %0 = nn.relu %x : tensor<4xf32>
    byoc.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

/// min-ops must not be negative.
// MINOPS: error: invalid options for pass 'merge-compiler-regions': min-ops must not be negative, got -1
