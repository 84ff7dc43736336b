/*
 * net/net_int.h - private to net/: the loop's internals.
 */
#ifndef RTGT_NET_INT_H
#define RTGT_NET_INT_H

#include <pthread.h>
#include <stdint.h>

#include "net/net.h"

/* One registered fd. gen changes on every ev_io_add so that events fetched
 * by epoll_wait for an fd that was deleted (and maybe reused) in the same
 * batch are recognised as stale and dropped. */
struct ev_fdent {
	ev_io_fn fn;                /* NULL: slot free */
	void *arg;                  /* caller's */
	uint32_t gen;
	uint32_t events;
};

enum ev_timer_state {
	EV_TIMER_PENDING,           /* in the loop's list */
	EV_TIMER_FIRING,            /* unlinked, callback running */
	EV_TIMER_CANCELLED_FIRING,  /* cancelled from its own callback */
};

struct ev_timer {
	uint64_t deadline;          /* ev_now_ms() scale */
	ev_timer_fn fn;
	void *arg;
	enum ev_timer_state state;
	struct ev_timer *prev, *next; /* sorted by deadline while PENDING */
};

struct ev_call_node {
	ev_call_fn fn;
	void *arg;
	struct ev_call_node *next;
};

struct ev_prepare {
	ev_prepare_fn fn;
	void *arg;
};

struct ev_loop {
	unsigned id;
	int epfd;
	int timerfd;
	int callfd;                 /* eventfd: cross-thread wake-up */
	volatile int stop;
	uint64_t now;
	struct ev_fdent *fds;       /* owned, indexed by fd, nfds entries */
	unsigned nfds;
	uint32_t next_gen;
	struct ev_timer *timers;    /* owned list head, earliest first */
	uint64_t armed;             /* deadline the timerfd is set to, 0: none */
	int in_timers;              /* inside timers_run(): armed may lag */
	pthread_mutex_t call_lock;  /* protects calls_head/tail */
	struct ev_call_node *calls_head, *calls_tail;
	struct ev_prepare prep[EV_PREPARE_MAX]; /* hooks, the first n_prep used */
	unsigned n_prep;
};

/* Debug check of the loop's invariants (timer list sorted, internal fds
 * registered); returns 0 or -EFAULT. */
int ev_loop_check(const struct ev_loop *loop);

#endif
