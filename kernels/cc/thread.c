#include <pthread.h>
#include <stdint.h>

#include "_cgo_export.h"

// nf_thread_main runs the Go function behind handle h (nfRunOnThread).
static void *nf_thread_main(void *h)
{
	nfRunOnThread((uintptr_t)h);
	return 0;
}

// nf_run_on_thread runs the Go function behind h on a new thread and
// waits for it to end: 0, or pthread_create's error.
int nf_run_on_thread(uintptr_t h)
{
	pthread_t t;
	int rc = pthread_create(&t, 0, nf_thread_main, (void *)h);
	if (rc != 0)
		return rc;
	return pthread_join(t, 0);
}
