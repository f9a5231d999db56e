// --list-targets names every target with its origin: built in, or the module, file or
// installed distribution (and version) that declares it; it needs no input.
// RUN: %byoc-opt --list-targets --load-plugin %S/Inputs/dev_target.py | %filecheck %s

// CHECK-DAG:  ccompiler {{ +}}built in (byoc {{[0-9.]+}})
// CHECK-DAG:  graphref {{ +}}built in (byoc {{[0-9.]+}})
// CHECK-DAG:  devaccel {{ +}}{{.*}}Inputs/dev_target.py (--load-plugin)
// CHECK-DAG:  test_<suffix> {{ +}}built in
