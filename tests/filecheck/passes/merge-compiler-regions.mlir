// RUN: %byoc-opt %s --split-input-file -p merge-compiler-regions | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p merge-compiler-regions,merge-compiler-regions | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'merge-compiler-regions{min-ops=2}' | %filecheck %s --check-prefix=MIN

/// The seed chain (add -> subtract -> multiply, all tagged) becomes one region.
// CHECK-LABEL: func.func @seed_chain
// CHECK-NEXT:    %[[R:.*]] = byoc.region "test" -> (tensor<10x10xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.add %x, %y {byoc.target = "test"}
// CHECK-NEXT:      %[[S:.*]] = nn.subtract %[[A]], %z {byoc.target = "test"}
// CHECK-NEXT:      %[[M:.*]] = nn.multiply %[[S]], %w {byoc.target = "test"}
// CHECK-NEXT:      byoc.yield %[[M]] : tensor<10x10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @seed_chain(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>, %z: tensor<10x10xf32>, %w: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %a = nn.add %x, %y {byoc.target = "test"} : tensor<10x10xf32>
  %s = nn.subtract %a, %z {byoc.target = "test"} : tensor<10x10xf32>
  %m = nn.multiply %s, %w {byoc.target = "test"} : tensor<10x10xf32>
  func.return %m : tensor<10x10xf32>
}

// -----

/// An untagged op in the middle of a chain splits it into two regions around it.
// CHECK-LABEL: func.func @unsupported_in_the_middle
// CHECK-NEXT:    %[[R0:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.add %x, %x
// CHECK-NEXT:      byoc.yield %[[A]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[R0]] : tensor<4xf32>
// CHECK-NEXT:    %[[R1:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[M:.*]] = nn.multiply %[[T]], %x
// CHECK-NEXT:      byoc.yield %[[M]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R1]]
func.func @unsupported_in_the_middle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x {byoc.target = "test"} : tensor<4xf32>
  %t = nn.tanh %a : tensor<4xf32>
  %m = nn.multiply %t, %x {byoc.target = "test"} : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// Diamond: abs and relu form one region with two results (tanh reads abs);
/// add cannot join it, since abs -> tanh -> add would leave and re-enter.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %[[RA:[^,]*]], %[[RB:.*]] = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.abs %x
// CHECK-NEXT:      %[[B:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      byoc.yield %[[A]], %[[B]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:.*]] = nn.tanh %[[RA]]
// CHECK-NEXT:    %[[D:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[E:.*]] = nn.add %[[RB]], %[[C]]
// CHECK-NEXT:      byoc.yield %[[E]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[D]]
func.func @diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
  %1 = nn.relu %0 {byoc.target = "test"} : tensor<4xf32>
  %2 = nn.tanh %0 : tensor<4xf32>
  %3 = nn.add %1, %2 {byoc.target = "test"} : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

/// One value read by three consumers outside the region is yielded once.
// CHECK-LABEL: func.func @three_consumers
// CHECK-NEXT:    %[[R:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.abs %x
// CHECK-NEXT:      byoc.yield %[[A]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    nn.tanh %[[R]]
// CHECK-NEXT:    nn.sigmoid %[[R]]
// CHECK-NEXT:    nn.exp %[[R]]
func.func @three_consumers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
  %b = nn.tanh %a : tensor<4xf32>
  %c = nn.sigmoid %a : tensor<4xf32>
  %d = nn.exp %a : tensor<4xf32>
  func.return %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// TVM's test_multi_node_compiler shape, a = x + y on the host, with subtract,
/// log and multiply tagged: one region {subtract, log, multiply}.
// CHECK-LABEL: func.func @host_input_all_tagged
// CHECK-NEXT:    %[[A:.*]] = nn.add %x, %y
// CHECK-NEXT:    %[[R:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[S:.*]] = nn.subtract %[[A]], %z
// CHECK-NEXT:      %[[L:.*]] = nn.log %[[A]]
// CHECK-NEXT:      %[[M:.*]] = nn.multiply %[[L]], %[[S]]
// CHECK-NEXT:      byoc.yield %[[M]]
// CHECK-NEXT:    }
func.func @host_input_all_tagged(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %y : tensor<4xf32>
  %s = nn.subtract %a, %z {byoc.target = "test"} : tensor<4xf32>
  %l = nn.log %a {byoc.target = "test"} : tensor<4xf32>
  %m = nn.multiply %l, %s {byoc.target = "test"} : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// The same graph with only subtract and log tagged: TVM made two partitions
/// (its FIXME: "they should be merged to one due to the common input"). They are
/// siblings with no path between them, so they merge: one region, two results.
// CHECK-LABEL: func.func @host_input_siblings
// CHECK-NEXT:    %[[A:.*]] = nn.add %x, %y
// CHECK-NEXT:    %[[RS:[^,]*]], %[[RL:.*]] = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[S:.*]] = nn.subtract %[[A]], %z
// CHECK-NEXT:      %[[L:.*]] = nn.log %[[A]]
// CHECK-NEXT:      byoc.yield %[[S]], %[[L]]
// CHECK-NEXT:    }
// CHECK-NEXT:    nn.multiply %[[RL]], %[[RS]]
func.func @host_input_siblings(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %y : tensor<4xf32>
  %s = nn.subtract %a, %z {byoc.target = "test"} : tensor<4xf32>
  %l = nn.log %a {byoc.target = "test"} : tensor<4xf32>
  %m = nn.multiply %l, %s : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// Three branches from one input, two of them tagged chains: one region (sibling merge).
// CHECK-LABEL: func.func @three_branches
// CHECK-NEXT:    %{{.*}}, %{{.*}} = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.relu %x
// CHECK-NEXT:      %[[B:.*]] = nn.abs %[[A]]
// CHECK-NEXT:      %[[C:.*]] = nn.exp %x
// CHECK-NEXT:      %[[D:.*]] = nn.log %[[C]]
// CHECK-NEXT:      byoc.yield %[[B]], %[[D]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[E:.*]] = nn.sigmoid %x
func.func @three_branches(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = nn.relu %x {byoc.target = "test"} : tensor<4xf32>
  %b = nn.abs %a {byoc.target = "test"} : tensor<4xf32>
  %c = nn.exp %x {byoc.target = "test"} : tensor<4xf32>
  %d = nn.log %c {byoc.target = "test"} : tensor<4xf32>
  %e = nn.sigmoid %x : tensor<4xf32>
  func.return %b, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// Two targets whose ops cross (relu -> tanh, sigmoid -> abs): one region per
/// target would make the two depend on each other. The two test_b ops merge
/// (they are independent); then relu -> tanh, sigmoid -> abs runs through that
/// region, so the test_a ops stay in two regions.
// CHECK-LABEL: func.func @two_targets_no_cycle
// CHECK-NEXT:    %[[A:.*]] = byoc.region "test_a" -> (tensor<4xf32>) {
// CHECK-NEXT:      nn.relu %x
// CHECK:         %[[B:[^,]*]], %[[C:.*]] = byoc.region "test_b" -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      nn.tanh %[[A]]
// CHECK-NEXT:      nn.sigmoid %y
// CHECK:         %[[D:.*]] = byoc.region "test_a" -> (tensor<4xf32>) {
// CHECK-NEXT:      nn.abs %[[C]]
func.func @two_targets_no_cycle(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = nn.relu %x {byoc.target = "test_a"} : tensor<4xf32>
  %b = nn.tanh %a {byoc.target = "test_b"} : tensor<4xf32>
  %c = nn.sigmoid %y {byoc.target = "test_b"} : tensor<4xf32>
  %d = nn.abs %c {byoc.target = "test_a"} : tensor<4xf32>
  func.return %b, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

/// A tagged composite is one op of its region.
// CHECK-LABEL: func.func @composite_in_region
// CHECK-NEXT:    %[[R:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[C:.*]] = byoc.composite "test.abs_relu"(%x)
// CHECK:           %[[T:.*]] = nn.exp %[[C]]
// CHECK-NEXT:      byoc.yield %[[T]]
func.func @composite_in_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = byoc.composite "test.abs_relu"(%x) {byoc.target = "test"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %0 = nn.abs %a : tensor<4xf32>
    %1 = nn.relu %0 : tensor<4xf32>
    byoc.yield %1 : tensor<4xf32>
  }
  %e = nn.exp %c {byoc.target = "test"} : tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

/// Existing regions are ops of their target: a region that can grow is merged
/// with its neighbours and flattened.
// CHECK-LABEL: func.func @existing_region_grows
// CHECK-NEXT:    %[[R:.*]] = byoc.region "test" -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[A:.*]] = nn.abs %x
// CHECK-NEXT:      %[[B:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      byoc.yield %[[B]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @existing_region_grows(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test" -> (tensor<4xf32>) {
    %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a : tensor<4xf32>
  }
  %b = nn.relu %r {byoc.target = "test"} : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

/// min-ops=2: a region with fewer than two non-trivial ops goes back to the host
/// and loses its tags (reshape is trivial). The default, min-ops=0, keeps every region.
// CHECK-LABEL: func.func @min_ops
// CHECK-COUNT-3: byoc.region
// MIN-LABEL: func.func @min_ops
// MIN-NEXT:    byoc.region "test" -> (tensor<4xf32>) {
// MIN-NEXT:      nn.abs %x {byoc.target = "test"}
// MIN-NEXT:      nn.relu
// MIN:         nn.tanh
// MIN-NEXT:    %[[E:.*]] = nn.exp %{{.*}} : tensor<4xf32>
// MIN-NEXT:    %[[T:.*]] = nn.sigmoid %[[E]]
// MIN-NEXT:    nn.reshape %[[T]] {newshape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
// MIN-NEXT:    func.return
func.func @min_ops(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
  %b = nn.relu %a {byoc.target = "test"} : tensor<4xf32>
  %c = nn.tanh %b : tensor<4xf32>
  %d = nn.exp %c {byoc.target = "test"} : tensor<4xf32>
  %e = nn.sigmoid %d : tensor<4xf32>
  %f = nn.reshape %e {byoc.target = "test", newshape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %f : tensor<2x2xf32>
}

// -----

/// min-ops=2 also unwraps an existing region that is too small: its body goes
/// back in place, untagged.
// MIN-LABEL: func.func @small_existing_region
// MIN-NEXT:    %[[A:.*]] = nn.relu %x : tensor<4xf32>
// MIN-NEXT:    %[[B:.*]] = nn.tanh %[[A]] : tensor<4xf32>
// MIN-NEXT:    func.return %[[B]]
func.func @small_existing_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = byoc.region "test" -> (tensor<4xf32>) {
    %a = nn.relu %x {byoc.target = "test"} : tensor<4xf32>
    byoc.yield %a : tensor<4xf32>
  }
  %b = nn.tanh %r : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

/// Nothing tagged: nothing changes.
// CHECK-LABEL: func.func @nothing_tagged
// CHECK-NEXT:    nn.relu %x
// CHECK-NEXT:    func.return
func.func @nothing_tagged(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
