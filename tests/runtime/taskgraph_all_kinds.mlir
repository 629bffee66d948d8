// Every block kind and every rearrange, with every compute block's output kept in an SI: the executor
// and the CPU JIT must agree on every storage block, step after step (tests/runtime/test_taskgraph_jit.py).
taskgraph.graph {
  taskgraph.input 0 INT_8 <y = 4, x = 4, f = 2> out [[0]] socket_id 0
  taskgraph.si 1 INT_8 <y = 4, x = 4, f = 2> in [[0]] out [[1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23, 24 at <f = 1> size <y = 4, x = 4, f = 1>, 30, 40, 41]]
  taskgraph.sb 2 INT_32 <f = 2> out [[9, 10]] data <INT_32 dense<[5, -5]> : tensor<2xi32>>
  taskgraph.cadd 3 INT_32 <y = 4, x = 4, f = 2, ky = 1, kx = 1, n_branch = 2> in [[1], [2], [9]] out [[100]] attrs [STRIDE_X = 1 : INT_32, CONSTANT_B = 0] bias VECTOR
  taskgraph.cavg 4 INT_32 <y = 2, x = 2, f = 2, ky = 2, kx = 2, iy = 4, ix = 4> in [[3]] out [[101]] attrs [KERNEL_X = 2 : INT_32, KERNEL_Y = 2 : INT_32, STRIDE_X = 2, STRIDE_Y = 2, CONSTANT_B = 3] bias CONSTANT
  taskgraph.cvvh 5 INT_32 <y = 4, x = 4, f = 2> in [[4], [5]] out [[102]]
  taskgraph.sb 6 INT_8 <f = 2> out [[11]] data <INT_8 dense<[2, 3]> : tensor<2xi8> name "alpha">
  taskgraph.cax 7 INT_32 <y = 4, x = 4, f = 2> in [[6], [11], [10]] out [[103]] bias VECTOR
  taskgraph.cvs 8 INT_32 <y = 4, x = 4, f = 2> in [[7]] out [[104]] attrs [CONSTANT_A = 3 : INT_8, CONSTANT_B = 1 | 5.00000000e-01]
  taskgraph.ccmpb 9 INT_8 <y = 2, x = 2, f = 2, ky = 3, kx = 3, iy = 4, ix = 4> in [[8]] out [[105]] attrs [KERNEL_X = 3, KERNEL_Y = 3, STRIDE_X = 2, STRIDE_Y = 2, PAD_UP = 1, PAD_LEFT = 1, CMP = 0, BIT_SHIGT_NUM = 1]
  taskgraph.ccmps 10 INT_8 <y = 4, x = 4, f = 2, ky = 1, kx = 1, iy = 4, ix = 4> in [[20]] out [[106]] attrs [CMP = 100]
  taskgraph.sb 11 INT_8 <f = 4> out [[12]] data <INT_8 dense<[10, 11, -12, -13]> : tensor<4xi8>>
  taskgraph.clut 12 INT_8 <y = 4, x = 4, f = 2> in [[21], [12]] out [[107]] attrs [LUT_DW = 2]
  taskgraph.si 13 INT_32 <y = 4, x = 4, f = 2> out [[13]] data <INT_32 dense<7> : tensor<4x4x2xi32>>
  taskgraph.clif 14 INT_32 <y = 4, x = 4, f = 2> in [[22], [13]] out [[108]] attrs [VTH0 = 9, VR = 0, VLEAKY_ALPHA = 200, VLEAKY_ADPT_EN = 1, VLEAKY_BETA = 3]
  taskgraph.sic 15 INT_8 <y = 4, x = 4, r = 2> in [shape <y = 4, x = 4, f = 2> [23]] out [[14]] pipeline_num 2
  taskgraph.sw 16 INT_8 <f = 3, r = 2, ky = 3, kx = 3> out [[15]] is_virtual false major_task_id 4 data <INT_8 dense<1> : tensor<3x2x3x3xi8>>
  taskgraph.sb 17 INT_32 <f = 3> out [[16]] data <INT_32 dense<[0, 1, 2]> : tensor<3xi32>>
  taskgraph.cc 18 INT_32 <y = 4, x = 4, f = 3, r = 2, ky = 3, kx = 3, iy = 4, ix = 4> in [[14], [15], [16]] out [shape <y = 4, x = 4, f = 3> [109]] attrs [KERNEL_X = 3, KERNEL_Y = 3, PAD_UP = 1, PAD_DOWN = 1, PAD_LEFT = 1, PAD_RIGHT = 1, DILATION_X = 1, DILATION_Y = 1] bias VECTOR
  taskgraph.sic2d 19 INT_8 <y = 4, x = 4, r = 1> in [[24]] out [[17]]
  taskgraph.sw2d 20 INT_8 <f = 1, r = 1, ky = 2, kx = 2> out [[18]] data <INT_8 dense<[[[[1, -1], [2, -2]]]]> : tensor<1x1x2x2xi8>>
  taskgraph.cc2d 21 INT_32 <y = 3, x = 3, f = 1, r = 1, ky = 2, kx = 2, iy = 4, ix = 4> in [[17], [18]] out [[19]]
  taskgraph.si 22 INT_32 <y = 3, x = 3, f = 1> in [[19]] out [[25]]
  taskgraph.sifc 23 UINT_8 <r = 32> in [[30]] out [[31]] data <UINT_8 dense<0> : tensor<32xui8>>
  taskgraph.swfc 24 INT_16 <f = 2, r = 32> out [[32]] data <INT_16 dense<300> : tensor<64xi16> nodims>
  taskgraph.cvm 25 INT_32 <f = 2, r = 32> in [[31], [32]] out [[33]] attrs [CONSTANT_B = 7] bias CONSTANT
  taskgraph.output 26 INT_32 <f = 2> in [[33]] socket_id 1
  taskgraph.si 27 INT_8 <y = 4, x = 4, f = 2> in [[40]] out [[]]
  taskgraph.si 28 FLOAT_32 <y = 3, x = 3, f = 1> in [[25]] out [[]]
  taskgraph.si 29 INT_8 <y = 12, x = 8, f = 2> in [[41]] out [[]]
  taskgraph.si 100 INT_32 <y = 4, x = 4, f = 2> in [[100]] out [[]]
  taskgraph.si 101 INT_32 <y = 2, x = 2, f = 2> in [[101]] out [[]]
  taskgraph.si 102 INT_32 <y = 4, x = 4, f = 2> in [[102]] out [[]]
  taskgraph.si 103 INT_32 <y = 4, x = 4, f = 2> in [[103]] out [[]]
  taskgraph.si 104 INT_32 <y = 4, x = 4, f = 2> in [[104]] out [[]]
  taskgraph.si 105 INT_32 <y = 2, x = 2, f = 2> in [[105]] out [[]]
  taskgraph.si 106 INT_32 <y = 4, x = 4, f = 2> in [[106]] out [[]]
  taskgraph.si 107 INT_32 <y = 4, x = 4, f = 2> in [[107]] out [[]]
  taskgraph.si 108 INT_32 <y = 4, x = 4, f = 2> in [[108]] out [[]]
  taskgraph.si 109 INT_32 <y = 4, x = 4, f = 3> in [[109]] out [[]]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 1 from 1 to 3
  taskgraph.edge 2 from 1 to 3
  taskgraph.edge 3 from 1 to 4
  taskgraph.edge 4 from 1 to 5
  taskgraph.edge 5 from 1 to 5
  taskgraph.edge 6 from 1 to 7
  taskgraph.edge 7 from 1 to 8
  taskgraph.edge 8 from 1 to 9
  taskgraph.edge 9 from 2 to 3
  taskgraph.edge 10 from 2 to 7
  taskgraph.edge 11 from 6 to 7
  taskgraph.edge 12 from 11 to 12
  taskgraph.edge 13 from 13 to 14
  taskgraph.edge 14 from 15 to 18
  taskgraph.edge 15 from 16 to 18
  taskgraph.edge 16 from 17 to 18
  taskgraph.edge 17 from 19 to 21
  taskgraph.edge 18 from 20 to 21
  taskgraph.edge 19 from 21 to 22
  taskgraph.edge 20 from 1 to 10 [IDENTITY]
  taskgraph.edge 21 from 1 to 12 [PERMUTE [<INT_32 dense<[1, 0, 2]> : tensor<3xi32>>], ROTATE [<INT_32 dense<3> : tensor<1xi32>>], REFLECT [<dense<[0, 1]> : tensor<2xi32>>]]
  taskgraph.edge 22 from 1 to 14 [SHIFT [<dense<[1, -1]> : tensor<2xi32>>, <dense<1> : tensor<1xi32>>], AFFINE [<dense<[[0, 1, 0], [1, 0, 0]]> : tensor<2x3xi32>>]]
  taskgraph.edge 23 from 1 to 15 [SHUFFLE [<dense<[3, 2, 1, 0]> : tensor<4xi32>>, <dense<0> : tensor<1xi32>>], PROJECT [<dense<[[1, 0, 0], [0, 1, 0], [0, 0, 1]]> : tensor<3x3xi32>>, <dense<[4, 4]> : tensor<2xi32>>]]
  taskgraph.edge 24 from 1 to 19 [SHEAR [<dense<[0, 1]> : tensor<2xi32>>, <dense<1> : tensor<1xi32>>]]
  taskgraph.edge 25 from 22 to 28
  taskgraph.edge 30 from 1 to 23 [RESHAPE [<INT_32 dense<[2, 1, 0]> : tensor<3xi32>>]]
  taskgraph.edge 31 from 23 to 25
  taskgraph.edge 32 from 24 to 25
  taskgraph.edge 33 from 25 to 26
  taskgraph.edge 40 from 1 to 27 [SHEAR [<dense<[0, 2]> : tensor<2xi32>>, <dense<1> : tensor<1xi32>>], PERMUTE, SHUFFLE [<dense<[0, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi32> nodims>], RESHAPE]
  taskgraph.edge 41 from 1 to 29 [SCALE [<dense<[3, 2]> : tensor<2xi32>>]]
  taskgraph.edge 100 from 3 to 100
  taskgraph.edge 101 from 4 to 101
  taskgraph.edge 102 from 5 to 102
  taskgraph.edge 103 from 7 to 103
  taskgraph.edge 104 from 8 to 104
  taskgraph.edge 105 from 9 to 105
  taskgraph.edge 106 from 10 to 106
  taskgraph.edge 107 from 12 to 107
  taskgraph.edge 108 from 14 to 108
  taskgraph.edge 109 from 18 to 109
  taskgraph.group 0 [1, 2, 3]
  taskgraph.group 1 []
}
