// Calling cvm-runtime's C API from Go through cgo, as a Cortex node does, with the library `cvm-aot lib` writes
// (tested by tests/runtime/test_aot.py where Go is installed):
//
//	cvm-aot lib -o DIR/libcvm.so --header DIR/c_api.h
//	cvm-aot build model.json params.bin --store STORE
//	CGO_CFLAGS=-IDIR CGO_LDFLAGS="-LDIR -Wl,-rpath,DIR" go build -o infer .
//	CVMC_AOT_STORE=STORE ./infer model.json params.bin input.bin > output.bin
//
// The output is CVMAPIInference's bytes; the gas goes to stderr; the exit status is the API's (0, 1 or 2).
package main

/*
#cgo LDFLAGS: -lcvm
#include <stdlib.h>
#include "c_api.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// fail reports a failed call of the API and ends with its status.
func fail(call string, status C.int) {
	fmt.Fprintf(os.Stderr, "%s: status %d: %s\n", call, int(status), C.GoString(C.CVMGetLastError()))
	os.Exit(int(status))
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: infer model.json params.bin input.bin")
		os.Exit(64)
	}
	var files [3]unsafe.Pointer // C copies: the API keeps no pointer into Go memory
	var sizes [3]int
	for i, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		files[i], sizes[i] = C.CBytes(append(data, 0)), len(data)
		defer C.free(files[i])
	}
	var net unsafe.Pointer
	status := C.CVMAPILoadModel((*C.char)(files[0]), C.int(sizes[0]), (*C.char)(files[1]), C.int(sizes[1]), &net, 0, 0)
	if status != 0 {
		fail("CVMAPILoadModel", status)
	}
	defer C.CVMAPIFreeModel(net)
	var gas, outLen C.ulonglong
	if status = C.CVMAPIGetGasFromModel(net, &gas); status != 0 {
		fail("CVMAPIGetGasFromModel", status)
	}
	if status = C.CVMAPIGetOutputLength(net, &outLen); status != 0 {
		fail("CVMAPIGetOutputLength", status)
	}
	out := C.calloc(C.size_t(outLen)+1, 1)
	defer C.free(out)
	if status = C.CVMAPIInference(net, (*C.char)(files[2]), C.int(sizes[2]), (*C.char)(out)); status != 0 {
		fail("CVMAPIInference", status)
	}
	fmt.Fprintf(os.Stderr, "gas %d\n", uint64(gas))
	os.Stdout.Write(C.GoBytes(out, C.int(outLen)))
}
