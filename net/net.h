/*
 * net/net.h - reactor (epoll + timerfd + cross-thread calls) and sockets.
 *
 * One struct ev_loop per worker thread. Everything registered on a loop is
 * called on that loop's thread. Callbacks may add or delete any fd or timer,
 * their own included; events already collected for a deleted fd are dropped
 * (entries are keyed by fd plus a generation number).
 */
#ifndef RTGT_NET_H
#define RTGT_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

struct ev_loop;
struct ev_timer;

#define EV_READ EPOLLIN
#define EV_WRITE EPOLLOUT

/* @events: the epoll events that fired (EPOLLIN/OUT/ERR/HUP). */
typedef void (*ev_io_fn)(struct ev_loop *loop, int fd, uint32_t events, void *arg);
typedef void (*ev_timer_fn)(struct ev_loop *loop, struct ev_timer *t, void *arg);
typedef void (*ev_call_fn)(void *arg);
/* Returns true when it did work (see ev_prepare_add). */
typedef bool (*ev_prepare_fn)(struct ev_loop *loop, void *arg);

int ev_loop_create(unsigned id, struct ev_loop **out);
/* Only after ev_run() returned. Registered fds are not closed. */
void ev_loop_destroy(struct ev_loop *loop);
unsigned ev_loop_id(const struct ev_loop *loop);
/* The loop running on this thread, or NULL. */
struct ev_loop *ev_loop_current(void);

/* Runs until ev_loop_stop(); returns 0 or a negative errno. */
int ev_run(struct ev_loop *loop);
/* Thread-safe. */
void ev_loop_stop(struct ev_loop *loop);

int ev_io_add(struct ev_loop *loop, int fd, uint32_t events, ev_io_fn fn, void *arg);
int ev_io_mod(struct ev_loop *loop, int fd, uint32_t events);
/* Does not close @fd. Safe from any callback of this loop. */
int ev_io_del(struct ev_loop *loop, int fd);

/* One-shot timer firing after @ms milliseconds. Returns NULL on ENOMEM. The
 * handle is valid until it fires (after the callback returns) or is
 * cancelled. */
struct ev_timer *ev_timer_add(struct ev_loop *loop, uint64_t ms, ev_timer_fn fn, void *arg);
void ev_timer_cancel(struct ev_loop *loop, struct ev_timer *t);

/* Prepare hooks: fn(loop, arg) runs on the loop's thread after every batch
 * of events, before the loop waits again, so that work gathered while the
 * batch ran (responses to write, I/O to submit) leaves in one system call.
 * Hooks run in the order added; while any reports work, they run again (at
 * most EV_PREPARE_ROUNDS times, then the loop polls without sleeping).
 * At most EV_PREPARE_MAX per loop; loop thread only (or before ev_run).
 * Returns 0, -ENOSPC or -EINVAL. */
#define EV_PREPARE_MAX 8
#define EV_PREPARE_ROUNDS 8
int ev_prepare_add(struct ev_loop *loop, ev_prepare_fn fn, void *arg);
/* Removes the hook added with the same fn and arg; -ENOENT if none. */
int ev_prepare_del(struct ev_loop *loop, ev_prepare_fn fn, void *arg);

/* Thread-safe: run fn(arg) on @loop's thread soon. Returns 0 or -ENOMEM. */
int ev_call(struct ev_loop *loop, ev_call_fn fn, void *arg);

/* Monotonic milliseconds, cached per loop iteration. */
uint64_t ev_now_ms(struct ev_loop *loop);

/* ---- sockets ---- */

/* Parse "a.b.c.d:port" or "[v6]:port". */
int sock_parse_addr(const char *hostport, struct sockaddr_storage *ss, socklen_t *len);
/* Non-blocking listening socket with SO_REUSEADDR; returns fd or -errno. */
int sock_listen(const struct sockaddr_storage *ss, socklen_t len, int backlog);
/* Non-blocking accept with TCP_NODELAY set; returns fd or -errno (-EAGAIN). */
int sock_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len);
/* "ip:port" / "[ip6]:port" for logs and TargetAddress. */
void sock_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len, bool with_port);
/* Local address of a connected socket. */
int sock_local_addr(int fd, struct sockaddr_storage *ss, socklen_t *len);

#endif
