/*
 * conf/conf.h - rtgt configuration: the libconfig file turned into validated,
 * immutable structs, plus the process-wide logger.
 *
 * Everything in a struct conf is owned by it and freed by conf_free(). After
 * conf_load() returns 0 the structs are never modified; a reload builds a new
 * struct conf and swaps it.
 */
#ifndef RTGT_CONF_H
#define RTGT_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum conf_level {
	CONF_RAID0,
	CONF_RAID1,
	CONF_RAID5,
	CONF_RAID6,
	CONF_RAID10,
	CONF_RBD,
};

enum conf_log_level {
	CONF_LOG_ERROR,
	CONF_LOG_WARN,
	CONF_LOG_INFO,
	CONF_LOG_DEBUG,
};

/* A size is absolute (bytes != 0) or a percentage of a pool's usable
 * capacity (percent in 1..100, bytes == 0). */
struct conf_size {
	uint64_t bytes;
	unsigned percent;
};

struct conf_hdd {
	bool enabled;
	double mbps;
	double avg_seek_ms;
	unsigned rpm;
	bool write_through;        /* key write_cache = false: the disks' volatile
	                            * write cache is off, a write completes when the
	                            * head has written it. false (zero, key absent
	                            * or true): cached writes, as before the key */
};

struct conf_pool {
	char *name;
	enum conf_level level;
	uint64_t chunk;            /* bytes, power of two, >= 4 KiB */
	char **members;            /* as written in the file */
	char **member_paths;       /* resolved against the config file's directory */
	unsigned n_members;
	char **spares;             /* as written; may be NULL when n_spares == 0 */
	char **spare_paths;        /* resolved */
	unsigned n_spares;
	uint64_t create_size;      /* 0: do not create missing members */
	bool direct_io;
	unsigned rebuild_mbps;     /* 0: unlimited */
	bool start_degraded;       /* start without missing/unusable members when
	                            * redundancy allows; false: refuse to start */
	struct conf_hdd hdd;
	/* RAID pools: thin-provisioning soft threshold, percent of the space
	 * thin volumes may take (key "thin_threshold", 1..100, default 80);
	 * 0 on rbd pools, which do not take the key */
	unsigned thin_threshold;
	/* rbd only (NULL otherwise) */
	char *ceph_conf;
	char *rbd_pool;
	char *ceph_id;
	char *keyring;
	bool rbd_thick;            /* rbd only: write each new image out in full
	                            * at creation (key "thick", default true) */
	unsigned provision_mbps;   /* rbd only: thick write-out rate cap, MB/s
	                            * (10^6 bytes/s); 0: unlimited */
	int line;
};

struct conf_portal {
	char *name;
	char *listen;              /* "ip:port" or "[ip6]:port" as written */
	char *host;                /* address part, without brackets */
	uint16_t port;
	int family;                /* AF_INET or AF_INET6 */
	uint16_t tpgt;             /* key "tpgt", else the 1-based position in
	                            * the portals list; unique among portals. It
	                            * is also the SCSI relative target port id
	                            * and target port group id of every target
	                            * port on this portal. */
	int line;
	bool tpgt_set;             /* "tpgt" was given explicitly */
};

struct conf_chap {
	char *user;                /* NULL: no CHAP */
	char *secret;
	char *mutual_user;         /* NULL: no mutual CHAP */
	char *mutual_secret;
};

/* An "allow" entry with its own credentials (per-initiator CHAP, like
 * LIO's per-ACL auth): this initiator must log in with this chap, and the
 * target-level chap does not apply to it. */
struct conf_acl {
	char *initiator;           /* also listed in conf_target.allow unless
	                            * allow_all */
	struct conf_chap chap;     /* user and secret always set */
	int line;
};

/* One entry of a LUN's "groups": the members of initiator group @group see
 * the LUN under number @lun (LIO's mapped LUN). */
struct conf_lun_map {
	unsigned group;            /* index into conf.groups */
	unsigned lun;              /* 0..255; default: the LUN's own number */
	bool read_only;            /* this mapping's or the LUN's read_only */
	int line;
};

struct conf_lun {
	unsigned lun;              /* 0..255 */
	char *pool;
	char *volume;
	struct conf_size size;
	int line;
	bool read_only;            /* key read_only: read-only for everyone */
	/* key thin: logical block provisioning (UNMAP); rbd pools only */
	bool thin;
	/* key "groups" given: only the members of the mapped groups see the
	 * LUN, each group under its own number (maps, NULL when n_maps is 0:
	 * an empty list hides the LUN). Without it every initiator allowed
	 * on the target sees it as @lun. */
	bool masked;
	struct conf_lun_map *maps;
	unsigned n_maps;
};

/* Top-level "initiator_groups" entry. An initiator name is in at most one
 * group (compared case-insensitively). */
struct conf_group {
	char *name;
	char **members;            /* initiator names as written */
	unsigned n_members;
	int line;
};

/* An address rule's network: "198.18.0.0/15", "fd00::/8", or one address
 * (a full-length prefix). Host bits are zero. */
struct conf_net {
	int family;                /* AF_INET or AF_INET6 */
	uint8_t addr[16];          /* 4 bytes used for AF_INET */
	unsigned prefix;           /* 0..32 or 0..128 */
};

/* An "allow" entry with "address": a login is accepted through this entry
 * only from an address inside one of @nets. With @initiator, that
 * initiator may log in from those addresses only; without, any initiator
 * not named elsewhere may log in from them. */
struct conf_addr_rule {
	char *initiator;           /* NULL: any initiator not named elsewhere */
	struct conf_net *nets;
	unsigned n_nets;           /* >= 1 */
	int line;
};

struct conf_target {
	char *iqn;
	char *alias;               /* may be NULL */
	unsigned *portals;         /* indexes into conf.portals */
	unsigned n_portals;
	struct conf_lun *luns;
	unsigned n_luns;
	char **allow;              /* initiator IQNs; empty when allow_all */
	unsigned n_allow;
	bool allow_all;
	struct conf_acl *acls;     /* initiators with their own CHAP; names
	                            * distinct (case-insensitively) */
	unsigned n_acls;
	struct conf_chap chap;     /* for every initiator without an acls
	                            * entry; user NULL: none */
	struct conf_addr_rule *addr_rules; /* "allow" entries with "address";
	                            * named ones distinct case-insensitively */
	unsigned n_addr_rules;
	int line;
	/* Key "peer_portal_groups": TPGTs under which other nodes export this
	 * same target (same image, same iqn). REPORT TARGET PORT GROUPS lists
	 * each as an active/non-optimized group holding one port whose
	 * relative port id is that TPGT (implicit ALUA). 1..65535, distinct,
	 * none equal to a TPGT of this target's own portals. NULL when
	 * n_peer_groups == 0. */
	uint16_t *peer_groups;
	unsigned n_peer_groups;
};

struct conf_daemon {
	unsigned workers;          /* already resolved: never 0 */
	char *control;             /* resolved socket path */
	char *state_dir;           /* resolved; APTPL reservation files, created
	                            * (0700) at the first save; default
	                            * /var/lib/rtgt */
	enum conf_log_level log_level;
	unsigned max_sessions;     /* total; default 64 */
	unsigned max_connections;  /* total; default 256 */
	unsigned login_timeout_s;  /* default 15 */
	unsigned nop_interval_s;   /* NOP-In keepalive, default 10, 0 = off */
	unsigned nop_timeout_s;    /* dead peer after this, default 30 */
	unsigned queue_depth;      /* CmdSN window per session, default 128 */
	/* Discovery sessions need no credentials: they have their own cap
	 * (not counted in max_sessions nor max_connections, so they never
	 * keep a normal login out), default 16, and are closed after
	 * discovery_idle_timeout_s without a Text request, default 30. */
	unsigned max_discovery_sessions;
	unsigned discovery_idle_timeout_s;
	/* alerts and monitoring (target/daemon/events.c, health.c, metrics.c) */
	char *event_exec;          /* resolved hook path, NULL: none */
	unsigned event_exec_timeout_s; /* default 10 */
	char *metrics;             /* Prometheus listen "ip:port", NULL: off */
	/* the metrics endpoint's limits (target/daemon/metrics.c): connections
	 * at once in total (default 64) and from one address (default 16),
	 * bytes of request line and headers (default 8192), seconds a
	 * connection may stay silent (default 5) */
	unsigned metrics_max_connections;
	unsigned metrics_max_per_address;
	unsigned metrics_max_request;
	unsigned metrics_idle_timeout_s;
	char *smartctl;            /* resolved; default /usr/sbin/smartctl */
	unsigned health_interval_s; /* default 1800; 0: no health checks */
	bool health_fail_spare;    /* health_fail = "spare" (default "report") */
};

struct conf {
	char *path;                /* the file as given */
	char *dir;                 /* its directory: base of relative paths */
	struct conf_daemon daemon;
	struct conf_pool *pools;
	unsigned n_pools;
	struct conf_portal *portals;
	unsigned n_portals;
	struct conf_target *targets;
	unsigned n_targets;
	struct conf_group *groups; /* key "initiator_groups" */
	unsigned n_groups;
	/* key "discovery": CHAP a discovery session must pass (user NULL:
	 * none, as before the key) */
	struct conf_chap discovery_chap;
};

/*
 * Parse and validate @path. On success returns 0 and *out. On a bad file
 * returns -EINVAL after printing one "FILE:LINE: message" line per problem to
 * @errs; on an unreadable file returns a negative errno with a message.
 * Never touches anything on disk besides reading @path.
 */
int conf_load(const char *path, struct conf **out, FILE *errs);
void conf_free(struct conf *c);
/* Every key conf_load() accepts, one line each: section path, name, type,
 * range, default, what a reload does, description, tab-separated (rtgtd
 * --list-keys; scripts/conf-keys.py makes rtgt.conf(5) and conf/README.md's
 * tables of it). */
void conf_keys_print(FILE *f);

const struct conf_pool *conf_pool_find(const struct conf *c, const char *name);
const struct conf_portal *conf_portal_find(const struct conf *c, const char *name);
const struct conf_target *conf_target_find(const struct conf *c, const char *iqn);
const char *conf_level_name(enum conf_level level);

/* The group @initiator belongs to (case-insensitive), or NULL. */
const struct conf_group *conf_group_of(const struct conf *c, const char *initiator);

/* "a.b.c.d[/len]" or "v6[/len]" into @out; -EINVAL with a reason for a bad
 * address, a prefix out of range or host bits set. */
int conf_net_parse(const char *s, struct conf_net *out, const char **why);
struct sockaddr_storage;
/* Whether @peer (AF_INET, AF_INET6; an IPv4-mapped IPv6 address counts as
 * IPv4) lies inside @net. NULL or another family: false. */
bool conf_net_match(const struct conf_net *net, const struct sockaddr_storage *peer);

/* Parses "64K", "1G", "512" (bytes) or "80%" (when @allow_percent). */
int conf_parse_size(const char *s, bool allow_percent, struct conf_size *out);

/*
 * Creates the missing directories above @path (not @path itself) with
 * @mode, like `mkdir -p "$(dirname PATH)"`. Returns 0, or a negative errno
 * (-ENOTDIR when a non-directory stands in the way).
 */
int conf_mkdir_parents(const char *path, mode_t mode);

/* Logging: one line per event to stderr, "TIMESTAMP LEVEL [module] message".
 * Thread-safe. */
void conf_log_set_level(enum conf_log_level level);
enum conf_log_level conf_log_get_level(void);
void conf_log(enum conf_log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define LOG_ERR(mod, ...)  conf_log(CONF_LOG_ERROR, mod, __VA_ARGS__)
#define LOG_WARN(mod, ...) conf_log(CONF_LOG_WARN, mod, __VA_ARGS__)
#define LOG_INFO(mod, ...) conf_log(CONF_LOG_INFO, mod, __VA_ARGS__)
#define LOG_DBG(mod, ...)                                                     \
	do {                                                                  \
		if (conf_log_get_level() >= CONF_LOG_DEBUG)                   \
			conf_log(CONF_LOG_DEBUG, mod, __VA_ARGS__);           \
	} while (0)

#endif
