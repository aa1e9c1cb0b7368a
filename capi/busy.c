// nf_worker_busy: the background tuner's (NEOFLOW_TUNE=background) job
// count, odd while it runs a job and one more at each start and end;
// written by the Go core (busy.go), read by Python through ctypes without
// a call (neoflow/threadshare.py), which lowers PyTorch's own thread count
// by one while it is odd.

int nf_worker_busy;
