/*
 * target/daemon/notify.h - service manager readiness notification (the
 * sd_notify(3) protocol) without libsystemd: one datagram "READY=1",
 * "STOPPING=1", "STATUS=..." to the unix socket named by $NOTIFY_SOCKET.
 * Does nothing when the variable is unset (not started by systemd with
 * Type=notify), so it is safe to call unconditionally.
 */
#ifndef RTGT_DAEMON_NOTIFY_H
#define RTGT_DAEMON_NOTIFY_H

/* Sends @state (e.g. "READY=1" or "READY=1\nSTATUS=serving") to
 * $NOTIFY_SOCKET. Returns 1 when sent, 0 when there is no NOTIFY_SOCKET,
 * or a negative errno (-EINVAL for a malformed socket name or an empty
 * state). Never blocks: a full socket buffer is -EAGAIN. */
int iscsi_notify(const char *state);

/* Convenience wrappers for the two states rtgtd announces; they log a
 * failure (LOG_WARN) instead of returning it. */
void iscsi_notify_ready(void);
void iscsi_notify_stopping(void);

#endif
