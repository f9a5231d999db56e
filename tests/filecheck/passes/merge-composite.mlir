// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=add_abs_relu,add_abs,abs_relu}' | %filecheck %s --check-prefix=ABC
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=add_abs,abs_relu,add_abs_relu}' | %filecheck %s --check-prefix=BCA
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=abs_relu,add_abs_relu,add_abs}' | %filecheck %s --check-prefix=CAB
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=conv2d_bias_relu,conv2d_relu_groups1,mul_clip_add,dense_bias,add_const_relu,relu_or_tanh_of_input}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=conv2d_bias_relu,conv2d_relu_groups1,mul_clip_add,dense_bias,add_const_relu,relu_or_tanh_of_input},merge-composite{targets=test patterns=conv2d_bias_relu,conv2d_relu_groups1,mul_clip_add,dense_bias,add_const_relu,relu_or_tanh_of_input}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=conv2d_relu_groups1,conv2d_add_relu extra-results=true}' | %filecheck %s --check-prefix=EXTRA
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=test patterns=abs_relu extra-results=true}' | %filecheck %s --check-prefix=MOVED

/// Table order decides overlaps (TVM's test_merge_order): on add -> abs -> relu,
/// A = add_abs_relu, B = add_abs, C = abs_relu; the first entry applied wins.
// ABC-LABEL: func.func @merge_order
// ABC-NEXT:    %[[R:.*]] = byoc.composite "test.add_abs_relu"(%x, %y)
// ABC:         func.return %[[R]]
// BCA-LABEL: func.func @merge_order
// BCA-NEXT:    %[[B:.*]] = byoc.composite "test.add_abs"(%x, %y)
// BCA:         %[[R:.*]] = nn.relu %[[B]]
// BCA-NEXT:    func.return %[[R]]
// CAB-LABEL: func.func @merge_order
// CAB-NEXT:    %[[A:.*]] = nn.add %x, %y
// CAB-NEXT:    %[[R:.*]] = byoc.composite "test.abs_relu"(%[[A]])
// CAB:         func.return %[[R]]
func.func @merge_order(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %y : tensor<4xf32>
  %b = nn.abs %a : tensor<4xf32>
  %c = nn.relu %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

/// An optional tail: conv2d -> bias_add [-> relu]; with the relu present it is
/// part of the composite (the body is matched from the relu).
// CHECK-LABEL: func.func @optional_tail_present
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "test.conv2d_bias_relu"(%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %[[X]], %[[W]]
// CHECK-NEXT:      %[[D:.*]] = nn.bias_add %[[C]], %[[B]]
// CHECK-NEXT:      %[[E:.*]] = nn.relu %[[D]]
// CHECK-NEXT:      byoc.yield %[[E]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @optional_tail_present(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %c = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %d = nn.bias_add %c, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e = nn.relu %d : tensor<1x4x6x6xf32>
  func.return %e : tensor<1x4x6x6xf32>
}

// -----

/// The same pattern without the tail: conv2d -> bias_add is the composite, the tanh stays.
// CHECK-LABEL: func.func @optional_tail_absent
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "test.conv2d_bias_relu"(%x, %w, %b)
// CHECK:           nn.bias_add
// CHECK-NEXT:      byoc.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    nn.tanh %[[R]]
func.func @optional_tail_absent(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %c = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %d = nn.bias_add %c, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e = nn.tanh %d : tensor<1x4x6x6xf32>
  func.return %e : tensor<1x4x6x6xf32>
}

// -----

/// A check callback that rejects by an attribute: conv2d_relu_groups1 takes only
/// groups == 1, so the grouped conv stays as it is and the plain one is merged.
// CHECK-LABEL: func.func @check_rejects_groups
// CHECK-NEXT:    %[[G:.*]] = nn.conv2d %x, %wg {groups = 2 : i64}
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[G]]
// CHECK-NEXT:    %[[P:.*]] = byoc.composite "test.conv2d_relu_groups1"(%x, %w)
func.func @check_rejects_groups(%x: tensor<1x4x8x8xf32>, %wg: tensor<4x2x3x3xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %g = nn.conv2d %x, %wg {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = nn.relu %g : tensor<1x4x6x6xf32>
  %p = nn.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %q = nn.relu %p : tensor<1x4x6x6xf32>
  func.return %r, %q : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

/// multiply(x, clip(add(x, c))): the one node x must be the same value twice.
/// It matches here, and the constant c moves into the composite.
// CHECK-LABEL: func.func @same_value_twice
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "test.mul_clip_add"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[C:.*]] = nn.constant dense<[1.0, 1.0, 1.0, 1.0]>
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[X]], %[[C]]
// CHECK-NEXT:      %[[K:.*]] = nn.clip %[[A]]
// CHECK-NEXT:      %[[M:.*]] = nn.multiply %[[X]], %[[K]]
// CHECK-NEXT:      byoc.yield %[[M]]
func.func @same_value_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = nn.constant dense<1.0> : tensor<4xf32>
  %a = nn.add %x, %one : tensor<4xf32>
  %k = nn.clip %a {a_min = 0.0 : f64, a_max = 6.0 : f64} : tensor<4xf32>
  %m = nn.multiply %x, %k : tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

/// multiply(x, clip(x)) lacks the add, and multiply(y, clip(add(x, c))) reads two
/// different values where the pattern has one node: neither matches (apache/tvm#5552).
// CHECK-LABEL: func.func @same_value_twice_no_match
// CHECK-NOT:     byoc.composite
// CHECK:         func.return
func.func @same_value_twice_no_match(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %k = nn.clip %x {a_min = 0.0 : f64, a_max = 6.0 : f64} : tensor<4xf32>
  %m = nn.multiply %x, %k : tensor<4xf32>
  %one = nn.constant dense<1.0> : tensor<4xf32>
  %a = nn.add %x, %one : tensor<4xf32>
  %j = nn.clip %a {a_min = 0.0 : f64, a_max = 6.0 : f64} : tensor<4xf32>
  %n = nn.multiply %y, %j : tensor<4xf32>
  func.return %m, %n : tensor<4xf32>, tensor<4xf32>
}

// -----

/// A conv whose output also feeds an op outside the match is not merged (TVM's
/// test_partition_overused). With extra-results=true the conv output becomes a
/// second result of the composite, since that closes no cycle.
// CHECK-LABEL: func.func @overused
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[C]]
// CHECK-NEXT:    nn.add %[[R]], %[[C]]
// EXTRA-LABEL: func.func @overused
// EXTRA-NEXT:    %[[R:[^,]*]], %[[C:.*]] = byoc.composite "test.conv2d_relu_groups1"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
// EXTRA:           byoc.yield %{{.*}}, %{{.*}} : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
// EXTRA-NEXT:    }
// EXTRA-NEXT:    nn.add %[[R]], %[[C]]
func.func @overused(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = nn.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = nn.relu %c : tensor<1x4x6x6xf32>
  %o = nn.add %r, %c : tensor<1x4x6x6xf32>
  func.return %o : tensor<1x4x6x6xf32>
}

// -----

/// With extra-results=true, an outside use that sits before the root moves after
/// the composite. In @extra_result_cycle, conv2d_add_relu would need tanh(conv)
/// as an operand while tanh needs the conv inside: a cycle, so no composite.
// EXTRA-LABEL: func.func @extra_result_order
// EXTRA-NEXT:    %[[R:[^,]*]], %[[C:.*]] = byoc.composite "test.conv2d_relu_groups1"(%x, %w)
// EXTRA:         nn.tanh %[[C]]
// EXTRA-LABEL: func.func @extra_result_cycle
// EXTRA-NOT:     byoc.composite
// EXTRA:         func.return
func.func @extra_result_order(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %c = nn.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %t = nn.tanh %c : tensor<1x4x6x6xf32>
  %r = nn.relu %c : tensor<1x4x6x6xf32>
  func.return %r, %t : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}
func.func @extra_result_cycle(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = nn.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %t = nn.tanh %c : tensor<1x4x6x6xf32>
  %a = nn.add %c, %t : tensor<1x4x6x6xf32>
  %r = nn.relu %a : tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}

// -----

/// An op moved after one composite (maximum, after the one of relu(%1)) keeps its
/// new place when a composite earlier in the block moves the ops that feed it.
// MOVED-LABEL: func.func @moved_twice
// MOVED-NEXT:    %[[R0:[^,]*]], %[[A0:.*]] = byoc.composite "test.abs_relu"(%x)
// MOVED:         %[[N:.*]] = nn.negative %[[A0]]
// MOVED-NEXT:    %[[R1:[^,]*]], %[[A1:.*]] = byoc.composite "test.abs_relu"(%x)
// MOVED:         %[[M:.*]] = nn.maximum %[[N]], %[[A1]]
// MOVED-NEXT:    func.return %[[M]], %[[R0]], %[[R1]]
func.func @moved_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.abs %x : tensor<4xf32>
  %1 = nn.abs %x : tensor<4xf32>
  %2 = nn.negative %0 : tensor<4xf32>
  %3 = nn.maximum %2, %1 : tensor<4xf32>
  %4 = nn.relu %0 : tensor<4xf32>
  %5 = nn.relu %1 : tensor<4xf32>
  func.return %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

/// is_constant() puts the dense weight inside the composite; the bias, matched by
/// wildcard(), stays outside and becomes an operand even though it is a constant.
// CHECK-LABEL: func.func @constant_embedding
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[1.0, 2.0]>
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "test.dense_bias"(%x, %[[B]]) : (tensor<1x3xf32>, tensor<2xf32>) -> tensor<1x2xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x3xf32>, %[[BB:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[W:.*]] = nn.constant dense<[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]>
// CHECK-NEXT:      %[[D:.*]] = nn.dense %[[X]], %[[W]]
// CHECK-NEXT:      nn.bias_add %[[D]], %[[BB]]
func.func @constant_embedding(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = nn.constant dense<[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]> : tensor<2x3xf32>
  %b = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %d = nn.dense %x, %w : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  %e = nn.bias_add %d, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %e : tensor<1x2xf32>
}

// -----

/// nn.add matches commutatively: relu(add(wildcard, constant)) takes add(%c, %x).
// CHECK-LABEL: func.func @commutative
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "test.add_const_relu"(%x)
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[C:.*]] = nn.constant
// CHECK-NEXT:      nn.add %[[C]], %[[X]]
func.func @commutative(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.constant dense<2.0> : tensor<4xf32>
  %a = nn.add %c, %x : tensor<4xf32>
  %r = nn.relu %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

/// Alternatives over a function input: relu(%x) | tanh(%x). tanh(%x) matches;
/// the tanh of a computed value does not (is_var wants a block argument).
// CHECK-LABEL: func.func @alternatives
// CHECK-NEXT:    %[[T:.*]] = byoc.composite "test.relu_or_tanh_of_input"(%x)
// CHECK:         %[[E:.*]] = nn.exp %[[T]]
// CHECK-NEXT:    nn.tanh %[[E]]
func.func @alternatives(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = nn.tanh %x : tensor<4xf32>
  %e = nn.exp %t : tensor<4xf32>
  %u = nn.tanh %e : tensor<4xf32>
  func.return %u : tensor<4xf32>
}
