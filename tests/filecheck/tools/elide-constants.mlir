// --elide-constants=N prints nn.constant payloads of more than N elements as
// dense_resource<__elided__>, for reading; such text is rejected when parsed.
// RUN: %byoc-opt %s --elide-constants=4 | %filecheck %s
// RUN: %byoc-opt %s | %filecheck %s --check-prefix=FULL
// RUN: %byoc-opt %s --elide-constants=4 > %t.elided
// RUN: not %byoc-opt %t.elided 2>&1 | %filecheck %s --check-prefix=REPARSE

// CHECK:      nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
// CHECK-NEXT: nn.constant dense_resource<__elided__> : tensor<5xf32>
// FULL:       nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
// FULL-NEXT:  nn.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
// REPARSE:    error: an elided constant (dense_resource<__elided__>) cannot be read back; print the IR without --elide-constants
func.func @main() -> (tensor<4xf32>, tensor<5xf32>) {
  %0 = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %1 = nn.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<5xf32>
}
