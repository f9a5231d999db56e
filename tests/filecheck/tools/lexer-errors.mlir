// A lexer error on the first token of a chunk (or of the file) is an error of
// the input like any other: reported at its file:line:col, the other chunks'
// output is kept and every chunk is still checked (as mlir-opt does).
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics
// RUN: not %byoc-opt %s --split-input-file 2> %t.err | %filecheck %s
// RUN: %filecheck %s --check-prefix=ERR < %t.err

// CHECK:      func.func @first
// CHECK-COUNT-7: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @between
// CHECK-COUNT-5: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @last

// ERR:      lexer-errors.mlir:[[# @LINE + 19]]:1: error: @ identifier expected to start with letter, '_', or '"'.
// ERR-NEXT: {{^}}@{{$}}
// ERR-NEXT: {{^}}^{{$}}
// ERR:      lexer-errors.mlir:[[# @LINE + 23]]:3: error: expected an identifier after '#'
// ERR-NEXT: {{^}}  #{{$}}
// ERR-NEXT: {{^}}  ^{{$}}
// ERR:      lexer-errors.mlir:[[# @LINE + 61]]:6: error: invalid escape in string literal: '\q'
// ERR-NEXT: {{^}}"abc \q"{{$}}
// ERR-NEXT: {{^}}     ^{{$}}
// ERR-NOT:  internal error
// ERR-NOT:  Traceback

func.func @first() {
  func.return
}

// -----

// expected-error@+1 {{@ identifier expected to start with letter, '_', or '"'.}}
@

// -----

// Blank lines and comments before the token: it is still placed on its line.

// expected-error@+1 {{expected an identifier after '#'}}
  #

// -----

// expected-error@+1 {{expected an identifier after '%'}}
%

// -----

// expected-error@+1 {{expected an identifier after '^'}}
^

// -----

// expected-error@+1 {{expected an identifier after '!'}}
!

// -----

// expected-error@+1 {{Expected three consecutive '.' for an ellipsis}}
..

// -----

func.func @between() {
  func.return
}

// -----

// expected-error@+1 {{string literal is not closed before the end of the line}}
"abc

// -----

// expected-error@+1 {{string literal is not closed before the end of the line}}
@"abc

// -----

// expected-error@+1 {{invalid escape in string literal: '\q'}}
"abc \q"

// -----

// Not on the first token: the same messages.
func.func @f() {
  // expected-error@+1 {{string literal is not closed before the end of the line}}
  %0 = "nn.relu
}

// -----

func.func @last() {
  func.return
}
