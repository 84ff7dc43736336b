/*
 * net/ev.c - the reactor: epoll for fds, one timerfd for all timers, one
 * eventfd for calls from other threads.
 *
 * Loop life:
 *   CREATED  --ev_run()-->  RUNNING  --ev_loop_stop()-->  STOPPED (ev_run returns)
 *   STOPPED  --ev_loop_destroy()--> freed
 *
 * Timer states (struct ev_timer.state):
 *   PENDING  --deadline reached, ev_run()-->          FIRING (callback runs)
 *   PENDING  --ev_timer_cancel()-->                    freed
 *   FIRING   --callback returns-->                     freed
 *   FIRING   --ev_timer_cancel() from the callback-->  CANCELLED_FIRING --> freed
 *
 * One iteration: the prepare hooks (ev_prepare_add) until none reports work
 * or EV_PREPARE_ROUNDS passed (then epoll_wait does not sleep), epoll_wait,
 * dispatch every event fetched. After a stop the hooks run once more.
 *
 * Invariants (ev_loop_check):
 *   - the timer list is sorted by deadline and every member is PENDING;
 *   - loop->armed is the head's deadline, or 0 with an empty list, outside
 *     of timer processing;
 *   - fds[fd].fn != NULL exactly for the fds registered with epoll by a
 *     caller (the internal timerfd and callfd are not in the table).
 *
 * Layer: net, reactor and sockets (net/README.md "Layers"). May call:
 * conf/ (clock, RTGT_CHECK), libc, Linux system calls; not sock.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "net/net_int.h"

#define EV_MAX_EVENTS 128
/* epoll data for the internal fds: high bit set, never a caller's gen. */
#define EV_INTERNAL_TIMER 0xffffffff00000001ull
#define EV_INTERNAL_CALL 0xffffffff00000002ull

static __thread struct ev_loop *ev_tls_loop;

int ev_loop_create(unsigned id, struct ev_loop **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ev_loop *l;
	int rc;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->id = id;
	l->next_gen = 1;
	l->now = conf_mono_ms();
	pthread_mutex_init(&l->call_lock, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		rc = -errno;
		goto undo_alloc;
	}
	l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->timerfd < 0) {
		rc = -errno;
		goto undo_epoll;
	}
	l->callfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->callfd < 0) {
		rc = -errno;
		goto undo_timerfd;
	}
	ev.data.u64 = EV_INTERNAL_TIMER;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->timerfd, &ev) < 0) {
		rc = -errno;
		goto undo_callfd;
	}
	ev.data.u64 = EV_INTERNAL_CALL;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->callfd, &ev) < 0) {
		rc = -errno;
		goto undo_callfd;
	}
	*out = l;
	return 0;

undo_callfd:
	close(l->callfd);
undo_timerfd:
	close(l->timerfd);
undo_epoll:
	close(l->epfd);
undo_alloc:
	pthread_mutex_destroy(&l->call_lock);
	free(l);
	return rc;
}

void ev_loop_destroy(struct ev_loop *l)
{
	struct ev_timer *t, *tn;
	struct ev_call_node *c, *cn;

	if (!l)
		return;
	for (t = l->timers; t; t = tn) {
		tn = t->next;
		free(t);
	}
	for (c = l->calls_head; c; c = cn) {
		cn = c->next;
		free(c);
	}
	close(l->callfd);
	close(l->timerfd);
	close(l->epfd);
	pthread_mutex_destroy(&l->call_lock);
	free(l->fds);
	free(l);
}

unsigned ev_loop_id(const struct ev_loop *l)
{
	return l->id;
}

struct ev_loop *ev_loop_current(void)
{
	return ev_tls_loop;
}

uint64_t ev_now_ms(struct ev_loop *l)
{
	return l->now;
}

void ev_loop_stop(struct ev_loop *l)
{
	uint64_t one = 1;

	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	/* wake the loop; a full counter (EAGAIN) already means "awake" */
	if (write(l->callfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;
}

/* ---- fds ---- */

static int fdtab_reserve(struct ev_loop *l, int fd)
{
	unsigned n;
	struct ev_fdent *nt;

	if ((unsigned)fd < l->nfds)
		return 0;
	n = l->nfds ? l->nfds : 64;
	while (n <= (unsigned)fd)
		n *= 2;
	nt = realloc(l->fds, n * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	memset(nt + l->nfds, 0, (n - l->nfds) * sizeof(*nt));
	l->fds = nt;
	l->nfds = n;
	return 0;
}

int ev_io_add(struct ev_loop *l, int fd, uint32_t events, ev_io_fn fn, void *arg)
{
	struct epoll_event ev;
	struct ev_fdent *e;
	int rc;

	if (fd < 0 || !fn)
		return -EINVAL;
	rc = fdtab_reserve(l, fd);
	if (rc)
		return rc;
	e = &l->fds[fd];
	if (e->fn)
		return -EEXIST;
	e->gen = l->next_gen++;
	if (l->next_gen == 0xffffffffu)
		l->next_gen = 1;
	ev.events = events;
	ev.data.u64 = ((uint64_t)e->gen << 32) | (uint32_t)fd;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	e->fn = fn;
	e->arg = arg;
	e->events = events;
	return 0;
}

int ev_io_mod(struct ev_loop *l, int fd, uint32_t events)
{
	struct epoll_event ev;
	struct ev_fdent *e;

	if (fd < 0 || (unsigned)fd >= l->nfds || !l->fds[fd].fn)
		return -ENOENT;
	e = &l->fds[fd];
	if (e->events == events)
		return 0;
	ev.events = events;
	ev.data.u64 = ((uint64_t)e->gen << 32) | (uint32_t)fd;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	e->events = events;
	return 0;
}

int ev_io_del(struct ev_loop *l, int fd)
{
	struct ev_fdent *e;
	int rc = 0;

	if (fd < 0 || (unsigned)fd >= l->nfds || !l->fds[fd].fn)
		return -ENOENT;
	e = &l->fds[fd];
	if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0)
		rc = -errno;
	e->fn = NULL;
	e->arg = NULL;
	e->events = 0;
	/* bump gen so that events already fetched for this fd are dropped */
	e->gen = 0;
	return rc;
}

/* ---- timers ---- */

static void timer_arm(struct ev_loop *l)
{
	struct itimerspec its;
	uint64_t when;

	memset(&its, 0, sizeof(its));
	if (!l->timers) {
		if (l->armed) {
			timerfd_settime(l->timerfd, 0, &its, NULL);
			l->armed = 0;
		}
		return;
	}
	when = l->timers->deadline;
	if (when == l->armed)
		return;
	/* timerfd wants absolute CLOCK_MONOTONIC time; 0 would disarm */
	its.it_value.tv_sec = (time_t)(when / 1000u);
	its.it_value.tv_nsec = (long)(when % 1000u) * 1000000L;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	l->armed = when;
}

static void timer_link(struct ev_loop *l, struct ev_timer *t)
{
	struct ev_timer *p = NULL, *c = l->timers;

	while (c && c->deadline <= t->deadline) {
		p = c;
		c = c->next;
	}
	t->prev = p;
	t->next = c;
	if (c)
		c->prev = t;
	if (p)
		p->next = t;
	else
		l->timers = t;
}

static void timer_unlink(struct ev_loop *l, struct ev_timer *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		l->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

struct ev_timer *ev_timer_add(struct ev_loop *l, uint64_t ms, ev_timer_fn fn, void *arg)
{
	struct ev_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->deadline = conf_mono_ms() + ms;
	t->fn = fn;
	t->arg = arg;
	t->state = EV_TIMER_PENDING;
	timer_link(l, t);
	timer_arm(l);
	return t;
}

void ev_timer_cancel(struct ev_loop *l, struct ev_timer *t)
{
	if (!t)
		return;
	switch (t->state) {
	case EV_TIMER_PENDING:
		timer_unlink(l, t);
		free(t);
		timer_arm(l);
		break;
	case EV_TIMER_FIRING:
		t->state = EV_TIMER_CANCELLED_FIRING;
		break;
	case EV_TIMER_CANCELLED_FIRING:
		break;
	}
}

static void timers_run(struct ev_loop *l)
{
	uint64_t exp;
	struct ev_timer *t;

	if (read(l->timerfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
		return;
	l->armed = 0;
	l->now = conf_mono_ms();
	l->in_timers = 1;
	while ((t = l->timers) && t->deadline <= l->now) {
		timer_unlink(l, t);
		t->state = EV_TIMER_FIRING;
		t->fn(l, t, t->arg);
		free(t);
	}
	l->in_timers = 0;
	timer_arm(l);
	RTGT_CHECK(ev_loop_check(l) == 0);
}

/* ---- cross-thread calls ---- */

int ev_call(struct ev_loop *l, ev_call_fn fn, void *arg)
{
	struct ev_call_node *c = malloc(sizeof(*c));
	uint64_t one = 1;

	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->next = NULL;
	pthread_mutex_lock(&l->call_lock);
	if (l->calls_tail)
		l->calls_tail->next = c;
	else
		l->calls_head = c;
	l->calls_tail = c;
	pthread_mutex_unlock(&l->call_lock);
	if (write(l->callfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

static void calls_run(struct ev_loop *l)
{
	struct ev_call_node *c, *next;
	uint64_t v;

	if (read(l->callfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&l->call_lock);
	c = l->calls_head;
	l->calls_head = l->calls_tail = NULL;
	pthread_mutex_unlock(&l->call_lock);
	for (; c; c = next) {
		next = c->next;
		c->fn(c->arg);
		free(c);
	}
}

/* ---- prepare hooks ---- */

int ev_prepare_add(struct ev_loop *l, ev_prepare_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	if (l->n_prep >= EV_PREPARE_MAX)
		return -ENOSPC;
	l->prep[l->n_prep].fn = fn;
	l->prep[l->n_prep].arg = arg;
	l->n_prep++;
	return 0;
}

int ev_prepare_del(struct ev_loop *l, ev_prepare_fn fn, void *arg)
{
	for (unsigned i = 0; i < l->n_prep; i++) {
		if (l->prep[i].fn != fn || l->prep[i].arg != arg)
			continue;
		memmove(&l->prep[i], &l->prep[i + 1], (l->n_prep - i - 1) * sizeof(l->prep[0]));
		l->n_prep--;
		return 0;
	}
	return -ENOENT;
}

/* Runs the hooks; true when they still had work after the last round. */
static bool prepare_run(struct ev_loop *l)
{
	for (unsigned round = 0; round < EV_PREPARE_ROUNDS; round++) {
		bool any = false;

		/* a hook may delete itself or another: index, not pointer */
		for (unsigned i = 0; i < l->n_prep; i++)
			any |= l->prep[i].fn(l, l->prep[i].arg);
		if (!any)
			return false;
	}
	return true;
}

/* ---- the loop ---- */

int ev_run(struct ev_loop *l)
{
	struct epoll_event evs[EV_MAX_EVENTS];
	bool busy;
	int n, i;

	ev_tls_loop = l;
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		busy = l->n_prep && prepare_run(l);
		n = epoll_wait(l->epfd, evs, EV_MAX_EVENTS, busy ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ev_tls_loop = NULL;
			return -errno;
		}
		l->now = conf_mono_ms();
		for (i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;
			struct ev_fdent *e;
			int fd;

			if (d == EV_INTERNAL_TIMER) {
				timers_run(l);
				continue;
			}
			if (d == EV_INTERNAL_CALL) {
				calls_run(l);
				continue;
			}
			fd = (int)(uint32_t)d;
			if ((unsigned)fd >= l->nfds)
				continue;
			e = &l->fds[fd];
			/* deleted (or deleted and re-added) earlier in this batch */
			if (!e->fn || e->gen != (uint32_t)(d >> 32))
				continue;
			e->fn(l, fd, evs[i].events, e->arg);
		}
	}
	/* what the last batch gathered still goes out */
	if (l->n_prep)
		prepare_run(l);
	ev_tls_loop = NULL;
	return 0;
}

int ev_loop_check(const struct ev_loop *l)
{
	const struct ev_timer *t;

	for (t = l->timers; t; t = t->next) {
		if (t->state != EV_TIMER_PENDING)
			return -EFAULT;
		if (t->next && t->next->deadline < t->deadline)
			return -EFAULT;
		if (t->next && t->next->prev != t)
			return -EFAULT;
	}
	if (!l->in_timers && l->timers && l->armed != l->timers->deadline)
		return -EFAULT;
	return 0;
}
