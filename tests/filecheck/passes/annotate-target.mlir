// RUN: %byoc-opt %s --split-input-file -p 'annotate-target{targets=test_a,test_b ops="test_a:add","test_a:relu","test_b:relu","test_b:tanh"}' | %filecheck %s --check-prefix=AB
// RUN: %byoc-opt %s --split-input-file -p 'annotate-target{targets=test_b,test_a ops="test_a:add","test_a:relu","test_b:relu","test_b:tanh"}' | %filecheck %s --check-prefix=BA
// RUN: %byoc-opt %s --split-input-file -p 'annotate-target{targets=test_a,test_b ops="test_a:add","test_a:relu","test_b:relu","test_b:tanh"},annotate-target{targets=test_a,test_b ops="test_a:add","test_a:relu","test_b:relu","test_b:tanh"}' | %filecheck %s --check-prefix=AB
// RUN: %byoc-opt %s --split-input-file -p 'annotate-target{targets=test_a ops=add,relu},annotate-target{targets=test_b ops=relu,tanh}' | %filecheck %s --check-prefix=AB
// RUN: %byoc-opt %s --split-input-file -p 'annotate-target{targets=ccompiler}' | %filecheck %s --check-prefix=CC

/// Two targets with overlapping support (both take relu): list order is priority.
/// Annotating twice changes nothing, and {targets=test_a} then {targets=test_b}
/// equals {targets=test_a,test_b} (RUN lines 3 and 4 check with the same lines).
// AB-LABEL: func.func @priority
// AB-NEXT:    nn.add %x, %x {byoc.target = "test_a"}
// AB-NEXT:    nn.relu %{{.*}} {byoc.target = "test_a"}
// AB-NEXT:    nn.tanh %{{.*}} {byoc.target = "test_b"}
// AB-NEXT:    nn.sigmoid %{{.*}} : tensor<4xf32>
// BA-LABEL: func.func @priority
// BA-NEXT:    nn.add %x, %x {byoc.target = "test_a"}
// BA-NEXT:    nn.relu %{{.*}} {byoc.target = "test_b"}
// BA-NEXT:    nn.tanh %{{.*}} {byoc.target = "test_b"}
// BA-NEXT:    nn.sigmoid %{{.*}} : tensor<4xf32>
func.func @priority(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32>
  %c = nn.tanh %b : tensor<4xf32>
  %d = nn.sigmoid %c : tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

/// An op that already has a target keeps it, whatever the priority.
// AB-LABEL: func.func @keeps_existing
// AB-NEXT:    nn.relu %x {byoc.target = "test_b"}
// BA-LABEL: func.func @keeps_existing
// BA-NEXT:    nn.relu %x {byoc.target = "test_b"}
func.func @keeps_existing(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x {byoc.target = "test_b"} : tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

/// A composite is tagged when its name's prefix is listed; constants never are;
/// partitions (functions with byoc.compiler) are left alone.
// AB-LABEL: func.func @composites_and_constants
// AB-NEXT:    nn.constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
// AB-NEXT:    byoc.composite "test_b.abs_relu"(%x) {byoc.target = "test_b"}
// AB:         byoc.composite "other.abs_relu"(%x) : (tensor<4xf32>)
// AB-LABEL: func.func private @already_partitioned
// AB-NEXT:    nn.relu %x : tensor<4xf32>
func.func @composites_and_constants(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %k = nn.constant dense<1.0> : tensor<4xf32>
  %c = byoc.composite "test_b.abs_relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %0 = nn.abs %a : tensor<4xf32>
    %1 = nn.relu %0 : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  %d = byoc.composite "other.abs_relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %0 = nn.abs %a : tensor<4xf32>
    %1 = nn.relu %0 : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  func.return %k, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func private @already_partitioned(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "test_a"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

/// A registered target's predicates see the typed op: ccompiler takes f32 and i32
/// adds, not i16 ones.
// CC-LABEL: func.func @predicates
// CC-NEXT:    nn.add %x, %x {byoc.target = "ccompiler"} : tensor<4xf32>
// CC-NEXT:    nn.add %i, %i {byoc.target = "ccompiler"} : tensor<4xi32>
// CC-NEXT:    nn.add %l, %l : tensor<4xi16>
func.func @predicates(%x: tensor<4xf32>, %i: tensor<4xi32>, %l: tensor<4xi16>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xi16>) {
  %a = nn.add %x, %x : tensor<4xf32>
  %b = nn.add %i, %i : tensor<4xi32>
  %c = nn.add %l, %l : tensor<4xi16>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xi32>, tensor<4xi16>
}
