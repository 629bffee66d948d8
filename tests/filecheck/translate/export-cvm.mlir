// RUN: rm -rf %t && cvm-translate --export-cvm %s -o %t
// RUN: filecheck %s --check-prefix=JSON < %t/model.json
// RUN: cvm-translate --import-cvm %t/model.json %t/params.bin | filecheck %s --check-prefix=BACK
// RUN: cvm-translate --import-cvm %S/../../data/cvm/chain_002/model.json %S/../../data/cvm/chain_002/params.bin -o %t.mlir
// RUN: rm -rf %t.chain && cvm-translate --export-cvm %t.mlir -o %t.chain
// RUN: cvm-translate --import-cvm %t.chain/model.json %t.chain/params.bin | diff - %t.mlir

// IR written by hand to cvm-runtime's files: nodes in order (the input first), attributes as strings,
// defaults written out, a generated name for an op without one; the files load again to the same IR.

func.func @main(%data: tensor<1x8xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<8>> attributes {cvm.postprocess = "argmax"} {
  %w = cvm.param "w" dense<[[1, -1, 1, -1, 1, -1, 1, -1], [2, 2, 2, 2, 2, 2, 2, 2]]> : tensor<2x8xi32, #cvm.prec<3>>
  %0 = cvm.dense %data, %w {name = "fc", units = 2 : i64, use_bias = false} : (tensor<1x8xi32, #cvm.prec<8>>, tensor<2x8xi32, #cvm.prec<3>>) -> tensor<1x2xi32, #cvm.prec<15>>
  %1 = cvm.cvm_right_shift %0 {precision = 8 : i64, shift_bit = 3 : i64} : (tensor<1x2xi32, #cvm.prec<15>>) -> tensor<1x2xi32, #cvm.prec<8>>
  func.return %1 : tensor<1x2xi32, #cvm.prec<8>>
}

// JSON: {"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "w", "inputs": []},
// JSON-SAME: {"op": "cvm_op", "name": "fc", "inputs": {{\[\[}}0, 0, 0], [1, 0, 0]], "attrs": {"func_name": "dense", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}},
// JSON-SAME: {"op": "cvm_op", "name": "cvm_right_shift_3", "inputs": {{\[\[}}2, 0, 0]]
// JSON-SAME: "heads": {{\[\[}}3, 0, 0]]
// JSON-SAME: "precision": ["list_int", [8, 3, 15, 8]]
// JSON-SAME: "{\"units\": \"2\", \"use_bias\": \"False\"}", "{\"precision\": \"8\", \"is_sign\": \"True\", \"shift_bit\": \"3\"}"
// JSON-SAME: "version": "cvm_1.0.0", "postprocess": "argmax"}

// BACK:      func.func @main(%data: tensor<1x8xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<8>> attributes {cvm.version = "cvm_1.0.0", cvm.postprocess = "argmax"} {
// BACK-NEXT:   %w = cvm.param "w" dense<{{\[\[}}1, -1, 1, -1, 1, -1, 1, -1], [2, 2, 2, 2, 2, 2, 2, 2]]> : tensor<2x8xi32, #cvm.prec<3>>
// BACK-NEXT:   %fc = cvm.dense %data, %w {name = "fc", units = 2 : i64, use_bias = false}
// BACK-NEXT:   %cvm_right_shift = cvm.cvm_right_shift %fc {name = "cvm_right_shift_3", precision = 8 : i64, shift_bit = 3 : i64}
// BACK-NEXT:   func.return %cvm_right_shift
