// RUN: %byoc-opt %s --split-input-file -p partition | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'partition{bind-constants=false}' | %filecheck %s --check-prefix=NOBIND
// RUN: %byoc-opt %s --split-input-file -p partition,partition | %filecheck %s

/// A region becomes a private function of its target, called where it was.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = func.call @test_main_0(%x, %y, %z, %w) : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @test_main_0(%[[X:.*]]: tensor<10x10xf32>, %[[Y:.*]]: tensor<10x10xf32>, %[[Z:.*]]: tensor<10x10xf32>, %[[W:.*]]: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "test"} {
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[Y]] : tensor<10x10xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.subtract %[[A]], %[[Z]] : tensor<10x10xf32>
// CHECK-NEXT:    %[[M:.*]] = nn.multiply %[[S]], %[[W]] : tensor<10x10xf32>
// CHECK-NEXT:    func.return %[[M]] : tensor<10x10xf32>
func.func @main(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>, %z: tensor<10x10xf32>, %w: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %r = byoc.region "test" -> (tensor<10x10xf32>) {
    %a = nn.add %x, %y {byoc.target = "test"} : tensor<10x10xf32>
    %s = nn.subtract %a, %z {byoc.target = "test"} : tensor<10x10xf32>
    %m = nn.multiply %s, %w {byoc.target = "test"} : tensor<10x10xf32>
    byoc.yield %m : tensor<10x10xf32>
  }
  func.return %r : tensor<10x10xf32>
}

// -----

/// A value read twice is passed once; a value yielded twice is returned once
/// (TVM's `(%0, %0, %0)`, apache/tvm#5320): all its uses read the one result.
// CHECK-LABEL: func.func @dedup
// CHECK-NEXT:    %[[R:.*]] = func.call @test_dedup_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    nn.tanh %[[R]]
// CHECK-NEXT:    nn.sigmoid %[[R]]
// CHECK-NEXT:    nn.exp %[[R]]
// CHECK:       func.func private @test_dedup_0(%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[X]]
// CHECK-NEXT:    func.return %[[A]] : tensor<4xf32>
func.func @dedup(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r:3 = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a = nn.add %x, %x {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  %b = nn.tanh %r#0 : tensor<4xf32>
  %c = nn.sigmoid %r#1 : tensor<4xf32>
  %d = nn.exp %r#2 : tensor<4xf32>
  func.return %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// Two results, in the region's order; the call is where the region was.
// CHECK-LABEL: func.func @two_results
// CHECK-NEXT:    %[[A:[^,]*]], %[[B:.*]] = func.call @test_two_results_0(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = nn.tanh %[[A]]
// CHECK-NEXT:    func.call @test_two_results_1(%[[B]], %[[C]])
// CHECK:       func.func private @test_two_results_0
// CHECK:         func.return %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK:       func.func private @test_two_results_1
func.func @two_results(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
    %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
    %b = nn.relu %a {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a, %b : tensor<4xf32>, tensor<4xf32>
  }
  %c = nn.tanh %r#0 : tensor<4xf32>
  %d = byoc.region "test" -> (tensor<4xf32>) {
    %e = nn.add %r#1, %c {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %e : tensor<4xf32>
  }
  func.return %d : tensor<4xf32>
}

// -----

/// bind-constants (the default) copies an nn.constant into the partition (%k,
/// also read outside) or moves it there (%h, read only inside). With
/// bind-constants=false both are passed.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %[[K:.*]] = nn.constant dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-NEXT:    %[[R:.*]] = func.call @test_constants_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    nn.multiply %[[R]], %[[K]]
// CHECK:       func.func private @test_constants_0(%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C1:.*]] = nn.constant dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-NEXT:    %[[C2:.*]] = nn.constant dense<[0.5, 0.5, 0.5, 0.5]>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[C1]]
// CHECK-NEXT:    nn.multiply %[[A]], %[[C2]]
// NOBIND-LABEL: func.func @constants
// NOBIND-NEXT:    %[[K:.*]] = nn.constant dense<[1.0, 2.0, 3.0, 4.0]>
// NOBIND-NEXT:    %[[H:.*]] = nn.constant dense<[0.5, 0.5, 0.5, 0.5]>
// NOBIND-NEXT:    %[[R:.*]] = func.call @test_constants_0(%x, %[[K]], %[[H]]) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// NOBIND:       func.func private @test_constants_0(%[[X:.*]]: tensor<4xf32>, %[[C1:.*]]: tensor<4xf32>, %[[C2:.*]]: tensor<4xf32>)
// NOBIND-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[C1]]
// NOBIND-NEXT:    nn.multiply %[[A]], %[[C2]]
func.func @constants(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %k = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %h = nn.constant dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>
  %r = byoc.region "test" -> (tensor<4xf32>) {
    %a = nn.add %x, %k {byoc.target = "test"} : tensor<4xf32>
    %m = nn.multiply %a, %h {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %m : tensor<4xf32>
  }
  %o = nn.multiply %r, %k : tensor<4xf32>
  func.return %o : tensor<4xf32>
}

// -----

/// Two functions: each partition is named after its function, counted from 0.
// CHECK-LABEL: func.func @first
// CHECK-NEXT:    func.call @test_first_0(%x)
// CHECK:       func.func private @test_first_0
// CHECK-LABEL: func.func @second
// CHECK-NEXT:    func.call @test_second_0(%x)
// CHECK-NEXT:    func.call @test_second_1
// CHECK:       func.func private @test_second_0
// CHECK:       func.func private @test_second_1
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test" -> (tensor<4xf32>) {
    %a = nn.relu %x {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test" -> (tensor<4xf32>) {
    %a = nn.relu %x {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a : tensor<4xf32>
  }
  %s = byoc.region "test" -> (tensor<4xf32>) {
    %b = nn.abs %r {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %b : tensor<4xf32>
  }
  func.return %s : tensor<4xf32>
}

// -----

/// A target name that is not a C identifier: the symbol is sanitised (every other
/// character becomes `_`), the attribute keeps the raw name. Names are unique
/// across the module: @test_npu__main_0 exists already, so the next number is used.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    func.call @test_npu__main_1(%x)
// CHECK:       func.func private @test_npu__main_1(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "test-npu+"}
// CHECK:       func.func private @test_npu__main_0()
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test-npu+" -> (tensor<4xf32>) {
    %a = nn.relu %x {byoc.target = "test-npu+"} : tensor<4xf32>
    byoc.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
func.func private @test_npu__main_0() {
  func.return
}

// -----

/// Tagged ops and composites outside any region are outlined one by one.
// CHECK-LABEL: func.func @no_regions
// CHECK-NEXT:    %[[A:.*]] = func.call @test_no_regions_0(%x)
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[A]]
// CHECK-NEXT:    func.call @test_no_regions_1(%[[T]])
// CHECK:       func.func private @test_no_regions_0(%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    nn.abs %[[X]] : tensor<4xf32>
// CHECK-NEXT:    func.return
// CHECK:       func.func private @test_no_regions_1(%[[Y:.*]]: tensor<4xf32>)
// CHECK-NEXT:    byoc.composite "test.abs_relu"(%[[Y]]) : (tensor<4xf32>) -> tensor<4xf32> {
func.func @no_regions(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
  %t = nn.tanh %a : tensor<4xf32>
  %c = byoc.composite "test.abs_relu"(%t) {byoc.target = "test"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%b: tensor<4xf32>):
    %0 = nn.abs %b : tensor<4xf32>
    %1 = nn.relu %0 : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  func.return %c : tensor<4xf32>
}

// -----

/// Neither regions nor tags: the module is unchanged.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %[[A:.*]] = nn.relu %x : tensor<4xf32>
// CHECK-NEXT:    func.return %[[A]] : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  }
func.func @untouched(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
