// The graph of the BYOC tutorial (seed part 1): four 10x10 inputs,
// add -> subtract -> multiply. Every op is supported by ccompiler, so
// `byoc{targets=ccompiler}` makes one partition of the three ops.
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}
