// byoc.region, byoc.composite and byoc.yield round-trip in the custom and the
// generic form.
// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s > %t.custom && %byoc-opt %t.custom --print-op-generic > %t.generic && %byoc-opt %t.generic > %t.back && diff %t.custom %t.back
// RUN: %byoc-opt %s --print-op-generic | %filecheck %s --check-prefix=GENERIC

/// A region uses outside values directly; its results are what it yields.
// CHECK-LABEL: func.func @region
// CHECK:      %[[R0:[^ ,]+]], %[[R1:[^ ,]+]] = byoc.region "ccompiler" -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %[[A:.*]] = nn.abs %x {byoc.target = "ccompiler"} : tensor<4xf32>
// CHECK-NEXT:   %[[B:.*]] = nn.relu %[[A]] {byoc.target = "ccompiler"} : tensor<4xf32>
// CHECK-NEXT:   byoc.yield %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = nn.add %[[R0]], %[[R1]] : tensor<4xf32>
// GENERIC-LABEL: sym_name = "region"
// GENERIC: "byoc.region"() <{target = "ccompiler"}> ({
// GENERIC: "byoc.yield"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>) -> ()
// GENERIC: }) : () -> (tensor<4xf32>, tensor<4xf32>)
func.func @region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = byoc.region "ccompiler" -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = nn.abs %x {byoc.target = "ccompiler"} : tensor<4xf32>
    %1 = nn.relu %0 {byoc.target = "ccompiler"} : tensor<4xf32>
    byoc.yield %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
  %2 = nn.add %r#0, %r#1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

/// A region with no results and a discardable attribute.
// CHECK-LABEL: func.func @region_no_results
// CHECK:      byoc.region "dnnl" -> () attributes {note = 1 : i64} {
// CHECK-NEXT:   nn.relu %x : tensor<4xf32>
// CHECK-NEXT:   byoc.yield
// CHECK-NEXT: }
func.func @region_no_results(%x: tensor<4xf32>) {
  byoc.region "dnnl" -> () attributes {note = 1 : i64} {
    %0 = nn.relu %x : tensor<4xf32>
    byoc.yield
  }
  func.return
}

/// A composite is isolated from above: its body reads only its block arguments.
// CHECK-LABEL: func.func @composite
// CHECK:      %[[C:.*]] = byoc.composite "cblas.dense_bias_relu"(%x, %w, %b) {byoc.target = "cblas"} : (tensor<1x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<1x4xf32> {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<1x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:   %[[D:.*]] = nn.dense %[[X]], %[[W]] : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:   %[[BA:.*]] = nn.bias_add %[[D]], %[[B]] : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:   %[[Y:.*]] = nn.relu %[[BA]] : tensor<1x4xf32>
// CHECK-NEXT:   byoc.yield %[[Y]] : tensor<1x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[C]] : tensor<1x4xf32>
// GENERIC-LABEL: sym_name = "composite"
// GENERIC: "byoc.composite"(%x, %w, %b) <{composite = "cblas.dense_bias_relu"}> ({
// GENERIC: }) {byoc.target = "cblas"} : (tensor<1x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<1x4xf32>
func.func @composite(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<1x4xf32> {
  %c = byoc.composite "cblas.dense_bias_relu"(%x, %w, %b) {byoc.target = "cblas"} : (tensor<1x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<1x4xf32> {
  ^bb0(%a: tensor<1x8xf32>, %aw: tensor<4x8xf32>, %ab: tensor<4xf32>):
    %0 = nn.dense %a, %aw : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
    %1 = nn.bias_add %0, %ab : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    %2 = nn.relu %1 : tensor<1x4xf32>
    byoc.yield %2 : tensor<1x4xf32>
  }
  func.return %c : tensor<1x4xf32>
}

/// A composite with two results, inside a region of its target.
// CHECK-LABEL: func.func @composite_in_region
// CHECK:      byoc.region "ccompiler" -> (tensor<2xf32>) {
// CHECK-NEXT:   %[[C0:[^ ,]+]], %[[C1:[^ ,]+]] = byoc.composite "ccompiler.add_sub"(%x, %y) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
// CHECK-NEXT:   ^{{.*}}(%{{.*}}: tensor<2xf32>, %{{.*}}: tensor<2xf32>):
// CHECK:          byoc.yield %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %{{.*}} = nn.multiply %[[C0]], %[[C1]] : tensor<2xf32>
func.func @composite_in_region(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %r = byoc.region "ccompiler" -> (tensor<2xf32>) {
    %c:2 = byoc.composite "ccompiler.add_sub"(%x, %y) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
      %0 = nn.add %a, %b : tensor<2xf32>
      %1 = nn.subtract %a, %b : tensor<2xf32>
      byoc.yield %0, %1 : tensor<2xf32>, tensor<2xf32>
    }
    %2 = nn.multiply %c#0, %c#1 : tensor<2xf32>
    byoc.yield %2 : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}
