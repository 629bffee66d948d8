from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskBlockType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SI: _ClassVar[TaskBlockType]
    SW: _ClassVar[TaskBlockType]
    SIC2D: _ClassVar[TaskBlockType]
    SIFC: _ClassVar[TaskBlockType]
    SIC: _ClassVar[TaskBlockType]
    SB: _ClassVar[TaskBlockType]
    SWFC: _ClassVar[TaskBlockType]
    SW2D: _ClassVar[TaskBlockType]
    CADD: _ClassVar[TaskBlockType]
    CVVH: _ClassVar[TaskBlockType]
    CVM: _ClassVar[TaskBlockType]
    CC: _ClassVar[TaskBlockType]
    CAX: _ClassVar[TaskBlockType]
    CC2D: _ClassVar[TaskBlockType]
    CVS: _ClassVar[TaskBlockType]
    CCMPB: _ClassVar[TaskBlockType]
    CAVG: _ClassVar[TaskBlockType]
    CCMPS: _ClassVar[TaskBlockType]
    CLUT: _ClassVar[TaskBlockType]
    CLIF: _ClassVar[TaskBlockType]
    INPUT: _ClassVar[TaskBlockType]
    OUTPUT: _ClassVar[TaskBlockType]
    TASK_NULL: _ClassVar[TaskBlockType]

class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INT_8: _ClassVar[Precision]
    UINT_8: _ClassVar[Precision]
    INT_16: _ClassVar[Precision]
    UINT_16: _ClassVar[Precision]
    INT_32: _ClassVar[Precision]
    UINT_32: _ClassVar[Precision]
    FLOAT_16: _ClassVar[Precision]
    FLOAT_32: _ClassVar[Precision]
    TERNARY: _ClassVar[Precision]
    INT_28: _ClassVar[Precision]
    UINT_4: _ClassVar[Precision]
    INT_9: _ClassVar[Precision]

class BiasType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR: _ClassVar[BiasType]
    CONSTANT: _ClassVar[BiasType]

class AttributeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    KERNEL_X: _ClassVar[AttributeType]
    KERNEL_Y: _ClassVar[AttributeType]
    STRIDE_X: _ClassVar[AttributeType]
    STRIDE_Y: _ClassVar[AttributeType]
    PAD_UP: _ClassVar[AttributeType]
    PAD_DOWN: _ClassVar[AttributeType]
    PAD_LEFT: _ClassVar[AttributeType]
    PAD_RIGHT: _ClassVar[AttributeType]
    CMP: _ClassVar[AttributeType]
    CONSTANT_A: _ClassVar[AttributeType]
    CONSTANT_B: _ClassVar[AttributeType]
    DILATION_X: _ClassVar[AttributeType]
    DILATION_Y: _ClassVar[AttributeType]
    BIT_SHIGT_NUM: _ClassVar[AttributeType]
    VTH0: _ClassVar[AttributeType]
    VTH_ALPHA: _ClassVar[AttributeType]
    VTH_BETA: _ClassVar[AttributeType]
    VTH_INCRE: _ClassVar[AttributeType]
    VR: _ClassVar[AttributeType]
    VL: _ClassVar[AttributeType]
    VLEAKY_ALPHA: _ClassVar[AttributeType]
    VLEAKY_BETA: _ClassVar[AttributeType]
    DV: _ClassVar[AttributeType]
    REF_LEN: _ClassVar[AttributeType]
    TW_CNT: _ClassVar[AttributeType]
    VINIT: _ClassVar[AttributeType]
    TW_LEN: _ClassVar[AttributeType]
    SEED: _ClassVar[AttributeType]
    LUT_DW: _ClassVar[AttributeType]
    VTH_ADPT_EN: _ClassVar[AttributeType]
    VLEAKY_ADPT_EN: _ClassVar[AttributeType]
    TW_EN: _ClassVar[AttributeType]
    RESET_MODE: _ClassVar[AttributeType]
    FIRE_TYPE: _ClassVar[AttributeType]
    VM_CONST_EN: _ClassVar[AttributeType]
    VM_CONST: _ClassVar[AttributeType]
    VTHETA_CONST_EN: _ClassVar[AttributeType]
    VTHETA_CONST: _ClassVar[AttributeType]

class RearrangeInfoType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDENTITY: _ClassVar[RearrangeInfoType]
    RESHAPE: _ClassVar[RearrangeInfoType]
    PERMUTE: _ClassVar[RearrangeInfoType]
    ROTATE: _ClassVar[RearrangeInfoType]
    SHIFT: _ClassVar[RearrangeInfoType]
    SCALE: _ClassVar[RearrangeInfoType]
    SHEAR: _ClassVar[RearrangeInfoType]
    REFLECT: _ClassVar[RearrangeInfoType]
    AFFINE: _ClassVar[RearrangeInfoType]
    PROJECT: _ClassVar[RearrangeInfoType]
    SHUFFLE: _ClassVar[RearrangeInfoType]
SI: TaskBlockType
SW: TaskBlockType
SIC2D: TaskBlockType
SIFC: TaskBlockType
SIC: TaskBlockType
SB: TaskBlockType
SWFC: TaskBlockType
SW2D: TaskBlockType
CADD: TaskBlockType
CVVH: TaskBlockType
CVM: TaskBlockType
CC: TaskBlockType
CAX: TaskBlockType
CC2D: TaskBlockType
CVS: TaskBlockType
CCMPB: TaskBlockType
CAVG: TaskBlockType
CCMPS: TaskBlockType
CLUT: TaskBlockType
CLIF: TaskBlockType
INPUT: TaskBlockType
OUTPUT: TaskBlockType
TASK_NULL: TaskBlockType
INT_8: Precision
UINT_8: Precision
INT_16: Precision
UINT_16: Precision
INT_32: Precision
UINT_32: Precision
FLOAT_16: Precision
FLOAT_32: Precision
TERNARY: Precision
INT_28: Precision
UINT_4: Precision
INT_9: Precision
VECTOR: BiasType
CONSTANT: BiasType
KERNEL_X: AttributeType
KERNEL_Y: AttributeType
STRIDE_X: AttributeType
STRIDE_Y: AttributeType
PAD_UP: AttributeType
PAD_DOWN: AttributeType
PAD_LEFT: AttributeType
PAD_RIGHT: AttributeType
CMP: AttributeType
CONSTANT_A: AttributeType
CONSTANT_B: AttributeType
DILATION_X: AttributeType
DILATION_Y: AttributeType
BIT_SHIGT_NUM: AttributeType
VTH0: AttributeType
VTH_ALPHA: AttributeType
VTH_BETA: AttributeType
VTH_INCRE: AttributeType
VR: AttributeType
VL: AttributeType
VLEAKY_ALPHA: AttributeType
VLEAKY_BETA: AttributeType
DV: AttributeType
REF_LEN: AttributeType
TW_CNT: AttributeType
VINIT: AttributeType
TW_LEN: AttributeType
SEED: AttributeType
LUT_DW: AttributeType
VTH_ADPT_EN: AttributeType
VLEAKY_ADPT_EN: AttributeType
TW_EN: AttributeType
RESET_MODE: AttributeType
FIRE_TYPE: AttributeType
VM_CONST_EN: AttributeType
VM_CONST: AttributeType
VTHETA_CONST_EN: AttributeType
VTHETA_CONST: AttributeType
IDENTITY: RearrangeInfoType
RESHAPE: RearrangeInfoType
PERMUTE: RearrangeInfoType
ROTATE: RearrangeInfoType
SHIFT: RearrangeInfoType
SCALE: RearrangeInfoType
SHEAR: RearrangeInfoType
REFLECT: RearrangeInfoType
AFFINE: RearrangeInfoType
PROJECT: RearrangeInfoType
SHUFFLE: RearrangeInfoType

class Shape(_message.Message):
    __slots__ = ("nx", "ny", "nf", "nr", "nkx", "nky", "niy", "nix", "n_branch", "extra_dimensions")
    NX_FIELD_NUMBER: _ClassVar[int]
    NY_FIELD_NUMBER: _ClassVar[int]
    NF_FIELD_NUMBER: _ClassVar[int]
    NR_FIELD_NUMBER: _ClassVar[int]
    NKX_FIELD_NUMBER: _ClassVar[int]
    NKY_FIELD_NUMBER: _ClassVar[int]
    NIY_FIELD_NUMBER: _ClassVar[int]
    NIX_FIELD_NUMBER: _ClassVar[int]
    N_BRANCH_FIELD_NUMBER: _ClassVar[int]
    EXTRA_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    nx: int
    ny: int
    nf: int
    nr: int
    nkx: int
    nky: int
    niy: int
    nix: int
    n_branch: int
    extra_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, nx: _Optional[int] = ..., ny: _Optional[int] = ..., nf: _Optional[int] = ..., nr: _Optional[int] = ..., nkx: _Optional[int] = ..., nky: _Optional[int] = ..., niy: _Optional[int] = ..., nix: _Optional[int] = ..., n_branch: _Optional[int] = ..., extra_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class Tensor(_message.Message):
    __slots__ = ("dims", "precision", "float_data", "int32_data", "uint32_data", "name")
    DIMS_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    FLOAT_DATA_FIELD_NUMBER: _ClassVar[int]
    INT32_DATA_FIELD_NUMBER: _ClassVar[int]
    UINT32_DATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    dims: _containers.RepeatedScalarFieldContainer[int]
    precision: Precision
    float_data: _containers.RepeatedScalarFieldContainer[float]
    int32_data: _containers.RepeatedScalarFieldContainer[int]
    uint32_data: _containers.RepeatedScalarFieldContainer[int]
    name: str
    def __init__(self, dims: _Optional[_Iterable[int]] = ..., precision: _Optional[_Union[Precision, str]] = ..., float_data: _Optional[_Iterable[float]] = ..., int32_data: _Optional[_Iterable[int]] = ..., uint32_data: _Optional[_Iterable[int]] = ..., name: _Optional[str] = ...) -> None: ...

class Attribute(_message.Message):
    __slots__ = ("type", "precision", "int_value", "float_value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    type: AttributeType
    precision: Precision
    int_value: int
    float_value: float
    def __init__(self, type: _Optional[_Union[AttributeType, str]] = ..., precision: _Optional[_Union[Precision, str]] = ..., int_value: _Optional[int] = ..., float_value: _Optional[float] = ...) -> None: ...

class EdgeInterface(_message.Message):
    __slots__ = ("position", "size", "edge_id")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    EDGE_ID_FIELD_NUMBER: _ClassVar[int]
    position: Shape
    size: Shape
    edge_id: int
    def __init__(self, position: _Optional[_Union[Shape, _Mapping]] = ..., size: _Optional[_Union[Shape, _Mapping]] = ..., edge_id: _Optional[int] = ...) -> None: ...

class EdgeCluster(_message.Message):
    __slots__ = ("shape", "interfaces")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    INTERFACES_FIELD_NUMBER: _ClassVar[int]
    shape: Shape
    interfaces: _containers.RepeatedCompositeFieldContainer[EdgeInterface]
    def __init__(self, shape: _Optional[_Union[Shape, _Mapping]] = ..., interfaces: _Optional[_Iterable[_Union[EdgeInterface, _Mapping]]] = ...) -> None: ...

class TaskBlock(_message.Message):
    __slots__ = ("id", "type", "precision", "shape", "input_clusters", "output_clusters", "data", "attributes", "is_virtual", "major_task_id", "pipeline_num", "bias_type", "socket_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    INPUT_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    IS_VIRTUAL_FIELD_NUMBER: _ClassVar[int]
    MAJOR_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_NUM_FIELD_NUMBER: _ClassVar[int]
    BIAS_TYPE_FIELD_NUMBER: _ClassVar[int]
    SOCKET_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    type: TaskBlockType
    precision: Precision
    shape: Shape
    input_clusters: _containers.RepeatedCompositeFieldContainer[EdgeCluster]
    output_clusters: _containers.RepeatedCompositeFieldContainer[EdgeCluster]
    data: Tensor
    attributes: _containers.RepeatedCompositeFieldContainer[Attribute]
    is_virtual: bool
    major_task_id: int
    pipeline_num: int
    bias_type: BiasType
    socket_id: int
    def __init__(self, id: _Optional[int] = ..., type: _Optional[_Union[TaskBlockType, str]] = ..., precision: _Optional[_Union[Precision, str]] = ..., shape: _Optional[_Union[Shape, _Mapping]] = ..., input_clusters: _Optional[_Iterable[_Union[EdgeCluster, _Mapping]]] = ..., output_clusters: _Optional[_Iterable[_Union[EdgeCluster, _Mapping]]] = ..., data: _Optional[_Union[Tensor, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[Attribute, _Mapping]]] = ..., is_virtual: _Optional[bool] = ..., major_task_id: _Optional[int] = ..., pipeline_num: _Optional[int] = ..., bias_type: _Optional[_Union[BiasType, str]] = ..., socket_id: _Optional[int] = ...) -> None: ...

class RearrangeInfo(_message.Message):
    __slots__ = ("type", "matrix")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MATRIX_FIELD_NUMBER: _ClassVar[int]
    type: RearrangeInfoType
    matrix: _containers.RepeatedCompositeFieldContainer[Tensor]
    def __init__(self, type: _Optional[_Union[RearrangeInfoType, str]] = ..., matrix: _Optional[_Iterable[_Union[Tensor, _Mapping]]] = ...) -> None: ...

class Edge(_message.Message):
    __slots__ = ("id", "src_block_id", "dst_block_id", "rearrange_info")
    ID_FIELD_NUMBER: _ClassVar[int]
    SRC_BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    DST_BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    REARRANGE_INFO_FIELD_NUMBER: _ClassVar[int]
    id: int
    src_block_id: int
    dst_block_id: int
    rearrange_info: _containers.RepeatedCompositeFieldContainer[RearrangeInfo]
    def __init__(self, id: _Optional[int] = ..., src_block_id: _Optional[int] = ..., dst_block_id: _Optional[int] = ..., rearrange_info: _Optional[_Iterable[_Union[RearrangeInfo, _Mapping]]] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("group_id", "block_ids")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_IDS_FIELD_NUMBER: _ClassVar[int]
    group_id: int
    block_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, group_id: _Optional[int] = ..., block_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class TestConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TaskGraph(_message.Message):
    __slots__ = ("blocks", "edges", "groups", "test_config")
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TEST_CONFIG_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedCompositeFieldContainer[TaskBlock]
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    groups: _containers.RepeatedCompositeFieldContainer[Group]
    test_config: TestConfig
    def __init__(self, blocks: _Optional[_Iterable[_Union[TaskBlock, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[Group, _Mapping]]] = ..., test_config: _Optional[_Union[TestConfig, _Mapping]] = ...) -> None: ...
