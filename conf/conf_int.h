/*
 * conf/conf_int.h - helpers shared inside conf/ and with its unit tests.
 * Nothing outside conf/ and tests/unit/test_conf*.c includes this.
 */
#ifndef RTGT_CONF_INT_H
#define RTGT_CONF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

/* Limits the validator enforces; documented in conf/README.md. */
#define CONF_MAX_WORKERS 64
#define CONF_CHUNK_MIN (4ULL << 10)
#define CONF_CHUNK_MAX (16ULL << 20)
#define CONF_CHUNK_DEFAULT (64ULL << 10)
/* RAID pools' thin_threshold when the key is absent: percent */
#define CONF_THIN_THRESHOLD_DEFAULT 80
#define CONF_MAX_LUN 255
#define CONF_VOLUME_NAME_MAX 63
#define CONF_CHAP_SECRET_MIN 12
#define CONF_CHAP_SECRET_MAX 255
/* Longer secrets are legal but the Microsoft initiator refuses them. */
#define CONF_CHAP_SECRET_MS_MAX 16
#define CONF_IQN_MAX 223            /* RFC 3720 3.2.6.1 */
#define CONF_DEFAULT_CONTROL "var/rtgtd.sock"
/* Where APTPL reservations live: persistent storage, never the control
 * socket's directory (a runtime directory that systemd wipes at every stop). */
#define CONF_DEFAULT_STATE_DIR "/var/lib/rtgt"
#define CONF_DEFAULT_SMARTCTL "/usr/sbin/smartctl"

/* "error" | "warn" | "info" | "debug" -> level; -EINVAL otherwise. */
int conf_log_level_parse(const char *name, enum conf_log_level *out);
/* UTC "YYYY-MM-DDTHH:MM:SS.mmmZ" into @buf; returns its length. */
size_t conf_log_format_time(char *buf, size_t len);

/* iqn.YYYY-MM.reversed.domain[:anything], eui.<16 hex>, naa.<16|32 hex>,
 * lowercase only (RFC 3720 3.2.6.3). Returns 0 or -EINVAL with a reason. */
int conf_iqn_check(const char *name, const char **why);
/* [A-Za-z0-9._-]{1,63} */
int conf_volume_name_check(const char *name);
/* "a.b.c.d:port" or "[v6]:port"; fills host (no brackets), port, family.
 * Returns 0 or -EINVAL with a reason. @host must hold 64 bytes. */
int conf_listen_parse(const char *s, char *host, uint16_t *port, int *family,
		      const char **why);
/* @path joined to @dir unless absolute; lexically normalised ("a/./b",
 * "a/../b") so that the same file written two ways compares equal. Returns
 * a malloc'd string or NULL on ENOMEM. */
char *conf_path_resolve(const char *dir, const char *path);

#endif
