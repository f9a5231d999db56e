// --list-passes names every pass of byoc/passes (ALL_PASSES) and the xDSL
// passes byoc-opt offers, each with the first line of its docstring and its
// options; it needs no input.
// RUN: %byoc-opt --list-passes | %filecheck %s

// CHECK:      Passes (use as --pass NAME or -p 'NAME{option=value}'):
// CHECK-DAG:  merge-composite
// CHECK-DAG:  annotate-target
// CHECK-DAG:  merge-compiler-regions
// CHECK-DAG:  partition
// CHECK-DAG:  byoc
// CHECK-DAG:  lower-to-c
// CHECK-DAG:  lower-to-examplejson
// CHECK-DAG:  lower-to-graph
// CHECK-DAG:  fold-batch-norm {{ +}}Fold each inference batch_norm
// CHECK-DAG:  canonicalize {{ +}}Applies all canonicalization patterns.
// CHECK-DAG:  cse {{ +}}Eliminate common subexpressions
// CHECK-DAG:  dce {{ +}}Remove pure ops whose results are unused
