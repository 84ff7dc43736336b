/*
 * target/daemon/worker.h - the one background thread of events.c and of
 * health.c: a mutex and a condition variable guarding the owner's state, a
 * stop flag under that mutex, and the thread itself. Both owners start and
 * stop their thread the same way; this is that way, written once.
 *
 * The owner embeds a struct worker, keeps its own fields under w.mu, waits
 * on w.cv and leaves its loop when w.stop is set. worker_stop() sets
 * w.stop, signals w.cv and joins the thread (if it was started); the owner
 * then frees what its thread used and calls worker_fini().
 */
#ifndef RTGT_DAEMON_WORKER_H
#define RTGT_DAEMON_WORKER_H

#include <pthread.h>
#include <stdbool.h>

struct worker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;           /* under mu: the thread must leave its loop */
	bool started;        /* thread runs and must be joined */
	pthread_t thread;
};

/* Initialises @w's mutex and condition variable; no thread yet. */
void worker_init(struct worker *w);

/* Starts @fn(@arg) on @w's thread. Returns 0 or a negative errno (the
 * thread is then not started and worker_stop() joins nothing). */
int worker_start(struct worker *w, void *(*fn)(void *), void *arg);

/* Sets @w->stop under the mutex, signals the condition variable and joins
 * the thread if it was started. Safe on a never-started worker. */
void worker_stop(struct worker *w);

/* Destroys the mutex and condition variable (after worker_stop()). */
void worker_fini(struct worker *w);

#endif
