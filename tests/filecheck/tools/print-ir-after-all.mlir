// --print-ir-after-all dumps the IR to stderr after every pass, under MLIR's
// header; stdout keeps only the final IR.
// RUN: %byoc-opt %s --pass cse --pass dce --print-ir-after-all 2> %t.err > %t.out
// RUN: %filecheck %s < %t.err
// RUN: %filecheck %s --check-prefix=OUT < %t.out

// CHECK:      // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @main
// CHECK-NEXT:     %[[R:.*]] = nn.relu %a
// CHECK-NEXT:     nn.add %[[R]], %[[R]]
// CHECK:      // -----// IR Dump After DeadCodeElimination (dce) //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @main
// CHECK-NOT:  IR Dump

// OUT-NOT: IR Dump
// OUT:     builtin.module
// OUT:     nn.add
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  %1 = nn.relu %a : tensor<4xf32>
  %2 = nn.add %0, %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
