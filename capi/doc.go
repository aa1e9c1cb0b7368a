// Command capi is built with -buildmode=c-shared into libneoflow.so, the one
// Go library a Python process loads. It only exports nf_* functions, each a
// thin wrapper over a torchbridge call that returns an error.
//
// Conventions for every export:
//
//   - Control-plane calls take a serialized protobuf request (pointer and
//     length) and write a serialized response to *out / *outLen.
//   - The return value is NULL on success, or a NUL-terminated error text.
//   - Every buffer returned to C (responses and error texts) is allocated
//     with C malloc and owned by the caller, who frees it with nf_free.
//     No Go pointer is ever returned.
//   - Panics are recovered and returned as error texts.
//   - nf_launch is the data plane: it takes only integers and pointers and
//     allocates nothing unless it fails. It is C (launch.c): a C kernel
//     the Go core has loaded runs from a copy of its launch table without
//     entering Go; anything else goes to Go's nf_launch_go.
package main

func main() {}
