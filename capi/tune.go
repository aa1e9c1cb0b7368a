package main

/*
#include <stdint.h>
*/
import "C"

import (
	"unsafe"

	"github.com/golang/protobuf/proto"

	"github.com/neoflow/neoflow/api"
)

// Tuning: a session measures one configuration per nf_tune_step call, so
// Python draws its progress bar and sees Ctrl-C between steps.

//export nf_tune_begin
func nf_tune_begin(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.TuneRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.TuneBegin(m.(*api.TuneRequest))
	})
}

//export nf_tune_step
func nf_tune_step(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.TuneStepRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.TuneStep(m.(*api.TuneStepRequest))
	})
}

//export nf_tune_end
func nf_tune_end(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.TuneStepRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.TuneEnd(m.(*api.TuneStepRequest))
	})
}

//export nf_tunedb
func nf_tunedb(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.TuneDBRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.TuneDB(m.(*api.TuneDBRequest))
	})
}

//export nf_bundle_save
func nf_bundle_save(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.BundleSaveRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.SaveBundle(m.(*api.BundleSaveRequest))
	})
}

//export nf_tune_status
func nf_tune_status(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.Empty{}, func(proto.Message) (proto.Message, error) {
		return rt.TuneStatus(), nil
	})
}
