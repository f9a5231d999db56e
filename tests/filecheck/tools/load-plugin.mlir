// --load-plugin loads a target under development (a module, or a .py file, whose
// `byoc_targets` names it) before the pipeline runs; a plugin that cannot be loaded is
// one error line and exit code 1.
// RUN: %byoc-opt %s --load-plugin %S/Inputs/dev_target.py -p 'byoc{targets=devaccel}' | %filecheck %s
// RUN: not %byoc-opt %s --load-plugin %S/Inputs/no_such_plugin.py 2>&1 | %filecheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @main
// CHECK:       func.call @devaccel_main_0
// CHECK:       func.func private @devaccel_main_0({{.*}}) {{.*}} attributes {byoc.compiler = "devaccel"}
// CHECK-NEXT:    nn.relu

// MISSING: byoc-opt: error: target plugin {{.*}}no_such_plugin.py (--load-plugin) failed: FileNotFoundError: no such file: {{.*}}no_such_plugin.py
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
