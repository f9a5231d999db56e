// RUN: not %byoc-opt %s -p 'merge-composite{targets=npu}' 2>&1 | %filecheck %s --check-prefix=TARGET
// RUN: not %byoc-opt %s -p 'merge-composite{targets=test patterns=conv_relu}' 2>&1 | %filecheck %s --check-prefix=PATTERN
// RUN: not %byoc-opt %s -p 'merge-composite{targets=test patterns="test_b.abs_relu"}' 2>&1 | %filecheck %s --check-prefix=SCOPE

/// Unknown targets and pattern names are errors listing what exists.
// TARGET: error: invalid options for pass 'merge-composite': unknown target 'npu'; known targets: cblas, ccompiler, dnnl, examplejson, graphref, test, test_<suffix>
// PATTERN: error: invalid options for pass 'merge-composite': unknown pattern 'conv_relu'; known patterns: test.add_abs_relu, test.add_abs, test.abs_relu,
// SCOPE: error: invalid options for pass 'merge-composite': pattern 'test_b.abs_relu' names target 'test_b', which is not among the targets (test)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
