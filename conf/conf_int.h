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

/* ---- the key table (conf_keys.c): every key the parser accepts ---- */

/* Where a key lives. CONF_S_CHAP is every "chap" group: a target's, an
 * allow entry's and discovery's share one parser and one set of keys. */
enum conf_sect {
	CONF_S_TOP, CONF_S_DAEMON, CONF_S_POOL, CONF_S_HDD, CONF_S_PORTAL, CONF_S_GROUP,
	CONF_S_DISCOVERY, CONF_S_TARGET, CONF_S_LUN, CONF_S_MAP, CONF_S_ALLOW, CONF_S_CHAP,
	CONF_S__N,
};

/* How a key's value is written (what conf_type_name() would call it). */
enum conf_ktype {
	CONF_T_INT, CONF_T_NUMBER, CONF_T_BOOL, CONF_T_STRING, CONF_T_PATH, CONF_T_SIZE,
	CONF_T_SIZE_PCT, CONF_T_STRINGS, CONF_T_INTS, CONF_T_GROUP, CONF_T_GROUPS,
	CONF_T_MIXED, CONF_T_STRING_OR_LIST,
};

/* What a reload (SIGHUP, rtgtctl reload) does with a changed value. */
enum conf_reload {
	CONF_RELOAD_LIVE,     /* applied by the reload */
	CONF_RELOAD_NEW,      /* applied to connections accepted after the reload */
	CONF_RELOAD_RESTART,  /* listed in the reply's needs_restart; the running value stays */
	CONF_RELOAD_OPEN,     /* read when the pool is opened (start, or a reload adding it) */
	CONF_RELOAD_KEYS,     /* a group or list: see its keys */
};

/* Every key, one entry per (section, name); the order within a section is
 * the unknown-key check's order (its "did you mean" takes the first of
 * equally close names). */
enum conf_key_id {
	CK_TOP_DAEMON, CK_TOP_POOLS, CK_TOP_PORTALS, CK_TOP_TARGETS, CK_TOP_GROUPS,
	CK_TOP_DISCOVERY,
	CK_D_WORKERS, CK_D_CONTROL, CK_D_LOG_LEVEL, CK_D_MAX_SESSIONS, CK_D_MAX_CONNECTIONS,
	CK_D_LOGIN_TIMEOUT, CK_D_NOP_INTERVAL, CK_D_NOP_TIMEOUT, CK_D_QUEUE_DEPTH,
	CK_D_STATE_DIR, CK_D_MAX_DISCOVERY_SESSIONS, CK_D_DISCOVERY_IDLE_TIMEOUT,
	CK_D_EVENT_EXEC, CK_D_EVENT_EXEC_TIMEOUT, CK_D_METRICS, CK_D_METRICS_MAX_CONNECTIONS,
	CK_D_METRICS_MAX_PER_ADDRESS, CK_D_METRICS_MAX_REQUEST, CK_D_METRICS_IDLE_TIMEOUT,
	CK_D_SMARTCTL,
	CK_D_HEALTH_INTERVAL, CK_D_HEALTH_FAIL,
	CK_P_NAME, CK_P_LEVEL, CK_P_CHUNK, CK_P_MEMBERS, CK_P_SPARES, CK_P_CREATE_SIZE,
	CK_P_DIRECT_IO, CK_P_REBUILD_MBPS, CK_P_HDD, CK_P_CEPH_CONF, CK_P_RBD_POOL,
	CK_P_CEPH_ID, CK_P_KEYRING, CK_P_START_DEGRADED, CK_P_THICK, CK_P_PROVISION_MBPS,
	CK_P_THIN_THRESHOLD,
	CK_H_MBPS, CK_H_AVG_SEEK_MS, CK_H_RPM, CK_H_WRITE_CACHE,
	CK_PT_NAME, CK_PT_LISTEN, CK_PT_TPGT,
	CK_G_NAME, CK_G_MEMBERS,
	CK_DI_CHAP,
	CK_T_IQN, CK_T_ALIAS, CK_T_PORTALS, CK_T_LUNS, CK_T_ALLOW, CK_T_CHAP,
	CK_T_PEER_PORTAL_GROUPS,
	CK_L_LUN, CK_L_POOL, CK_L_VOLUME, CK_L_SIZE, CK_L_READ_ONLY, CK_L_GROUPS, CK_L_THIN,
	CK_M_GROUP, CK_M_LUN, CK_M_READ_ONLY,
	CK_A_INITIATOR, CK_A_CHAP, CK_A_ADDRESS,
	CK_C_USER, CK_C_SECRET, CK_C_MUTUAL_USER, CK_C_MUTUAL_SECRET,
	CK__N,
};

struct conf_key {
	enum conf_sect sect;
	const char *name;        /* static; never NULL in the table */
	enum conf_ktype type;
	long long min, max;      /* CONF_T_INT: the accepted range */
	long long idef;          /* CONF_T_INT: the default when absent (unless @def) */
	const char *range;       /* static or NULL: the range in words, for other types */
	const char *def;         /* static or NULL: the default in words; NULL: @idef for
				  * CONF_T_INT, "none" for the others */
	enum conf_reload reload;
	const char *desc;        /* static: one line, `code` in backquotes */
};

struct conf_sect_info {
	const char *path;        /* "daemon", "pools[]", ...: where its groups are */
	const char *where;       /* static: what the page calls it */
};

extern const struct conf_key conf_keys[CK__N];
extern const struct conf_sect_info conf_sects[CONF_S__N];

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
/* Reports every member of @grp that is no key of section @sect, with a hint. */
void conf_check_keys(struct conf_vctx *v, const config_setting_t *grp, const char *where,
		     enum conf_sect sect);

/* The readers of one key of @grp: 1 found and valid, 0 absent, -1 reported. */
/* A non-empty string; a missing one is reported when @required. */
int conf_get_string(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		    const char *where, bool required, const char **out);
/* An integer in @min..@max. */
int conf_get_uint(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, long long min, long long max, unsigned long long *out);
/* conf_get_uint() of key @id, by its table name and range. */
int conf_get_key_uint(struct conf_vctx *v, const config_setting_t *grp, enum conf_key_id id,
		      const char *where, unsigned long long *out);
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
