/*
 * conf/conf_int.h - helpers shared inside conf/ and with its unit tests:
 * the limits, the small syntax checks, and what the files of the
 * configuration parser (conf_val.c, the section files, conf.c) share.
 * Nothing outside conf/ and tests/unit/test_conf*.c includes this.
 */
#ifndef RTGT_CONF_INT_H
#define RTGT_CONF_INT_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
#define CONF_NAME_MAX 63          /* pool and group names: raid_pool_info.name[64] */
#define CONF_SIZE_ALIGN 4096ULL   /* absolute volume sizes: any block size fits */
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
/* "VOLUME@NAME", each part 1..CONF_SNAP_PART_MAX characters as above
 * (raid.h RAID_SNAP_PART_MAX: the same). */
#define CONF_SNAP_PART_MAX 31
int conf_snapshot_name_check(const char *name);
/* "a.b.c.d:port" or "[v6]:port"; fills host (no brackets), port, family.
 * Returns 0 or -EINVAL with a reason. @host must hold 64 bytes. */
int conf_listen_parse(const char *s, char *host, uint16_t *port, int *family,
		      const char **why);
/* @path joined to @dir unless absolute; lexically normalised ("a/./b",
 * "a/../b") so that the same file written two ways compares equal. Returns
 * a malloc'd string or NULL on ENOMEM. */
char *conf_path_resolve(const char *dir, const char *path);

/* ---- the configuration parser's shared state and readers (conf_val.c) ---- */

/* The walk's running state: where to print, how much went wrong. */
struct conf_vctx {
	const char *path;       /* the file as given, for messages */
	FILE *errs;             /* borrowed; never NULL */
	unsigned n_err;
	bool nomem;             /* an allocation failed: result is -ENOMEM */
	struct conf *c;         /* being built; owned by conf_load() */
};

/* The source line of @s (1 when unknown or @s is NULL), for messages. */
int conf_setting_line(const config_setting_t *s);
/* Reports "FILE:LINE: message" at @s and counts it as an error. */
__attribute__((format(printf, 3, 4)))
void conf_err_at(struct conf_vctx *v, const config_setting_t *s, const char *fmt, ...);
/* Reports "FILE:LINE: warning: message" at @s; does not fail the load. */
__attribute__((format(printf, 3, 4)))
void conf_warn_at(struct conf_vctx *v, const config_setting_t *s, const char *fmt, ...);
/* strdup() that records ENOMEM in @v; NULL stays NULL. */
char *conf_xstrdup(struct conf_vctx *v, const char *s);
/* calloc() (at least one element) that records ENOMEM in @v. */
void *conf_xcalloc(struct conf_vctx *v, size_t n, size_t size);
/* "an integer", "a string", ...: the type of @s as messages name it. */
const char *conf_type_name(const config_setting_t *s);
/* Reports every member of @grp not in @allowed (NULL-terminated), with a hint. */
void conf_check_keys(struct conf_vctx *v, const config_setting_t *grp, const char *where,
		     const char *const *allowed);

/* The readers of one key of @grp: 1 found and valid, 0 absent, -1 reported. */
/* A non-empty string; a missing one is reported when @required. */
int conf_get_string(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		    const char *where, bool required, const char **out);
/* An integer in @min..@max. */
int conf_get_uint(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, long long min, long long max, unsigned long long *out);
/* An integer or a float. */
int conf_get_number(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		    const char *where, double *out);
/* true or false. */
int conf_get_bool(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, bool *out);
/* A size string (or a plain integer of bytes); "N%" only when @allow_percent. */
int conf_get_size(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, bool allow_percent, struct conf_size *out);
/* A list or array of non-empty strings: the setting (NULL if absent or not
 * a list); sets *@bad when anything was reported. */
const config_setting_t *conf_get_string_list(struct conf_vctx *v,
					     const config_setting_t *grp,
					     const char *key, const char *where,
					     bool *bad);

/* ---- the sections: each fills its part of v->c from the file's root ---- */

/* "daemon" (conf_daemon.c): settings with their defaults, paths resolved. */
void conf_parse_daemon(struct conf_vctx *v, const config_setting_t *root);
/* "pools" (conf_pools.c): every pool, its members, spares and level keys. */
void conf_parse_pools(struct conf_vctx *v, const config_setting_t *root);
/* No member or spare file used twice across pools, each reported at its line. */
void conf_check_paths_unique(struct conf_vctx *v, const config_setting_t *root);
/* "initiator_groups" (conf_access.c); before the targets, whose LUNs map them. */
void conf_parse_groups(struct conf_vctx *v, const config_setting_t *root);
/* "discovery" (conf_access.c): the CHAP every discovery session must pass. */
void conf_parse_discovery(struct conf_vctx *v, const config_setting_t *root);
/* A "chap" group @g of @twhere (a target, an allow entry) into @chap. */
void conf_parse_chap(struct conf_vctx *v, const config_setting_t *g, const char *twhere,
		     struct conf_chap *chap);
/* Target @g's "allow" list into t->allow, t->acls and t->addr_rules. */
void conf_parse_allow(struct conf_vctx *v, const config_setting_t *g, const char *where,
		      struct conf_target *t);
/* The index in c->groups of the initiator group @name, or -1. */
int conf_group_index(const struct conf *c, const char *name);
/* "portals" (conf_targets.c): addresses and TPGTs, before the targets. */
void conf_parse_portals(struct conf_vctx *v, const config_setting_t *root);
/* "targets" (conf_targets.c): portals, LUNs, views, allow, chap, peer groups. */
void conf_parse_targets(struct conf_vctx *v, const config_setting_t *root);

#endif
