"""The loop lowering's helper modules (not passes): op semantics (`ops`), kernel builders (`builder`, `kernels`,
`x86`, `gpu`), views and the arena (`views`, `arena`), the `Target` (`target`), and the cinn path's scalar
arithmetic and micro-kernels (`cinn_scalar`, `cinn_dot`, `cinn_conv`). The passes that use them are beside this
package: `convert_cvm_to_loops`, `cvm_mark_views`, `cvm_bufferize`, `cvm_fuse`, `convert_cinn_to_loops`."""
