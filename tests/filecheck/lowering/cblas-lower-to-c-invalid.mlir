// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p lower-to-c

/// A cblas composite belongs in a cblas partition, not a ccompiler one.
func.func private @ccompiler_main_0(%x: tensor<1x3xf32>, %w: tensor<2x3xf32>) -> tensor<1x2xf32> attributes {byoc.compiler = "ccompiler"} {
  // expected-error@+1 {{lower-to-c: composite 'cblas.dense' belongs to target 'cblas', not ccompiler}}
  %0 = byoc.composite "cblas.dense"(%x, %w) : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32> {
  ^bb0(%a: tensor<1x3xf32>, %b: tensor<2x3xf32>):
    %1 = nn.dense %a, %b : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
    byoc.yield %1 : tensor<1x2xf32>
  }
  func.return %0 : tensor<1x2xf32>
}

// -----

/// A hand-written composite that is not GEMM -> per-channel epilogue -> relu is rejected.
func.func private @cblas_main_0(%x: tensor<1x3xf32>, %w: tensor<2x3xf32>) -> tensor<1x2xf32> attributes {byoc.compiler = "cblas"} {
  // expected-error@+1 {{lower-to-c: composite 'cblas.dense_tanh': 'nn.tanh' is not a per-channel epilogue of a GEMM}}
  %0 = byoc.composite "cblas.dense_tanh"(%x, %w) : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32> {
  ^bb0(%a: tensor<1x3xf32>, %b: tensor<2x3xf32>):
    %1 = nn.dense %a, %b : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
    %2 = nn.tanh %1 : tensor<1x2xf32>
    byoc.yield %2 : tensor<1x2xf32>
  }
  func.return %0 : tensor<1x2xf32>
}

// -----

/// The checks of the pattern table hold for hand-written composites too: groups > 1.
func.func private @cblas_main_0(%x: tensor<1x4x5x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> attributes {byoc.compiler = "cblas"} {
  // expected-error@+1 {{lower-to-c: composite 'cblas.conv2d': conv2d with groups=4 (cblas takes groups == 1)}}
  %0 = byoc.composite "cblas.conv2d"(%x, %w) : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  ^bb0(%a: tensor<1x4x5x5xf32>, %b: tensor<4x1x3x3xf32>):
    %1 = nn.conv2d %a, %b {groups = 4 : i64} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
    byoc.yield %1 : tensor<1x4x3x3xf32>
  }
  func.return %0 : tensor<1x4x3x3xf32>
}

// -----

/// Ops beside the GEMM chain in a composite body are rejected, not dropped.
func.func private @cblas_main_0(%x: tensor<1x3xf32>, %w: tensor<2x3xf32>) -> tensor<1x2xf32> attributes {byoc.compiler = "cblas"} {
  // expected-error@+1 {{lower-to-c: composite 'cblas.dense' holds ops outside its GEMM chain: nn.exp}}
  %0 = byoc.composite "cblas.dense"(%x, %w) : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32> {
  ^bb0(%a: tensor<1x3xf32>, %b: tensor<2x3xf32>):
    %e = nn.exp %a : tensor<1x3xf32>
    %1 = nn.dense %a, %b : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
    byoc.yield %1 : tensor<1x2xf32>
  }
  func.return %0 : tensor<1x2xf32>
}
