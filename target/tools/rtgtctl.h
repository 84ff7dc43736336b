/*
 * target/tools/rtgtctl.h - what rtgtctl.c, rtgtctl_live.c, rtgtctl_events.c and ctlclient.c share.
 */
#ifndef RTGT_RTGTCTL_H
#define RTGT_RTGTCTL_H

#include <stdbool.h>
#include <stddef.h>

#define EXIT_DAEMON_ERR 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3

/* ctlclient.c: a connected unix socket or -1 (errno); 0 or -errno; a
 * malloc'd reply line or NULL (errno). */
int rtgtctl_connect(const char *path);
int rtgtctl_send_all(int fd, const char *p, size_t len);
char *rtgtctl_recv_line(int fd);

struct live_opts {
	double interval_s;   /* between two snapshots */
	long count;          /* intervals to show; 0: until interrupted */
	bool json;
};

/* rtgtctl_live.c: "top", "paths" and "stats" with --watch against the
 * daemon at @sock. Returns the exit status. */
int rtgtctl_live(const char *sock, const char *cmd, const struct live_opts *o);

/* rtgtctl_events.c: "events [--follow]". Returns the exit status. */
int rtgtctl_events(const char *sock, bool follow, bool json);

#endif
