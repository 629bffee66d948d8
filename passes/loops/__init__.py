"""The loop lowering's helper modules (not passes): the planner (`plan`), the net read off cvm IR (`ir`), op
semantics (`ops`), kernel builders (`builder`, `kernels`, `gpu`), views and the arena (`views`, `arena`), the
`Target` (`target`), and the cinn path's scalar arithmetic (`cinn_scalar`). The passes that use them are beside
this package: `convert_cvm_to_loops`, `cvm_mark_views`, `cvm_bufferize`, `cvm_fuse`, `convert_cinn_to_loops`."""
