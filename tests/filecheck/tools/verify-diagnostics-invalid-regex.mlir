// An `expected-*-re` whose text is not a regular expression is an error at the
// comment (not an internal error), and it matches nothing.
// RUN: not %byoc-opt %s --verify-diagnostics 2>&1 | %filecheck %s

// CHECK:     verify-diagnostics-invalid-regex.mlir:[[# @LINE + 5]]:6: error: unexpected error: Operation nn.nope is not registered
// CHECK:     verify-diagnostics-invalid-regex.mlir:[[# @LINE + 3]]:4: error: invalid regular expression in expected-error-re: missing ), unterminated subpattern
// CHECK-NOT: internal error
// CHECK-NOT: Traceback
// expected-error-re@+1 {{Operation {{(}} is not registered}}
%0 = nn.nope
