// RUN: cvm-opt %s -p taskgraph-stats 2>&1 | filecheck %s

// A 3x3 convolution (pad 1) of a 4x4x2 input into 3 features, then ReLU + requantize.
taskgraph.graph {
  taskgraph.input 0 INT_8 <y = 4, x = 4, f = 2> out [[0]]
  taskgraph.sic 1 INT_8 <y = 4, x = 4, r = 2> in [[0]] out [[1]]
  taskgraph.sw 2 INT_8 <f = 3, r = 2, ky = 3, kx = 3> out [[2]] data <INT_8 dense<1> : tensor<3x2x3x3xi8>>
  taskgraph.sb 3 INT_32 <f = 3> out [[3]] data <INT_32 dense<[1, 2, 3]> : tensor<3xi32>>
  taskgraph.cc 4 INT_32 <y = 4, x = 4, f = 3, r = 2, ky = 3, kx = 3, iy = 4, ix = 4> in [[1], [2], [3]] out [[4]] attrs [PAD_UP = 1, PAD_DOWN = 1, PAD_LEFT = 1, PAD_RIGHT = 1] bias VECTOR
  taskgraph.si 5 INT_32 <y = 4, x = 4, f = 3> in [[4]] out [[5]]
  taskgraph.ccmpb 6 TERNARY <y = 4, x = 4, f = 3, ky = 1, kx = 1, iy = 4, ix = 4> in [[5]] out [[6]] attrs [CMP = 0]
  taskgraph.output 7 TERNARY <y = 4, x = 4, f = 3> in [[6]]
  taskgraph.edge 0 from 0 to 1
  taskgraph.edge 1 from 1 to 4
  taskgraph.edge 2 from 2 to 4
  taskgraph.edge 3 from 3 to 4
  taskgraph.edge 4 from 4 to 5
  taskgraph.edge 5 from 5 to 6
  taskgraph.edge 6 from 6 to 7 [RESHAPE]
}

// The table goes to stderr: params of SW and SB, MACs y*x*f*r*ky*kx = 864, storage bytes by precision
// (TERNARY takes 2 bits: 48 values, 12 bytes), traffic bytes of each block's output edges.
// CHECK:      taskgraph-stats: 8 blocks, 7 edges
// CHECK-NEXT: block  kind    precision  shape                                params  MACs  storage B  traffic B
// CHECK-NEXT:     0  INPUT   INT_8      y=4 x=4 f=2                               0     0         32         32
// CHECK-NEXT:     1  SIC     INT_8      y=4 x=4 r=2                               0     0         32         32
// CHECK-NEXT:     2  SW      INT_8      f=3 r=2 ky=3 kx=3                        54     0         54         54
// CHECK-NEXT:     3  SB      INT_32     f=3                                       3     0         12         12
// CHECK-NEXT:     4  CC      INT_32     y=4 x=4 f=3 r=2 ky=3 kx=3 iy=4 ix=4       0   864          0        192
// CHECK-NEXT:     5  SI      INT_32     y=4 x=4 f=3                               0     0        192        192
// CHECK-NEXT:     6  CCMPB   TERNARY    y=4 x=4 f=3 ky=1 kx=1 iy=4 ix=4           0     0          0         12
// CHECK-NEXT:     7  OUTPUT  TERNARY    y=4 x=4 f=3                               0     0         12          0
// CHECK-NEXT: total                                                              57   864        334        526

// The IR is unchanged.
// CHECK:      taskgraph.graph {
// CHECK-NEXT:   taskgraph.input 0 INT_8 <y = 4, x = 4, f = 2> out {{\[\[}}0]]
// CHECK:        taskgraph.edge 6 from 6 to 7 [RESHAPE]
// CHECK-NEXT: }
