/*
 * conf/log.c - the process-wide logger.
 *
 * Every event becomes one line on stderr:
 *   2026-11-29T21:00:00.123Z LEVEL [module] message
 * The line is formatted into a stack buffer first and handed to the kernel
 * with a single write() under a mutex, so lines from different reactor
 * threads never interleave, even when stderr is a pipe shared with children.
 * Messages longer than the buffer are cut and end in "...".
 * The message part is escaped: names, keys and values that peers send reach
 * the log through plain "%s", so every byte outside 0x20..0x7e (and '\\')
 * becomes \xNN here, once for every caller; a line is always one line of
 * printable ASCII.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: libc only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

#define LOG_LINE_MAX 2048

/* Read on every LOG_DBG() from every thread: atomic rather than locked. */
static _Atomic int log_level = CONF_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {
	[CONF_LOG_ERROR] = "ERROR",
	[CONF_LOG_WARN] = "WARN",
	[CONF_LOG_INFO] = "INFO",
	[CONF_LOG_DEBUG] = "DEBUG",
};

void conf_log_set_level(enum conf_log_level level)
{
	if ((int)level < CONF_LOG_ERROR)
		level = CONF_LOG_ERROR;
	if (level > CONF_LOG_DEBUG)
		level = CONF_LOG_DEBUG;
	atomic_store(&log_level, (int)level);
}

enum conf_log_level conf_log_get_level(void)
{
	return (enum conf_log_level)atomic_load(&log_level);
}

int conf_log_level_parse(const char *name, enum conf_log_level *out)
{
	static const char *const conf_names[] = {
		[CONF_LOG_ERROR] = "error",
		[CONF_LOG_WARN] = "warn",
		[CONF_LOG_INFO] = "info",
		[CONF_LOG_DEBUG] = "debug",
	};

	for (unsigned i = 0; i < sizeof(conf_names) / sizeof(conf_names[0]); i++) {
		if (strcmp(name, conf_names[i]) == 0) {
			*out = (enum conf_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

size_t conf_log_format_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

/* write() may be cut short by a signal or a full pipe; finish the line. */
static void write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report a logging failure */
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Appends @m to @line at @pos (capacity @cap), every byte outside 0x20..0x7e
 * and the backslash itself as \xNN, so that names and keys a peer sent can
 * neither break the line nor drive a terminal, and an escape in the log
 * always means a byte that was escaped. Sets *@cut when @m did not fit
 * (an escape is never split). Returns the new position. */
static size_t escape_into(char *line, size_t pos, size_t cap, const char *m, size_t mlen,
			  bool *cut)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < mlen; i++) {
		uint8_t b = (uint8_t)m[i];
		bool plain = b >= 0x20 && b <= 0x7e && b != '\\';

		if (pos + (plain ? 1 : 4) > cap) {
			*cut = true;
			break;
		}
		if (plain) {
			line[pos++] = (char)b;
			continue;
		}
		line[pos++] = '\\';
		line[pos++] = 'x';
		line[pos++] = hex[b >> 4];
		line[pos++] = hex[b & 15];
	}
	return pos;
}

void conf_log(enum conf_log_level level, const char *module, const char *fmt, ...)
{
	char line[LOG_LINE_MAX + 1]; /* + the newline */
	char msg[LOG_LINE_MAX];
	size_t pos;
	va_list ap;
	int n;
	int saved_errno = errno; /* callers log "%m" and then test errno */

	if ((int)level > atomic_load(&log_level))
		return;
	if ((int)level < CONF_LOG_ERROR || level > CONF_LOG_DEBUG)
		level = CONF_LOG_ERROR;

	pos = conf_log_format_time(line, LOG_LINE_MAX);
	n = snprintf(line + pos, LOG_LINE_MAX - pos, " %s [%s] ",
		     level_names[level], module ? module : "-");
	if (n > 0)
		pos += (size_t)n < LOG_LINE_MAX - pos ? (size_t)n : LOG_LINE_MAX - pos - 1;

	va_start(ap, fmt);
	errno = saved_errno;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > 0) {
		size_t mlen = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
		bool cut = (size_t)n >= sizeof(msg);

		/* a trailing newline from the caller is dropped */
		while (!cut && mlen > 0 && msg[mlen - 1] == '\n')
			mlen--;
		/* room for the "..." of a cut message stays free */
		pos = escape_into(line, pos, LOG_LINE_MAX - 3, msg, mlen, &cut);
		if (cut) {
			memcpy(line + pos, "...", 3);
			pos += 3;
		}
	}
	line[pos++] = '\n';

	pthread_mutex_lock(&log_lock);
	write_all(STDERR_FILENO, line, pos);
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
