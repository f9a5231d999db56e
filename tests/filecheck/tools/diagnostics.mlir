// Errors print as `file:line:col: error: message`, then the offending line and
// a caret under the column, and byoc-opt exits with 1.
// RUN: not %byoc-opt %s 2>&1 | %filecheck %s
// A bad pass pipeline points into the pipeline text, shown as <pass-pipeline>.
// RUN: not %byoc-opt %s -p 'cse,frobnicate' 2>&1 | %filecheck %s --check-prefix=UNKNOWN
// RUN: not %byoc-opt %s --pass cse --pass 'dce{level=3}' 2>&1 | %filecheck %s --check-prefix=OPTION
// RUN: not %byoc-opt %s -p 'cse{' 2>&1 | %filecheck %s --check-prefix=SYNTAX
// A missing input file.
// RUN: not %byoc-opt %S/does-not-exist.mlir 2>&1 | %filecheck %s --check-prefix=MISSING

// CHECK:      diagnostics.mlir:[[# @LINE + 12]]:3: error: 'nn.dense' op contraction sizes differ: data has 16, weight has 8
// CHECK-NEXT: {{^}}  %0 = nn.dense %x, %w : (tensor<4x16xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: {{^}}  ^{{$}}
// CHECK-NOT:  Traceback

// UNKNOWN:      <pass-pipeline>:1:5: error: unknown pass 'frobnicate' (see --list-passes)
// UNKNOWN-NEXT: {{^}}cse,frobnicate{{$}}
// UNKNOWN-NEXT: {{^}}    ^{{$}}
// OPTION:       <pass-pipeline>:1:5: error: invalid options for pass 'dce': {{.*}}"level"{{.*}}(it takes no options)
// SYNTAX:       <pass-pipeline>:1:5: error: malformed pass pipeline
// MISSING:      byoc-opt: error: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
func.func @main(%x: tensor<4x16xf32>, %w: tensor<2x8xf32>) -> tensor<4x2xf32> {
  %0 = nn.dense %x, %w : (tensor<4x16xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
