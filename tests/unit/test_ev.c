/* tests/unit/test_ev.c - net/ev.c: timers, fds deleted from callbacks,
 * cross-thread calls, prepare hooks. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/net_int.h"
#include "tests/lib/ckmain.h"

static int order[8];
static int norder;

static void tfire(struct ev_loop *l, struct ev_timer *t, void *arg)
{
	order[norder++] = (int)(long)arg;
	ck_assert_int_eq(ev_loop_check(l), 0);
	if (norder == 3)
		ev_loop_stop(l);
}

START_TEST(t01_timers_fire_in_deadline_order)
{
	struct ev_loop *l;
	struct ev_timer *c;

	ck_assert_int_eq(ev_loop_create(0, &l), 0);
	norder = 0;
	ev_timer_add(l, 30, tfire, (void *)3L);
	ev_timer_add(l, 10, tfire, (void *)1L);
	c = ev_timer_add(l, 15, tfire, (void *)99L);
	ev_timer_add(l, 20, tfire, (void *)2L);
	ev_timer_cancel(l, c);
	ck_assert_int_eq(ev_loop_check(l), 0);
	ck_assert_int_eq(ev_run(l), 0);
	ck_assert_int_eq(norder, 3);
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(order[1], 2);
	ck_assert_int_eq(order[2], 3);
	ev_loop_destroy(l);
}
END_TEST

static void self_cancel(struct ev_loop *l, struct ev_timer *t, void *arg)
{
	ev_timer_cancel(l, t); /* must be harmless */
	*(int *)arg += 1;
	ev_loop_stop(l);
}

START_TEST(t02_timer_cancel_from_own_callback)
{
	struct ev_loop *l;
	int n = 0;

	ck_assert_int_eq(ev_loop_create(0, &l), 0);
	ev_timer_add(l, 1, self_cancel, &n);
	ck_assert_int_eq(ev_run(l), 0);
	ck_assert_int_eq(n, 1);
	ev_loop_destroy(l);
}
END_TEST

struct pair {
	int a[2], b[2];
	int hits_a, hits_b;
};

/* Both pipes are readable in the same batch; a's callback closes b. */
static void on_b(struct ev_loop *l, int fd, uint32_t ev, void *arg)
{
	struct pair *p = arg;

	p->hits_b++;
}

static void on_a(struct ev_loop *l, int fd, uint32_t ev, void *arg)
{
	struct pair *p = arg;

	p->hits_a++;
	ck_assert_int_eq(ev_io_del(l, p->b[0]), 0);
	close(p->b[0]);
	ck_assert_int_eq(ev_io_del(l, fd), 0);
	close(fd);
	ev_loop_stop(l);
}

START_TEST(t03_callback_closes_other_and_own_fd)
{
	struct ev_loop *l;
	struct pair p = { 0 };

	ck_assert_int_eq(ev_loop_create(0, &l), 0);
	ck_assert_int_eq(pipe(p.a), 0);
	ck_assert_int_eq(pipe(p.b), 0);
	/* register b first so that, whichever order epoll reports, a's
	 * deletion of b is tested when a comes first */
	ck_assert_int_eq(ev_io_add(l, p.a[0], EV_READ, on_a, &p), 0);
	ck_assert_int_eq(ev_io_add(l, p.b[0], EV_READ, on_b, &p), 0);
	ck_assert_int_eq(write(p.b[1], "x", 1), 1);
	ck_assert_int_eq(write(p.a[1], "x", 1), 1);
	ck_assert_int_eq(ev_run(l), 0);
	ck_assert_int_eq(p.hits_a, 1);
	ck_assert_int_le(p.hits_b, 1);
	ck_assert_int_eq(ev_io_del(l, p.b[0]), -ENOENT);
	close(p.a[1]);
	close(p.b[1]);
	ev_loop_destroy(l);
}
END_TEST

static int calls;
static struct ev_loop *call_loop;

static void on_call(void *arg)
{
	ck_assert_ptr_eq(ev_loop_current(), call_loop);
	if (++calls == 1000)
		ev_loop_stop(call_loop);
}

static void *caller(void *arg)
{
	for (int i = 0; i < 500; i++)
		ck_assert_int_eq(ev_call(call_loop, on_call, NULL), 0);
	return NULL;
}

START_TEST(t04_calls_from_other_threads_run_on_loop)
{
	pthread_t th[2];

	ck_assert_int_eq(ev_loop_create(7, &call_loop), 0);
	calls = 0;
	pthread_create(&th[0], NULL, caller, NULL);
	pthread_create(&th[1], NULL, caller, NULL);
	ck_assert_int_eq(ev_run(call_loop), 0);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	ck_assert_int_eq(calls, 1000);
	ck_assert_uint_eq(ev_loop_id(call_loop), 7);
	ev_loop_destroy(call_loop);
}
END_TEST

/* t05: a hook runs after the batch that gathered work (the pipe's reader
 * sets "pending"), again while it reports work (bounded: a hook that always
 * has work does not keep the loop from its fds), and not after removal. */
struct prep_state {
	int fd[2];
	int reads;          /* bytes read by the fd callback */
	int pending;        /* work the fd callback left for the hook */
	int hook_runs, hook_work, greedy_runs;
	int seen_pending;   /* the hook saw the fd callback's work */
};

static bool hook_flush(struct ev_loop *l, void *arg)
{
	struct prep_state *s = arg;

	s->hook_runs++;
	if (s->pending == 0)
		return false;
	s->seen_pending++;
	s->pending--;              /* one unit per round: runs again */
	s->hook_work++;
	if (s->reads == 3 && s->pending == 0)
		ev_loop_stop(l);
	return true;
}

static bool hook_greedy(struct ev_loop *l, void *arg)
{
	struct prep_state *s = arg;

	s->greedy_runs++;
	return true;               /* always "busy": the loop must still poll */
}

static void on_prep_fd(struct ev_loop *l, int fd, uint32_t events, void *arg)
{
	struct prep_state *s = arg;
	char c;

	ck_assert_int_eq(read(fd, &c, 1), 1);
	s->reads++;
	s->pending += 2;
	if (s->reads < 3)
		ck_assert_int_eq(write(s->fd[1], "x", 1), 1);
}

START_TEST(t05_prepare_hooks_run_after_each_batch)
{
	struct ev_loop *l;
	struct prep_state s = { 0 };

	ck_assert_int_eq(ev_loop_create(0, &l), 0);
	ck_assert_int_eq(pipe(s.fd), 0);
	ck_assert_int_eq(ev_prepare_add(l, NULL, &s), -EINVAL);
	ck_assert_int_eq(ev_prepare_add(l, hook_flush, &s), 0);
	ck_assert_int_eq(ev_prepare_add(l, hook_greedy, &s), 0);
	ck_assert_int_eq(ev_io_add(l, s.fd[0], EV_READ, on_prep_fd, &s), 0);
	ck_assert_int_eq(write(s.fd[1], "x", 1), 1);
	ck_assert_int_eq(ev_run(l), 0);
	/* every read left 2 units; the hook took all 6, one per round */
	ck_assert_int_eq(s.reads, 3);
	ck_assert_int_eq(s.hook_work, 6);
	ck_assert_int_eq(s.pending, 0);
	/* the greedy hook was bounded per iteration yet the fd was served */
	ck_assert_int_ge(s.greedy_runs, EV_PREPARE_ROUNDS);
	ck_assert_int_eq(ev_prepare_del(l, hook_greedy, &s), 0);
	ck_assert_int_eq(ev_prepare_del(l, hook_greedy, &s), -ENOENT);
	ck_assert_int_eq(ev_prepare_del(l, hook_flush, NULL), -ENOENT);
	for (int i = 0; i < EV_PREPARE_MAX - 1; i++)
		ck_assert_int_eq(ev_prepare_add(l, hook_greedy, &s), 0);
	ck_assert_int_eq(ev_prepare_add(l, hook_greedy, &s), -ENOSPC);
	ev_io_del(l, s.fd[0]);
	close(s.fd[0]);
	close(s.fd[1]);
	ev_loop_destroy(l);
}
END_TEST

int main(void)
{
	/* one tcase "ev" holding all five tests */
	const struct ck_case cases[] = {
		CK_CASE("ev", t01_timers_fire_in_deadline_order),
		CK_CASE(NULL, t02_timer_cancel_from_own_callback),
		CK_CASE(NULL, t03_callback_closes_other_and_own_fd),
		CK_CASE(NULL, t04_calls_from_other_threads_run_on_loop),
		CK_CASE(NULL, t05_prepare_hooks_run_after_each_batch),
	};

	return ck_main(&(struct ck_suite_def){ "ev", CK_CASES(cases) });
}
