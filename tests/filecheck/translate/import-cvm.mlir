// RUN: cvm-translate --import-cvm %S/../../data/cvm/model_digits_mlp_000/model.json %S/../../data/cvm/model_digits_mlp_000/params.bin | filecheck %s --check-prefix=MLP
// RUN: cvm-translate --import-cvm %S/../../data/cvm/get_valid_counts_005/model.json %S/../../data/cvm/get_valid_counts_005/params.bin | filecheck %s --check-prefix=GVC
// RUN: cvm-translate --import-cvm %S/../../data/cvm/concatenate_000/model.json %S/../../data/cvm/concatenate_000/params.bin | filecheck %s --check-prefix=CONCAT
// RUN: cvm-translate --import-cvm %S/../../data/cvm/conv2d_003/model.json %S/../../data/cvm/conv2d_003/params.bin -o %t.mlir
// RUN: filecheck %s --check-prefix=CONV < %t.mlir
// RUN: cvm-opt %t.mlir | filecheck %s --check-prefix=CONV

// Corpus models as IR: @main takes the input `data` and returns the heads; params become cvm.param with
// their values; node names are kept; the version and postprocess are attributes of @main.

// MLP:      func.func @main(%data: tensor<1x64xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<8>> attributes {cvm.version = "cvm_1.0.0", cvm.postprocess = "argmax"} {
// MLP-NEXT:   %fc1_w = cvm.param "fc1_w" dense<"0x{{[0-9A-F]+}}"> : tensor<64x64xi32, #cvm.prec<8>>
// MLP-NEXT:   %fc1_b = cvm.param "fc1_b" dense<[1249, 1480, -286,
// MLP-SAME:     : tensor<64xi32, #cvm.prec<13>>
// MLP-NEXT:   %fc1 = cvm.dense %data, %fc1_w, %fc1_b {name = "fc1", units = 64 : i64} : (tensor<1x64xi32, #cvm.prec<8>>, tensor<64x64xi32, #cvm.prec<8>>, tensor<64xi32, #cvm.prec<13>>) -> tensor<1x64xi32, #cvm.prec<24>>
// MLP-NEXT:   %relu1 = cvm.relu %fc1 {name = "relu1"} : (tensor<1x64xi32, #cvm.prec<24>>) -> tensor<1x64xi32, #cvm.prec<24>>
// MLP-NEXT:   %rq1 = cvm.cvm_right_shift %relu1 {name = "rq1", precision = 8 : i64, shift_bit = 9 : i64} : (tensor<1x64xi32, #cvm.prec<24>>) -> tensor<1x64xi32, #cvm.prec<8>>
// MLP-NEXT:   %fc2_w = cvm.param "fc2_w" dense<"0x{{[0-9A-F]+}}"> : tensor<10x64xi32, #cvm.prec<8>>
// MLP-NEXT:   %fc2_b = cvm.param "fc2_b" dense<[-80, -108, -236, -82, -2, 119, 229, -39, 112, -209]> : tensor<10xi32, #cvm.prec<9>>
// MLP-NEXT:   %fc2 = cvm.dense %rq1, %fc2_w, %fc2_b {name = "fc2", units = 10 : i64}
// MLP-NEXT:   %rq2 = cvm.cvm_right_shift %fc2 {name = "rq2", precision = 8 : i64, shift_bit = 8 : i64}
// MLP-NEXT:   func.return %rq2 : tensor<1x10xi32, #cvm.prec<8>>

// Two heads from the two results of one node.

// GVC:      func.func @main(%data: tensor<2x2x5xi32, #cvm.prec<8>>) -> (tensor<2xi32, #cvm.prec<5>>, tensor<2x2x5xi32, #cvm.prec<8>>)
// GVC-NEXT:   %0, %1 = cvm.get_valid_counts %data {name = "get_valid_counts_1", score_threshold = 50 : i64}
// GVC-NEXT:   func.return %0, %1 :

// Variadic inputs, the input in the middle.

// CONCAT:      func.func @main(%data: tensor<4x3xi32, #cvm.prec<24>>) -> tensor<7x3xi32, #cvm.prec<32>>
// CONCAT:        %concatenate = cvm.concatenate %x0, %data, %x2 {name = "concatenate_3", axis = 0 : i64} : (tensor<2x3xi32, #cvm.prec<32>>, tensor<4x3xi32, #cvm.prec<24>>, tensor<1x3xi32, #cvm.prec<24>>) -> tensor<7x3xi32, #cvm.prec<32>>

// Version 1.1.0, attributes that differ from the defaults, a splat param; the output parses back.

// CONV:      func.func @main(%data: tensor<2x1x10x11xi32, #cvm.prec<6>>) -> tensor<2x1x3x4xi32, #cvm.prec<32>> attributes {cvm.version = "cvm_1.1.0"} {
// CONV:        %b = cvm.param "b" dense<0> : tensor<1xi32, #cvm.prec<31>>
// CONV-NEXT:   %conv2d = cvm.conv2d %data, %w, %b {name = "conv2d_3", channels = 1 : i64, kernel_size = array<i64: 3, 1>, strides = array<i64: 3, 3>}
