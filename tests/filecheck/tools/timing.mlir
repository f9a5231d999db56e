// --timing prints MLIR's execution time report to stderr: the parser, the
// verifier, each pass by name, the output, the rest and the total.
// RUN: %byoc-opt %s --pass cse --pass dce --timing 2> %t.err > %t.out
// RUN: %filecheck %s < %t.err
// RUN: %filecheck %s --check-prefix=OUT < %t.out
// --time-passes (xDSL's name) is the same report.
// RUN: %byoc-opt %s --pass cse --time-passes 2>&1 >/dev/null | %filecheck %s --check-prefix=XDSL

// CHECK:      ... Execution time report ...
// CHECK:        Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// CHECK:        ----Wall Time----  ----Name----
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  Parser
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  Verifier
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  cse
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  dce
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  Output
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  Rest
// CHECK-NEXT:   {{[0-9]+\.[0-9]+}} (100.0%)  Total

// OUT-NOT: Execution time report
// OUT:     nn.relu

// XDSL: Execution time report
// XDSL: cse
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
