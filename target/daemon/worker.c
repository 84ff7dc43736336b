/*
 * target/daemon/worker.c - start and stop of the background thread that
 * events.c and health.c each own (see worker.h).
 *
 * Layer: base (target/daemon/README.md "Layers"), the bottom. May call:
 * libc (pthreads). Calls no other file of the folder; its owners wait on
 * its condition variable and read its stop flag themselves.
 */
#include "target/daemon/worker.h"

void worker_init(struct worker *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->stop = false;
	w->started = false;
}

int worker_start(struct worker *w, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(&w->thread, NULL, fn, arg);

	if (rc)
		return -rc;
	w->started = true;
	return 0;
}

void worker_stop(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->thread, NULL);
}

void worker_fini(struct worker *w)
{
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}
