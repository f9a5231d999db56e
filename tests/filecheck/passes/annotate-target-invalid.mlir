// RUN: not %byoc-opt %s -p 'annotate-target{targets=test,npu}' 2>&1 | %filecheck %s --check-prefix=UNKNOWN
// RUN: not %byoc-opt %s -p 'annotate-target{targets=test ops=relux}' 2>&1 | %filecheck %s --check-prefix=OP
// RUN: not %byoc-opt %s -p 'annotate-target{targets=ccompiler ops=add}' 2>&1 | %filecheck %s --check-prefix=NOTEST
// RUN: not %byoc-opt %s -p 'annotate-target{targets=test_a ops="test_b:add"}' 2>&1 | %filecheck %s --check-prefix=SCOPE
// RUN: not %byoc-opt %s -p 'annotate-target{targets=test,test}' 2>&1 | %filecheck %s --check-prefix=TWICE

/// Option errors point into the pass pipeline and name the fix.
// UNKNOWN: <pass-pipeline>:1:1: error: invalid options for pass 'annotate-target': unknown target 'npu'; known targets: cblas, ccompiler, dnnl, examplejson, graphref, test, test_<suffix>
// OP: error: invalid options for pass 'annotate-target': 'ops' names an unknown op 'relux'; did you mean 'nn.relu'
// NOTEST: error: invalid options for pass 'annotate-target': the 'ops' option chooses the support of test targets (test, test_<x>), and none is among the targets (ccompiler)
// SCOPE: error: invalid options for pass 'annotate-target': 'ops' entry 'test_b:add' names 'test_b', which is not a test target of this run (test targets: test_a)
// TWICE: error: invalid options for pass 'annotate-target': target 'test' is listed twice
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.add %x, %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
