// RUN: rm -f %t.json
// RUN: %byoc-opt %s -p 'byoc{targets=ccompiler,examplejson placement=measured cache="%t.json"}' > %t.first.mlir
// RUN: %filecheck %s < %t.first.mlir
// RUN: %byoc-opt %s -p 'byoc{targets=ccompiler,examplejson placement=measured cache="%t.json"}' > %t.second.mlir
// RUN: diff %t.first.mlir %t.second.mlir
// RUN: %byoc-opt %s -p 'byoc{targets=ccompiler,examplejson placement=cost-model cache="%t.json"}' | %filecheck %s --check-prefix=COST
// RUN: not %byoc-opt %s -p 'byoc{targets=ccompiler placement=fastest}' 2>&1 | %filecheck %s --check-prefix=BAD

/// Measured placement partitions every op onto a timed target (which one depends on the
/// machine); the second run reads the cache and places the same. The cost model prices
/// each op from the cached one-op figures and may keep ops on the host.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = func.call @{{(ccompiler|examplejson)}}_main_0(%x, %w)
// CHECK:         func.return
// CHECK:       func.func private @{{(ccompiler|examplejson)}}_main_0
// CHECK-SAME:      byoc.compiler = "{{(ccompiler|examplejson)}}"
// CHECK:         nn.dense
// COST-LABEL: func.func @main
// COST:         nn.dense
// COST:         func.return
// BAD: placement 'fastest' is not known (choose one of: priority, measure, cost-model)
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = nn.dense %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = nn.relu %0 : tensor<8x16xf32>
  %2 = nn.add %1, %x : tensor<8x16xf32>
  func.return %2 : tensor<8x16xf32>
}
