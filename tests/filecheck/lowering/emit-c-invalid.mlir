// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -t c

/// An element type C has no name for reaching the emitter is an error at the op.
c.module {
  // expected-error@+1 {{emit-c: cannot emit type f16}}
  c.global @h = dense<[1.0, 2.0]> : tensor<2xf16>
}

// -----

c.module {
  c.func static @k(%p: !c.ptr<f32>) {
    %0 = c.constant 0 : index
    %1 = c.load %p[%0] : !c.ptr<f32>
    // expected-error@+1 {{emit-c: cannot emit type bf16}}
    %2 = c.cast %1 : f32 to bf16
    %3 = c.cast %2 : bf16 to f32
    c.store %3, %p[%0] : !c.ptr<f32>
    c.return
  }
}

// -----

/// Nothing to print: the module was not lowered.
// expected-error@+1 {{emit-c: the module has no c.module to print; run lower-to-c first}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
