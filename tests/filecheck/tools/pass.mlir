// --pass NAME is repeatable and runs after -p, in command-line order.
// RUN: %byoc-opt %s --pass cse --pass dce | %filecheck %s
// RUN: %byoc-opt %s -p cse --pass dce | %filecheck %s
// RUN: %byoc-opt %s -p cse,dce | %filecheck %s
// RUN: %byoc-opt %s --pass cse | %filecheck %s --check-prefix=CSE
// RUN: %byoc-opt %s | %filecheck %s --check-prefix=NONE

/// cse merges the two identical relus; dce drops the unused exp.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = nn.relu %a : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[R]], %[[R]] : tensor<4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xf32>
// CSE-LABEL: func.func @main
// CSE-COUNT-1: nn.relu
// CSE-NOT:     nn.relu
// CSE:         nn.add
// NONE-COUNT-2: nn.relu
// NONE:         nn.exp
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  %1 = nn.relu %a : tensor<4xf32>
  %2 = nn.exp %a : tensor<4xf32>
  %3 = nn.add %0, %1 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
