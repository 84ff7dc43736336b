/*
 * tests/lib/harness.h - helpers for the end-to-end tests in tests/net/: run a
 * real bin/rtgtd on a private temp dir and a free loopback port, talk to it
 * with libiscsi, or with raw TCP for hostile input.
 *
 * Every helper returns 0 (or a count / fd) on success and a negative errno on
 * failure; none of them calls ck_assert, so the tests decide what a failure
 * means and can print the daemon's log first (harness_dump_log).
 */
#ifndef RTGT_TESTS_HARNESS_H
#define RTGT_TESTS_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct iscsi_context;

#define HARNESS_INITIATOR "iqn.2026-11.org.example:tester"
#define HARNESS_TARGET    "iqn.2026-11.org.rtgt:test"

/* A default targets list for harness_conf_std(): HARNESS_TARGET, LUN 0 =
 * volume v0 at 80% of pool "p", portal "lo", open to every initiator. */
#define HARNESS_TARGET_DEFAULT                                                \
	"{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"             \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%\"; } );\n" \
	"  allow = ( \"ALL\" ); }"

/* Bounds (milliseconds). */
#define HARNESS_START_TIMEOUT_MS 30000
#define HARNESS_STOP_TIMEOUT_MS  30000

struct harness_daemon {
	char dir[64];         /* mkdtemp dir, removed by harness_fini() */
	char conf[128];       /* dir/rtgt.conf */
	char log[128];        /* dir/rtgtd.log: stderr+stdout of every start, appended */
	uint16_t port;        /* a free loopback port picked by harness_init() */
	pid_t pid;            /* running rtgtd, 0 when none */
	int last_status;      /* exit code of the last rtgtd that ended (128+sig
	                       * when killed by a signal), -1 when none ended */
	/* A failed ck_assert leaves a forked test with _exit(), so neither
	 * teardown nor atexit runs: a janitor process removes dir once every
	 * holder of janitor_fd (this process, its forks) is gone. */
	int janitor_fd;       /* write end of the janitor's pipe, -1 when none */
	pid_t janitor;        /* 0 when none */
};

/* Creates the temp dir under /tmp and picks a free port. */
int harness_init(struct harness_daemon *d);
/* SIGKILLs a still running rtgtd (reaping it) and removes the dir. Safe on a
 * zeroed or already finished struct. */
void harness_fini(struct harness_daemon *d);

/* Registers @d (up to 16) to be harness_fini()ed at exit(): a failed
 * ck_assert in a forked Check test exits without running teardown. */
void harness_fini_at_exit(struct harness_daemon *d);

/* Writes @name (relative to d->dir; "rtgt.conf" is d->conf) from a printf
 * format. */
int harness_write_file(const struct harness_daemon *d, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Writes d->conf: daemon (2 workers, control "rtgtd.sock", state_dir "state"
 * (APTPL files stay in the temp dir), log_level info),
 * pool "p" of @level (2 members for raid0/1, 4 for raid5/6/10, files
 * dN.img, create_size 32M, chunk 64K), portal "lo" on 127.0.0.1:d->port, and
 * @targets as the body of the targets list (HARNESS_TARGET_DEFAULT if NULL).
 */
int harness_conf_std(struct harness_daemon *d, const char *level, const char *targets);
/* The same with @daemon_extra (e.g. "login_timeout = 2; max_sessions = 2;")
 * added to the daemon group; NULL for none. */
int harness_conf_std_ex(struct harness_daemon *d, const char *daemon_extra, const char *level,
			const char *targets);

/* @n quoted member names for a config list, "\"@prefix0.img\", \"@prefix1.img\", ..."
 * into @buf ("" for 0). Returns 0 or -ENOSPC. */
int harness_img_list(char *buf, size_t len, const char *prefix, unsigned n);

/* The rtgtd binary: $RTGTD or bin/rtgtd (relative to the repo root). */
const char *harness_rtgtd_path(void);

/*
 * Starts `rtgtd -c d->conf` with stderr appended to d->log and waits until
 * d->port accepts a TCP connection. Returns 0; -ECHILD when rtgtd exited
 * first (its code in d->last_status); -ETIMEDOUT after
 * HARNESS_START_TIMEOUT_MS (rtgtd is killed); -ENOENT if the binary is
 * missing. rtgtd gets SIGKILL if the calling thread dies.
 */
int harness_start(struct harness_daemon *d);
/* SIGTERM, wait up to HARNESS_STOP_TIMEOUT_MS, then SIGKILL. Returns the exit
 * code (0..255), 128+signal if it died of a signal, -ETIMEDOUT if it needed
 * SIGKILL, -ESRCH if it was not running. */
int harness_stop(struct harness_daemon *d);
/* Whether rtgtd is still running (reaps it if it ended). */
bool harness_alive(struct harness_daemon *d);
/* Prints the last @max_lines lines of d->log to @f, prefixed. */
void harness_dump_log(const struct harness_daemon *d, FILE *f, unsigned max_lines);
/* Reads d->log (NUL-terminated, at most @len - 1 bytes, the last ones).
 * Returns the byte count or -errno. */
ssize_t harness_read_log(const struct harness_daemon *d, char *buf, size_t len);
/* Occurrences of @needle in the last MiB of d->log (appended over every
 * start of the daemon); 0 when it cannot be read. */
unsigned harness_log_count(const struct harness_daemon *d, const char *needle);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t harness_now_ms(void);
/* xorshift64*: the same @len bytes for the same @seed, so that a test can
 * regenerate what it wrote instead of keeping it. */
void harness_fill_random(uint8_t *buf, size_t len, uint64_t seed);

/* VmRSS of @pid in KiB, or -errno. */
long harness_rss_kb(pid_t pid);

/*
 * Runs @argv (argv[0] a path) with cwd unchanged, stdout to /dev/null and
 * stderr captured into @err (NUL-terminated, truncated to @errlen - 1).
 * Returns the exit code (128+signal when killed), or -ETIMEDOUT after
 * @timeout_ms (the child is SIGKILLed), or -errno.
 */
int harness_run(char *const argv[], char *err, size_t errlen, int timeout_ms);
/* The same with stdout and stderr both captured into @out. */
int harness_run_out(char *const argv[], char *out, size_t outlen, int timeout_ms);

/* Number of entries in @dir, recursively (not counting @dir); names go to
 * @names (space separated, may be NULL). -errno on failure. */
int harness_dir_entries(const char *dir, char *names, size_t nameslen);
/* rm -rf @path. */
int harness_rm_rf(const char *path);
/* Copies file @from to @to (created or truncated). */
int harness_copy_file(const char *from, const char *to);

/* ---- libiscsi ---- */

struct harness_login {
	const char *initiator;      /* NULL: HARNESS_INITIATOR */
	const char *target;         /* NULL: HARNESS_TARGET (ignored for discovery) */
	bool discovery;             /* discovery session: connect + login only */
	const char *user, *secret;  /* CHAP (NULL: none) */
	const char *mutual_user, *mutual_secret; /* mutual CHAP (NULL: none) */
	bool crc32c;                /* require header digest CRC32C (else None) */
	uint32_t isid_rnd;          /* != 0: ISID random-format qualifier */
	int lun;                    /* LUN for iscsi_full_connect_sync */
	bool login_only;            /* normal session: connect + login, without the
	                             * full connect's TEST UNIT READY (which fails
	                             * while a LU is becoming ready) */
	int timeout_s;              /* command timeout; 0: 30 */
};

/* "iscsi://127.0.0.1:PORT/IQN/LUN" into @buf. Returns 0 or -ENOSPC. */
int harness_url(char *buf, size_t len, uint16_t port, const char *iqn, int lun);
/*
 * Logs in to 127.0.0.1:@port. Returns the logged-in context (no automatic
 * reconnect, @o->timeout_s command timeout) or NULL with libiscsi's message in @err.
 */
struct iscsi_context *harness_iscsi_login(uint16_t port, const struct harness_login *o,
					  char *err, size_t errlen);
/* Logs out (ignoring errors) and destroys; NULL is fine. */
void harness_iscsi_logout(struct iscsi_context *c);

/* ---- raw TCP ---- */

/* Blocking connect to 127.0.0.1:@port; fd or -errno. */
int harness_tcp_connect(uint16_t port);
/* Sends everything (MSG_NOSIGNAL). 0, or -errno (-EPIPE/-ECONNRESET: the
 * peer closed). */
int harness_tcp_send(int fd, const void *buf, size_t len);
/* Reads exactly @len bytes within @timeout_ms overall. Returns @len, the
 * bytes read before EOF (0..len-1) when the peer closed, -ETIMEDOUT, or
 * -errno (-ECONNRESET counts as closed: returns what was read). */
ssize_t harness_tcp_recv(int fd, void *buf, size_t len, int timeout_ms);
/* Discards input until EOF/reset. 1 when the peer closed within
 * @timeout_ms, 0 when still open, -errno otherwise. */
int harness_tcp_wait_closed(int fd, int timeout_ms);
/* A free TCP port on 127.0.0.1 (bound with port 0 and released). */
int harness_free_port(uint16_t *port);

/* ---- iSCSI PDUs built by hand ---- */

#define HARNESS_BHS_LEN 48
#define HARNESS_OP_LOGIN_REQ  0x03
#define HARNESS_OP_LOGIN_RSP  0x23
#define HARNESS_OP_REJECT     0x3f

struct harness_login_hdr {
	bool transit;       /* T */
	bool cont;          /* C */
	unsigned csg, nsg;  /* 0 security, 1 operational, 3 full feature */
	uint8_t isid[6];
	uint16_t tsih;
	uint32_t itt;
	uint16_t cid;
	uint32_t cmdsn, expstatsn;
	uint32_t dsl_override; /* != 0: put this in DataSegmentLength instead of @kvlen */
};

void harness_put_be16(uint8_t *p, uint16_t v);
void harness_put_be24(uint8_t *p, uint32_t v);
void harness_put_be32(uint8_t *p, uint32_t v);
uint32_t harness_get_be24(const uint8_t *p);
uint32_t harness_get_be32(const uint8_t *p);

/* Appends "key=value\0" at @off in @buf. Returns the new offset, or 0 when it
 * does not fit. */
size_t harness_kv_add(char *buf, size_t cap, size_t off, const char *key, const char *value);
/*
 * Builds a Login Request (opcode 0x43: immediate, version 0) with @kv
 * (@kvlen bytes of "k=v\0" pairs) as data, padded to 4 bytes. Returns the
 * PDU length, or 0 when @cap is too small.
 */
size_t harness_build_login(uint8_t *buf, size_t cap, const struct harness_login_hdr *h,
			   const void *kv, size_t kvlen);
/*
 * Reads one PDU (BHS, then the data segment padded to 4 bytes; no digests,
 * no AHS) within @timeout_ms. The data (up to @datacap bytes; the rest is
 * discarded) goes to @data. Returns the data segment length, -EPIPE when the
 * peer closed first, -ETIMEDOUT, or -errno.
 */
ssize_t harness_recv_pdu(int fd, uint8_t bhs[HARNESS_BHS_LEN], uint8_t *data, size_t datacap,
			 int timeout_ms);

#endif
