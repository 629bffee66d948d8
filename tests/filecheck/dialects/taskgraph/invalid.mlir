// RUN: cvm-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the taskgraph dialect.

// A shape dimension is negative.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = -2> out [[]]
}
// CHECK: expected shape 'f' >= 0, got -2

// -----
// A block has a dimension its kind does not have.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2, r = 2> out [[]]
}
// CHECK: block 0: expected no shape 'r' for SI, got 2

// -----
// A block lacks a dimension its kind requires.
taskgraph.graph {
  taskgraph.sw 0 INT_8 <f = 2, r = 2, ky = 3> out [[]]
}
// CHECK: block 0: expected shape 'kx' > 0 for SW, got 0

// -----
// CADD's kernel dimensions are 1 when given.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cadd 1 INT_32 <f = 2, ky = 2, kx = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected shape 'ky' absent or 1 for CADD, got 2

// -----
// y and x come together.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, f = 2> out [[]]
}
// CHECK: block 0: expected shape 'y' and 'x' both given or both absent, got y = 2, x = 0

// -----
// Only CADD has branches.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2, n_branch = 2> out [[]]
}
// CHECK: block 0: expected no shape 'n_branch' for SI, got 2

// -----
// CADD's branch count matches its data inputs.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cadd 1 INT_32 <f = 2, n_branch = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected shape 'n_branch' = 1 (the data inputs), got 2

// -----
// The input clusters a kind expects: CVM takes input, weight and a VECTOR bias.
taskgraph.graph {
  taskgraph.sifc 0 INT_8 <r = 2> out [[0]]
  taskgraph.cvm 1 INT_32 <f = 2, r = 2> in [[0]] out [[]] bias VECTOR
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected 3 input clusters for CVM, got 1

// -----
// A storage block has one output cluster.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out []
}
// CHECK: block 0: expected 1 output clusters for SI, got 0

// -----
// OUTPUT has one input cluster.
taskgraph.graph {
  taskgraph.output 0 INT_8 <f = 2>
}
// CHECK: block 0: expected 1 input clusters for OUTPUT, got 0

// -----
// A cluster's shape is the one its block implies (SIC takes (y, x, f = r) in).
taskgraph.graph {
  taskgraph.sic 0 INT_8 <y = 2, x = 2, r = 3> in [shape <y = 2, x = 2, r = 3> []] out [[]]
}
// CHECK: block 0: input cluster 0 (input): expected shape {'y': 2, 'x': 2, 'f': 3}, got {'y': 2, 'x': 2, 'r': 3}

// -----
// Every input of a compute block is connected.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cvvh 1 INT_32 <f = 2> in [[0], []] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: input cluster 1 (input2): expected at least one interface

// -----
// An interface's size spans the dims of its cluster.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0 size <f = 2>]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 0: output cluster 0, interface of edge 0: expected 'size' over dims ['y', 'x', 'f'], got {'f': 2}

// -----
// An interface's position names only dims of its cluster.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 4> out [[0 at <r = 1> size <f = 2>]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 0: output cluster 0, interface of edge 0: 'position' has dims ['r'] outside the cluster ['f']

// -----
// An interface's box lies inside its cluster.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 4> out [[0 at <f = 3> size <f = 2>]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 0: output cluster 0, interface of edge 0: box [3:5] is not inside the cluster [4] (dim 'f')

// -----
// An attribute is given once.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cvs 1 INT_32 <f = 2> in [[0]] out [[]] attrs [CONSTANT_A = 1, CONSTANT_A = 2]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: attribute CONSTANT_A is given twice

// -----
// An attribute applies to the block's kind.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cvm 1 INT_32 <f = 2, r = 2> in [[0], [0]] out [[]] attrs [CMP = 0]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: attribute CMP does not apply to CVM

// -----
// An attribute has a value.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cvs 1 INT_32 <f = 2> in [[0]] out [[]] attrs [CONSTANT_A]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: attribute CONSTANT_A has no value

// -----
// Window attributes are integers.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.ccmpb 1 INT_8 <y = 2, x = 2, f = 2, ky = 1, kx = 1, iy = 2, ix = 2> in [[0]] out [[]] attrs [STRIDE_X = 1.00000000e+00]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected an integer value for attribute STRIDE_X, got 1.0

// -----
// An attribute's value is in its range.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.ccmpb 1 INT_8 <y = 2, x = 2, f = 2, ky = 1, kx = 1, iy = 2, ix = 2> in [[0]] out [[]] attrs [BIT_SHIGT_NUM = 32]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected attribute BIT_SHIGT_NUM in [0, 31], got 32

// -----
// Elementwise blocks accept window attributes only with neutral values.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cadd 1 INT_32 <f = 2> in [[0]] out [[]] attrs [STRIDE_X = 2]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected attribute STRIDE_X = 1 for CADD, got 2

// -----
// CLUT needs its table width.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0, 1]]
  taskgraph.clut 1 INT_8 <f = 2> in [[0], [1]] out [[]]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 1 from 0 to 1
}
// CHECK: block 1: expected attribute LUT_DW for CLUT

// -----
// Only biased compute blocks have a bias type.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[]] bias VECTOR
}
// CHECK: block 0: 'bias_type' does not apply to SI

// -----
// Compute blocks hold no data.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cadd 1 INT_32 <f = 2> in [[0]] out [[]] data <INT_32 dense<0> : tensor<2xi32>>
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected no 'data' for CADD

// -----
// Data has the block's precision.
taskgraph.graph {
  taskgraph.sb 0 INT_32 <f = 2> out [[]] data <INT_8 dense<0> : tensor<2xi8>>
}
// CHECK: block 0: expected 'data' precision INT_32 (the block's), got INT_8

// -----
// Data sits in the container of its precision.
taskgraph.graph {
  taskgraph.sb 0 INT_8 <f = 2> out [[]] data <dense<0> : tensor<2xui8>>
}
// CHECK: block 0: expected 'data' of INT_8 in int32_data, got uint32_data

// -----
// Data has the block's shape.
taskgraph.graph {
  taskgraph.sw 0 INT_8 <f = 2, r = 3, ky = 1, kx = 1> out [[]] data <dense<0> : tensor<3x2x1x1xi8>>
}
// CHECK: block 0: expected 'data' of shape [2, 3, 1, 1], got [3, 2, 1, 1]

// -----
// Data values fit the block's precision.
taskgraph.graph {
  taskgraph.sb 0 TERNARY <f = 2> out [[]] data <dense<[1, 2]> : tensor<2xi8>>
}
// CHECK: block 0: expected 'data' values of TERNARY in [-1, 1], got 2

// -----
// A tensor without dims is 1-D.
taskgraph.graph {
  taskgraph.sb 0 INT_8 <f = 4> out [[]] data <dense<0> : tensor<2x2xi8> nodims>
}
// CHECK: expected a tensor without dims to be 1-D

// -----
// Tensors hold i8, i16, i32, ui8, ui16, ui32 or f32 values.
taskgraph.graph {
  taskgraph.sb 0 INT_32 <f = 2> out [[]] data <dense<0> : tensor<2xi64>>
}
// CHECK: expected tensor values of i8, i16, i32, ui8, ui16, ui32 or f32, got i64

// -----
// KERNEL_X and KERNEL_Y repeat the shape's kx and ky.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 4, x = 4, f = 2> out [[0]]
  taskgraph.cavg 1 INT_32 <y = 3, x = 3, f = 2, ky = 2, kx = 2, iy = 4, ix = 4> in [[0]] out [[]] attrs [KERNEL_X = 3]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected attribute KERNEL_X = 2 (shape 'kx'), got 3

// -----
// A 1-D window block has a 1x1 window.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.ccmpb 1 INT_8 <f = 2, ky = 2, kx = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected a 1x1 window and no 'iy'/'ix' for a 1-D CCMPB

// -----
// A 2-D window block has its input extents.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.ccmps 1 INT_8 <y = 2, x = 2, f = 2, ky = 1, kx = 1> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected shape 'iy' and 'ix' for a 2-D CCMPS

// -----
// The output extents follow from the window (28 = (32 - 5) / 1 + 1).
taskgraph.graph {
  taskgraph.sic 0 INT_8 <y = 32, x = 32, r = 1> out [[0]]
  taskgraph.sw 1 INT_8 <f = 1, r = 1, ky = 5, kx = 5> out [[1]]
  taskgraph.cc 2 INT_32 <y = 30, x = 28, f = 1, r = 1, ky = 5, kx = 5, iy = 32, ix = 32> in [[0], [1]] out [[]]
  taskgraph.edge 0 from 0 to 2
  taskgraph.edge 1 from 1 to 2
}
// CHECK: block 2: expected shape 'y' = 28 from the window over 'iy' = 32, got 30

// -----
// CCMPB and CCMPS saturate, so their precision is an integer one.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.ccmpb 1 FLOAT_32 <f = 2, ky = 1, kx = 1> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected an integer 'precision' for CCMPB (it saturates), got FLOAT_32

// -----
// Block ids are unique.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[]]
  taskgraph.si 0 INT_8 <f = 2> out [[]]
}
// CHECK: block id 0 is used twice

// -----
// Edge ids are unique.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 0 from 0 to 1
}
// CHECK: edge id 0 is used twice

// -----
// Group ids are unique.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[]]
  taskgraph.group 0 [0]
  taskgraph.group 0 []
}
// CHECK: group id 0 is used twice

// -----
// Groups name existing blocks.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[]]
  taskgraph.group 0 [0, 7]
}
// CHECK: group 0: 'block_ids' names unknown block 7

// -----
// An interface names an existing edge.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[5]]
}
// CHECK: block 0: interface names unknown edge 5

// -----
// An input interface names an edge into its block.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.si 2 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 2: input interface names edge 0, whose destination is block 1

// -----
// One interface per edge end.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0, 0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: edge 0 is named by two output interfaces

// -----
// An edge joins existing blocks.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.edge 0 from 0 to 9
}
// CHECK: edge 0: 'dst' names unknown block 9

// -----
// Both ends of an edge have an interface for it.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: edge 0: block 1 has no input interface for it

// -----
// Compute blocks talk through storage blocks.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cvs 1 INT_32 <f = 2> in [[0]] out [[1]] attrs [CONSTANT_A = 2]
  taskgraph.cvs 2 INT_32 <f = 2> in [[1]] out [[]] attrs [CONSTANT_A = 2]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 1 from 1 to 2
}
// CHECK: edge 1: expected a storage block between compute blocks 1 and 2

// -----
// Planar rearranges need a box of rank 2 or more.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 4> out [[0]]
  taskgraph.si 1 INT_8 <f = 4> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [ROTATE [<dense<1> : tensor<1xi32>>]]
}
// CHECK: edge 0: expected a box of rank >= 2 for ROTATE, got shape [4]

// -----
// An edge carries as many values as its destination box holds.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 4, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SCALE [<dense<[2, 2]> : tensor<2xi32>>]]
}
// CHECK: edge 0: carries 32 values [4, 4, 2], but its destination box in block 1 holds 16 [4, 2, 2]

// -----
// The graph is acyclic.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> in [[1]] out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[1]]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 1 from 1 to 0
}
// CHECK: expected an acyclic graph, blocks [0, 1] lie on a cycle

// -----
// Rearranges: at most the matrices their kind reads.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [IDENTITY [<dense<0> : tensor<1xi32>>]]
}
// CHECK: expected at most 0 matrices for IDENTITY, got 1

// -----
// Rearrange matrices hold integers.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [RESHAPE [<dense<0.0> : tensor<1xf32>>]]
}
// CHECK: expected integer values in matrix 0 of RESHAPE

// -----
// ROTATE needs its quarter turns.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [ROTATE]
}
// CHECK: expected the number of quarter turns in matrix 0 of ROTATE

// -----
// SHIFT takes two offsets.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHIFT [<dense<1> : tensor<3xi32>>]]
}
// CHECK: expected 2 offsets in matrix 0 of SHIFT, got 3

// -----
// SHIFT fills cyclically (0) or with zeros (1).
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHIFT [<dense<1> : tensor<2xi32>>, <dense<2> : tensor<1xi32>>]]
}
// CHECK: expected SHIFT fill mode 0 (cyclic) or 1 (zero), got 2

// -----
// SCALE factors are at least 1.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SCALE [<dense<[1, 0]> : tensor<2xi32>>]]
}
// CHECK: expected SCALE factors [k, l] >= 1, got [1, 0]

// -----
// SHEAR factors are non-negative and not both 1.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHEAR [<dense<1> : tensor<2xi32>>]]
}
// CHECK: expected SHEAR factors [a, b] >= 0 with a * b != 1, got [1, 1]

// -----
// A cyclic SHEAR runs along one axis.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHEAR [<dense<[1, 2]> : tensor<2xi32>>, <dense<1> : tensor<1xi32>>]]
}
// CHECK: expected a cyclic SHEAR along one axis (a or b = 0), got [1, 2]

// -----
// AFFINE takes a 2x3 matrix.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [AFFINE [<dense<1> : tensor<2x2xi32>>]]
}
// CHECK: expected a 2x3 matrix in matrix 0 of AFFINE

// -----
// PROJECT output extents are at least 1.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [PROJECT [<dense<1> : tensor<3x3xi32>>, <dense<[0, 2]> : tensor<2xi32>>]]
}
// CHECK: expected PROJECT output extents >= 1, got [0, 2]

// -----
// SHUFFLE needs its permutation.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHUFFLE]
}
// CHECK: expected a permutation in matrix 0 of SHUFFLE

// -----
// A SHUFFLE permutation covers the box (or the axis).
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 3> out [[0]]
  taskgraph.si 1 INT_8 <f = 3> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [SHUFFLE [<dense<[0, 1]> : tensor<2xi32>>]]
}
// CHECK: edge 0: expected a SHUFFLE permutation of 0..2, got 2 values

// -----
// PERMUTE takes a permutation.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [PERMUTE [<dense<[0, 0, 1]> : tensor<3xi32>>]]
}
// CHECK: expected a permutation of 0..2 as PERMUTE permutation, got [0, 0, 1]

// -----
// A PERMUTE permutation covers the box's axes.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [PERMUTE [<dense<[1, 0]> : tensor<2xi32>>]]
}
// CHECK: edge 0: expected a PERMUTE permutation of 3 axes, got [1, 0]

// -----
// A RESHAPE order covers the box's axes.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <f = 8> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [RESHAPE [<dense<[1, 0]> : tensor<2xi32>>]]
}
// CHECK: edge 0: expected a RESHAPE order of 3 axes, got [1, 0]

// -----
// REFLECT axes lie in the box.
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 2, x = 2, f = 2> out [[0]]
  taskgraph.si 1 INT_8 <y = 2, x = 2, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1 [REFLECT [<dense<3> : tensor<1xi32>>]]
}
// CHECK: edge 0: expected REFLECT axes in [0, 2], got 3

// -----
// A dimension is at most 2^24, as a CVM tensor's.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 16777217> out [[]]
}
// CHECK: expected shape 'f' <= 16777216, got 16777217

// -----
// A storage block holds at most 2^30 values (2^30 + 2^15 here).
taskgraph.graph {
  taskgraph.si 0 INT_8 <y = 32769, x = 32768, f = 1> out [[]]
}
// CHECK: block 0: expected at most 1073741824 values in the block, got 1073774592 [32769, 32768, 1]

// -----
// So does every cluster of a compute block.
taskgraph.graph {
  taskgraph.si 0 INT_8 <f = 2> out [[0]]
  taskgraph.cadd 1 INT_32 <y = 32768, x = 32768, f = 2> in [[0]] out [[]]
  taskgraph.edge 0 from 0 to 1
}
// CHECK: block 1: expected at most 1073741824 values in input cluster 0, got 2147483648 [32768, 32768, 2]
