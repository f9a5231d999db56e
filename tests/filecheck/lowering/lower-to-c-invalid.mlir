// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p lower-to-c

/// lower-to-c takes f32, i64, i32, i8, ui8 adds only: an i16 op in a ccompiler partition is an
/// error at the op.
func.func private @ccompiler_main_0(%a: tensor<4xi16>) -> tensor<4xi16> attributes {byoc.compiler = "ccompiler"} {
  // expected-error@+1 {{lower-to-c: 'nn.add' on i16 is not supported by the C codegen (supported: f32, i64, i32, i8, ui8)}}
  %0 = nn.add %a, %a : tensor<4xi16>
  func.return %0 : tensor<4xi16>
}

// -----

/// Ops without a C lowering are rejected, not miscompiled.
func.func private @ccompiler_main_0(%a: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {byoc.compiler = "ccompiler"} {
  // expected-error@+1 {{lower-to-c: 'func.call' cannot appear in a ccompiler partition}}
  %0 = func.call @helper(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
func.func private @helper(tensor<2x4xf32>) -> tensor<2x4xf32>

// -----

/// A composite of another target cannot be lowered to C.
func.func private @ccompiler_main_0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
  // expected-error@+1 {{lower-to-c: composite 'cblas.relu' belongs to target 'cblas', not ccompiler}}
  %0 = byoc.composite "cblas.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %1 = nn.relu %x : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

/// An argument the C ABI cannot take, even if no op reads it.
// expected-error@+1 {{lower-to-c: argument #1 of '@ccompiler_main_0' has type tensor<4xf64>; the C codegen takes f32, i64, i32, i8, ui8, i1 tensors of static, non-empty shape}}
func.func private @ccompiler_main_0(%a: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
