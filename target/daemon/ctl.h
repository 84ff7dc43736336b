/*
 * target/daemon/ctl.h - the control socket server rtgtctl talks to.
 *
 * A unix stream socket speaking newline-delimited JSON. Each request line
 *   {"cmd":"status", "args":["tank", "2"]}
 * gets exactly one reply line, in request order:
 *   {"ok":true, ...fields the handler added...}
 *   {"ok":false, "error":"message"}
 * The server knows no commands itself: it parses, calls ops->handle and
 * frames the answer. Requests are at most ICTL_MAX_REQUEST bytes.
 */
#ifndef RTGT_CTL_H
#define RTGT_CTL_H

#include <stddef.h>

struct ev_loop;
struct json_object;
struct iscsi_ctl;

#define ICTL_MAX_REQUEST (64 * 1024)  /* bytes per request line, newline included */
#define ICTL_MAX_CLIENTS 32           /* more are accepted and closed at once */

struct iscsi_ctl_ops {
	void *arg;    /* handed back to handle(); borrowed */
	/*
	 * Runs on the server's loop thread. @cmd is the request's "cmd",
	 * @args its "args" array (an empty array when the request had none;
	 * borrowed, valid during the call). Add the answer's fields to
	 * @reply (an object already holding "ok":true). Return 0, or a
	 * negative errno with a message in @err (NUL-terminated, at most
	 * @errlen bytes); the reply is then {"ok":false,"error":err}, or the
	 * errno's text when @err was left empty.
	 */
	int (*handle)(void *arg, const char *cmd, struct json_object *args,
		      struct json_object *reply, char *err, size_t errlen);
};

/*
 * Listen on @path (mode 0600, parent directory created when missing) on
 * @loop. A stale socket left by a dead daemon is replaced; a live one (some
 * process accepts on it) gives -EADDRINUSE, a non-socket file at @path
 * -EEXIST. @ops is copied. Must be called on @loop's thread or before the
 * loop runs. Returns 0 or a negative errno (logged).
 */
int iscsi_ctl_start(struct ev_loop *loop, const char *path, const struct iscsi_ctl_ops *ops,
		    struct iscsi_ctl **out);
/* Close every client and the listener, remove the socket file (only if it
 * is still ours), free. On the loop's thread, or after the loop stopped.
 * NULL is a no-op. */
void iscsi_ctl_stop(struct iscsi_ctl *ctl);

/* Number of connected clients (tests, status). */
unsigned iscsi_ctl_clients(const struct iscsi_ctl *ctl);

#endif
