// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

c.module {
  c.func static @k(%p: !c.ptr<f32, const>) {
    %0 = c.constant 0 : index
    %1 = c.constant 1.0 : f32
    // expected-error@+1 {{cannot store through a const pointer}}
    c.store %1, %p[%0] : !c.ptr<f32, const>
    c.return
  }
}

// -----

c.module {
  c.func static @k(%n: i32) {
    // expected-error@+1 {{'c.check_arg_count' op can fail, so its function '@k' must return i32}}
    c.check_arg_count %n, 1 inputs, 1 outputs
    c.return
  }
}

// -----

/// An op that can fail returns -1 from its function, so it lives in one.
c.module {
  // expected-error@+1 {{'c.workspace' op expects ancestor op 'c.func'}}
  %ws = c.workspace 64 : !c.ptr<i8>
}

// -----

c.module {
  // expected-error@+1 {{function name 'not-c' is not a valid C identifier}}
  c.func static @"not-c"() {
    c.return
  }
}

// -----

c.module {
  c.func static @k() {
    // expected-error@+1 {{'@missing' is not a c.func}}
    c.call @missing() : () -> ()
    c.return
  }
}

// -----

c.module {
  c.func @k() -> i32 {
    %ws = c.workspace 64 : !c.ptr<i8>
    // expected-error@+1 {{buffer [32, 96) exceeds the workspace of 64 bytes}}
    %b = c.buffer %ws[32, 64] : !c.ptr<f32>
    %0 = c.constant 0 : i32
    c.return %0 : i32
  }
}

// -----

c.module {
  c.global @w = dense<[1.0]> : tensor<1xf32>
  c.func @k() -> i32 {
    // expected-error@+1 {{'@w' is not an `init` global}}
    c.check_bound @w
    %0 = c.constant 0 : i32
    c.return %0 : i32
  }
}

// -----

c.module {
  c.global @w = dense<[1.0]> : tensor<1xf32>
  c.func static @k() {
    // expected-error@+1 {{'@w' holds f32; its address is !c.ptr<f32, const>, not !c.ptr<i32, const>}}
    %0 = c.get_global @w : !c.ptr<i32, const>
    c.return
  }
}

