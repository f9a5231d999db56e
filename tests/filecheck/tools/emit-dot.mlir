// -t dot draws func.func @main as a Graphviz graph: arguments are ovals, ops
// are boxes labelled with name and result type, edges follow SSA uses, ops
// with byoc.target are filled with their target's colour (colours go to the
// targets in sorted order: cblas, ccompiler, dnnl), each byoc.region is a cluster labelled with its
// target, and each call of a partition function (byoc.compiler) is a cluster
// holding the callee's ops, wired to the caller's values.
// RUN: %byoc-opt %s -t dot | %filecheck %s
// The output depends only on the IR.
// RUN: %byoc-opt %s -t dot > %t.1 && %byoc-opt %s -t dot > %t.2 && diff %t.1 %t.2

// CHECK:      digraph "main" {
// CHECK-NEXT:   rankdir=TB;
// CHECK-NEXT:   node [shape=box, style="rounded,filled", fillcolor="white", fontname="Helvetica", fontsize=10];
// CHECK-NEXT:   edge [fontname="Helvetica", fontsize=9];
// CHECK-NEXT:   [[A:n[0-9]+]] [label="%a\ntensor<10x10xf32>", shape=oval, fillcolor="#e0e0e0"];
// CHECK-NEXT:   [[B:n[0-9]+]] [label="%b\ntensor<10x10xf32>", shape=oval, fillcolor="#e0e0e0"];
// CHECK-NEXT:   [[W:n[0-9]+]] [label="nn.constant\ntensor<10x10xf32>"];
// CHECK-NEXT:   subgraph cluster_call_0 {
// CHECK-NEXT:     label="ccompiler: @ccompiler_main_0";
// CHECK-NEXT:     style="rounded,dashed";
// CHECK-NEXT:     color="#fdb462";
// CHECK-NEXT:     [[ADD:n[0-9]+]] [label="nn.add\ntensor<10x10xf32>", fillcolor="#fdb462"];
// CHECK-NEXT:     [[MUL:n[0-9]+]] [label="nn.multiply\ntensor<10x10xf32>", fillcolor="#fdb462"];
// CHECK-NEXT:   }
// CHECK-NEXT:   subgraph cluster_region_0 {
// CHECK-NEXT:     label="dnnl";
// CHECK-NEXT:     style="rounded,dashed";
// CHECK-NEXT:     color="#bebada";
// CHECK-NEXT:     [[RELU:n[0-9]+]] [label="nn.relu\ntensor<10x10xf32>", fillcolor="#bebada"];
// CHECK-NEXT:     [[ABS:n[0-9]+]] [label="nn.abs\ntensor<10x10xf32>", fillcolor="#bebada"];
// CHECK-NEXT:   }
// CHECK-NEXT:   [[SUM:n[0-9]+]] [label="nn.add\ntensor<10x10xf32>"];
// CHECK-NEXT:   [[COMP:n[0-9]+]] [label="byoc.composite \"cblas.dense\"\ntensor<10x10xf32>", peripheries=2, fillcolor="#8dd3c7"];
// CHECK-NEXT:   [[TANH:n[0-9]+]] [label="nn.tanh\ntensor<10x10xf32>", fillcolor="#fdb462"];
// CHECK-NEXT:   [[CALL:n[0-9]+]] [label="func.call @helper\ntensor<10x10xf32>"];
// CHECK-NEXT:   [[RET:n[0-9]+]] [label="return", shape=oval];
// CHECK-NEXT:   [[A]] -> [[ADD]];
// CHECK-NEXT:   [[W]] -> [[ADD]];
// CHECK-NEXT:   [[ADD]] -> [[MUL]];
// CHECK-NEXT:   [[B]] -> [[MUL]];
// CHECK-NEXT:   [[MUL]] -> [[RELU]];
// CHECK-NEXT:   [[RELU]] -> [[ABS]];
// CHECK-NEXT:   [[RELU]] -> [[SUM]];
// CHECK-NEXT:   [[ABS]] -> [[SUM]];
// CHECK-NEXT:   [[SUM]] -> [[COMP]];
// CHECK-NEXT:   [[B]] -> [[COMP]];
// CHECK-NEXT:   [[COMP]] -> [[TANH]];
// CHECK-NEXT:   [[TANH]] -> [[CALL]];
// CHECK-NEXT:   [[CALL]] -> [[RET]];
// CHECK-NEXT: }
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %w = nn.constant dense<1.0> : tensor<10x10xf32>
  %0 = func.call @ccompiler_main_0(%a, %w, %b) : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %r:2 = byoc.region "dnnl" -> (tensor<10x10xf32>, tensor<10x10xf32>) {
    %1 = nn.relu %0 {byoc.target = "dnnl"} : tensor<10x10xf32>
    %2 = nn.abs %1 {byoc.target = "dnnl"} : tensor<10x10xf32>
    byoc.yield %1, %2 : tensor<10x10xf32>, tensor<10x10xf32>
  }
  %3 = nn.add %r#0, %r#1 : tensor<10x10xf32>
  %4 = byoc.composite "cblas.dense"(%3, %b) {byoc.target = "cblas"} : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32> {
  ^bb0(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>):
    %5 = nn.dense %x, %y : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
    byoc.yield %5 : tensor<10x10xf32>
  }
  %6 = nn.tanh %4 {byoc.target = "ccompiler"} : tensor<10x10xf32>
  %7 = func.call @helper(%6) : (tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %7 : tensor<10x10xf32>
}
func.func private @ccompiler_main_0(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>, %z: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.add %x, %y : tensor<10x10xf32>
  %1 = nn.multiply %0, %z : tensor<10x10xf32>
  func.return %1 : tensor<10x10xf32>
}
func.func private @helper(%x: tensor<10x10xf32>) -> tensor<10x10xf32> {
  func.return %x : tensor<10x10xf32>
}
