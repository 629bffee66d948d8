// RUN: cvm-opt %s -p convert-taskgraph-to-loops | filecheck %s

// SI -> CVS (x * 3 + 1) -> SI -> OUTPUT, through a REFLECT (affine: no table) and a zero-filling SHIFT
// (not affine: a gather table).
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 1> out [[0]] data <INT_8 dense<[[[1], [2]], [[3], [4]]]> : tensor<2x2x1xi8>>
  taskgraph.cvs 1 INT_32 <y = 2, x = 2, f = 1> in [[0]] out [[1]] attrs [CONSTANT_A = 3, CONSTANT_B = 1]
  taskgraph.si 2 INT_32 <y = 2, x = 2, f = 1> in [[1]] out [[2]]
  taskgraph.output 3 INT_32 <y = 2, x = 2, f = 1> in [[2]]
  taskgraph.edge 0 from 0 to 1 [REFLECT]
  taskgraph.edge 1 from 1 to 2
  taskgraph.edge 2 from 2 to 3 [SHIFT [<dense<[0, 1]> : tensor<2xi32>>, <dense<1> : tensor<1xi32>>]]
}

// One kernel: the storage blocks' values, then the gather table of edge 2 (-1 where the shift fills zeros).
// CHECK:      func.func @taskgraph(%{{.*}}: memref<4xi32> {taskgraph.block = 0 : i64, taskgraph.init = dense<{{.*}}> : tensor<2x2x1xi8>},
// CHECK-SAME:   %{{.*}}: memref<4xi32> {taskgraph.block = 2 : i64},
// CHECK-SAME:   %{{.*}}: memref<4xi32> {taskgraph.block = 3 : i64, taskgraph.port = "output"},
// CHECK-SAME:   %{{.*}}: memref<4xi32> {taskgraph.table = dense<[-1, 0, -1, 2]> : tensor<4xi32>})
// The CVS input cluster is gathered into a buffer (REFLECT: x -> 1 - x), computed, copied on.
// CHECK:        %[[IN:.*]] = memref.alloc() : memref<4xi32>
// CHECK:        scf.for
// CHECK:        memref.store %{{.*}}, %[[IN]]
// CHECK:        %[[OUT:.*]] = memref.alloc() : memref<4xi32>
// CHECK:        arith.muli
// CHECK:        arith.addi
// CHECK:        memref.store %{{.*}}, %[[OUT]]
// The shifted edge reads its table and selects 0 where it says -1.
// CHECK:        arith.cmpi sge
// CHECK:        arith.select
// CHECK:        memref.dealloc %[[IN]]
// CHECK:        memref.dealloc %[[OUT]]
// CHECK:        func.return
// CHECK-NOT:  taskgraph.graph
