/*
 * conf/conf_keys.c - the one table of configuration keys: for every key
 * the parser accepts, where it lives, its type, range, default, what a
 * reload does with it and one line saying what it is for;
 * conf_keys_print() writes it out for the generator of rtgt.conf(5) and
 * conf/README.md (scripts/conf-keys.py, via rtgtd --list-keys).
 *
 * The parser's unknown-key check (conf_val.c) accepts exactly the keys of
 * this table, and the integer keys' ranges and the daemon's defaults are
 * read from it, so the page, the README and the code cannot disagree on
 * which keys exist. What a key's value means beyond its range (cross-key
 * rules, paths, names) stays with the section's parser. No state.
 *
 * Layer: keys, below the values (conf/README.md "Layers"). May call: libc.
 * Nothing else of conf/.
 */
#include <stdio.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

const struct conf_sect_info conf_sects[CONF_S__N] = {
	[CONF_S_TOP] = { "", "top level" },
	[CONF_S_DAEMON] = { "daemon", "daemon" },
	[CONF_S_POOL] = { "pools[]", "pools entries" },
	[CONF_S_HDD] = { "pools[].hdd", "a pool's hdd group" },
	[CONF_S_PORTAL] = { "portals[]", "portals entries" },
	[CONF_S_GROUP] = { "initiator_groups[]", "initiator_groups entries" },
	[CONF_S_DISCOVERY] = { "discovery", "discovery" },
	[CONF_S_TARGET] = { "targets[]", "targets entries" },
	[CONF_S_LUN] = { "targets[].luns[]", "luns entries" },
	[CONF_S_MAP] = { "targets[].luns[].groups[]", "a LUN's group mappings" },
	[CONF_S_ALLOW] = { "targets[].allow[]", "allow group entries" },
	[CONF_S_CHAP] = { "chap", "chap groups (a target's, an allow entry's, discovery's)" },
};

#define INT(s, n, lo, hi, d, rl, text)                                                    \
	{ .sect = CONF_S_##s, .name = n, .type = CONF_T_INT, .min = lo, .max = hi, .idef = d, \
	  .reload = CONF_RELOAD_##rl, .desc = text }
#define KEY(s, n, t, rng, d, rl, text)                                                    \
	{ .sect = CONF_S_##s, .name = n, .type = CONF_T_##t, .range = rng, .def = d,         \
	  .reload = CONF_RELOAD_##rl, .desc = text }

const struct conf_key conf_keys[CK__N] = {
	/* top level */
	[CK_TOP_DAEMON] = KEY(TOP, "daemon", GROUP, NULL, NULL, KEYS,
		"process settings; all keys optional"),
	[CK_TOP_POOLS] = KEY(TOP, "pools", GROUPS, NULL, NULL, LIVE,
		"storage pools; every LUN names one (a reload opens added pools and closes "
		"removed ones once idle)"),
	[CK_TOP_PORTALS] = KEY(TOP, "portals", GROUPS, "non-empty", "required", LIVE,
		"listening addresses"),
	[CK_TOP_TARGETS] = KEY(TOP, "targets", GROUPS, "non-empty", "required", LIVE,
		"iSCSI targets"),
	[CK_TOP_GROUPS] = KEY(TOP, "initiator_groups", GROUPS, NULL, NULL, LIVE,
		"named sets of initiators that a LUN's `groups` map"),
	[CK_TOP_DISCOVERY] = KEY(TOP, "discovery", GROUP, NULL, NULL, LIVE,
		"`{ chap = { ... }; }`: the CHAP every discovery session must pass; absent or "
		"`chap = { };`: discovery needs no credentials"),

	/* daemon */
	[CK_D_WORKERS] = INT(DAEMON, "workers", 0, CONF_MAX_WORKERS, 0, RESTART,
		"reactor threads; `0` = one per online CPU, capped at 64"),
	[CK_D_CONTROL] = KEY(DAEMON, "control", PATH, "at most 107 bytes resolved",
		"\"" CONF_DEFAULT_CONTROL "\"", RESTART,
		"rtgtctl's unix socket; must not be a member or spare path"),
	[CK_D_LOG_LEVEL] = KEY(DAEMON, "log_level", STRING, "error | warn | info | debug",
		"\"info\"", LIVE, "the lowest level logged"),
	[CK_D_MAX_SESSIONS] = INT(DAEMON, "max_sessions", 1, 4096, 64, NEW,
		"sessions over all targets; further logins are refused (target out of "
		"resources)"),
	[CK_D_MAX_CONNECTIONS] = INT(DAEMON, "max_connections", 1, 65536, 256, NEW,
		"connections over all sessions; must be at least `max_sessions`"),
	[CK_D_LOGIN_TIMEOUT] = INT(DAEMON, "login_timeout", 1, 3600, 15, NEW,
		"seconds: a connection not in full feature phase this long after accept is "
		"dropped"),
	[CK_D_NOP_INTERVAL] = INT(DAEMON, "nop_interval", 0, 3600, 10, NEW,
		"seconds: a NOP-In ping on a connection idle this long; `0` = never ping"),
	[CK_D_NOP_TIMEOUT] = INT(DAEMON, "nop_timeout", 1, 3600, 30, NEW,
		"seconds: a connection whose ping is not answered within this is dropped, its "
		"tasks aborted"),
	[CK_D_QUEUE_DEPTH] = INT(DAEMON, "queue_depth", 1, 4096, 128, NEW,
		"commands in flight per session (the CmdSN window)"),
	[CK_D_STATE_DIR] = KEY(DAEMON, "state_dir", PATH, NULL,
		"\"" CONF_DEFAULT_STATE_DIR "\"", RESTART,
		"directory of the persistent reservation (APTPL) files, one `POOL.VOLUME.pr` per "
		"LU, created (mode 0700) at the first APTPL save; persistent storage, not the "
		"control socket's directory"),
	[CK_D_MAX_DISCOVERY_SESSIONS] = INT(DAEMON, "max_discovery_sessions", 1, 4096, 16, NEW,
		"discovery sessions at once, counted apart from `max_sessions` and "
		"`max_connections`; a discovery login over it is refused"),
	[CK_D_DISCOVERY_IDLE_TIMEOUT] = INT(DAEMON, "discovery_idle_timeout", 1, 3600, 30, NEW,
		"seconds: a discovery session that sends no Text request this long is closed "
		"(NOP-Outs do not keep it open)"),
	[CK_D_EVENT_EXEC] = KEY(DAEMON, "event_exec", PATH, NULL, NULL, LIVE,
		"a program run once per event, the event's JSON object on its stdin and its "
		"kind as its argument, one at a time, never on a reactor"),
	[CK_D_EVENT_EXEC_TIMEOUT] = INT(DAEMON, "event_exec_timeout", 1, 3600, 10, LIVE,
		"seconds: a hook still running this long is killed with its process group"),
	[CK_D_METRICS] = KEY(DAEMON, "metrics", STRING, "\"ip:port\" or \"[ipv6]:port\"",
		"off", RESTART,
		"serve Prometheus text exposition at `http://ADDR/metrics` and `/healthz` (200 "
		"while every reactor answers within 1 s, else 503), GET or HEAD, by libmicrohttpd "
		"within the limits below; without authentication: bind it to a loopback or "
		"management address"),
	[CK_D_METRICS_MAX_CONNECTIONS] = INT(DAEMON, "metrics_max_connections", 1, 1024, 64,
		RESTART, "metrics connections open at once; one more is closed at once "
		"(`rtgt_metrics_refused_total{reason=\"connections\"}`); each open connection "
		"is one thread"),
	[CK_D_METRICS_MAX_PER_ADDRESS] = INT(DAEMON, "metrics_max_per_address", 1, 1024, 16,
		RESTART, "at most metrics_max_connections: metrics connections open at once from "
		"one client address; one more from it is closed at once (`reason=\"per_address\"`), "
		"so that one host cannot take every slot"),
	[CK_D_METRICS_MAX_REQUEST] = INT(DAEMON, "metrics_max_request", 1024, 1048576, 8192,
		RESTART, "bytes of request line plus headers; a longer request is answered 431 "
		"(414 when the request line alone is too long) and closed (`reason=\"too_large\"`)"),
	[CK_D_METRICS_IDLE_TIMEOUT] = INT(DAEMON, "metrics_idle_timeout", 1, 3600, 5, RESTART,
		"seconds: a metrics connection that sends nothing for this long is closed "
		"(`reason=\"timeout\"` when it had not been answered)"),
	[CK_D_SMARTCTL] = KEY(DAEMON, "smartctl", PATH, NULL,
		"\"" CONF_DEFAULT_SMARTCTL "\"", RESTART,
		"smartmontools' `smartctl`, run for every member or spare that is a block "
		"device"),
	[CK_D_HEALTH_INTERVAL] = INT(DAEMON, "health_interval", 0, 7 * 86400, 1800, RESTART,
		"seconds between health checks of block-device members, the first at start; "
		"`0` = none"),
	[CK_D_HEALTH_FAIL] = KEY(DAEMON, "health_fail", STRING, "report | spare",
		"\"report\"", LIVE,
		"a member whose health turns failing is reported; with `spare`, when the pool "
		"is optimal and has a spare, it is also failed out so that the spare rebuilds"),

	/* pools */
	[CK_P_NAME] = KEY(POOL, "name", STRING, "1..63 of A-Z a-z 0-9 . _ -", "required", LIVE,
		"unique among pools; a new name is a pool added (and the old one removed)"),
	[CK_P_LEVEL] = KEY(POOL, "level", STRING, "raid0 | raid1 | raid5 | raid6 | raid10 | rbd",
		"required", RESTART,
		"the RAID level; raid10 is near-2 (members 0+1, 2+3, ... mirror); rbd is a "
		"Ceph pool"),
	[CK_P_CHUNK] = KEY(POOL, "chunk", SIZE, "power of two, 4K..16M", "\"64K\"", RESTART,
		"the stripe unit"),
	[CK_P_MEMBERS] = KEY(POOL, "members", STRINGS, "raid0 >= 1, raid1 >= 2, raid5 >= 3, "
		"raid6 >= 4, raid10 even and >= 4", "required (not for rbd)", RESTART,
		"member files or block devices in order (a member's position is its index for "
		"`rtgtctl fail`); each at most 255 bytes as written"),
	[CK_P_SPARES] = KEY(POOL, "spares", STRINGS, "members + spares <= 64", NULL, RESTART,
		"hot spares (a warning for raid0, which cannot use them)"),
	[CK_P_CREATE_SIZE] = KEY(POOL, "create_size", SIZE, ">= 1M, a multiple of 4K", NULL,
		OPEN, "create missing member files sparse with this size; without it a missing "
		"member is a start-up error"),
	[CK_P_DIRECT_IO] = KEY(POOL, "direct_io", BOOL, NULL, "false", RESTART,
		"open members with `O_DIRECT`"),
	[CK_P_REBUILD_MBPS] = INT(POOL, "rebuild_mbps", 0, 1000000, 0, RESTART,
		"MB/s cap for rebuild and scrub; `0` = unlimited"),
	[CK_P_HDD] = KEY(POOL, "hdd", GROUP, NULL, NULL, RESTART,
		"lab model making members behave like spinning disks (see \"pools[].hdd\")"),
	[CK_P_CEPH_CONF] = KEY(POOL, "ceph_conf", PATH, NULL, "required for rbd", RESTART,
		"path of ceph.conf; only for rbd"),
	[CK_P_RBD_POOL] = KEY(POOL, "rbd_pool", STRING, NULL, "required for rbd", RESTART,
		"the Ceph pool holding the images; only for rbd"),
	[CK_P_CEPH_ID] = KEY(POOL, "ceph_id", STRING, NULL, "\"admin\"", RESTART,
		"the Ceph client id; only for rbd"),
	[CK_P_KEYRING] = KEY(POOL, "keyring", PATH, NULL, NULL, RESTART,
		"the keyring path; only for rbd"),
	[CK_P_START_DEGRADED] = KEY(POOL, "start_degraded", BOOL, NULL, "false", OPEN,
		"deprecated (a warning at every load): start the pool degraded when members are "
		"missing and redundancy allows; use `rtgtd --start-degraded POOL` once instead"),
	[CK_P_THICK] = KEY(POOL, "thick", BOOL, NULL, "true", RESTART,
		"write each new image out in full in the background (the LUN answers NOT READY "
		"until done); `false` leaves it thin; only for rbd"),
	[CK_P_PROVISION_MBPS] = INT(POOL, "provision_mbps", 0, 1000000, 0, RESTART,
		"MB/s (10^6 bytes/s) cap for writing a new thick image out; `0` = unlimited; only "
		"for rbd"),
	[CK_P_THIN_THRESHOLD] = INT(POOL, "thin_threshold", 1, 100, CONF_THIN_THRESHOLD_DEFAULT,
		RESTART, "percent of the space the pool's thin volumes may take at which their "
		"initiators get THIN PROVISIONING SOFT THRESHOLD REACHED; not for rbd"),

	/* pools[].hdd */
	[CK_H_MBPS] = KEY(HDD, "mbps", NUMBER, "> 0", "required", RESTART,
		"sequential rate, MB/s"),
	[CK_H_AVG_SEEK_MS] = KEY(HDD, "avg_seek_ms", NUMBER, ">= 0", "required", RESTART,
		"average seek time, milliseconds"),
	[CK_H_RPM] = { .sect = CONF_S_HDD, .name = "rpm", .type = CONF_T_INT, .min = 1,
		       .max = 100000, .def = "required", .reload = CONF_RELOAD_RESTART,
		       .desc = "spindle speed (rotational latency)" },
	[CK_H_WRITE_CACHE] = KEY(HDD, "write_cache", BOOL, NULL, "true", RESTART,
		"`false` models disks with their volatile write cache off: a write completes "
		"when the head has written it"),

	/* portals */
	[CK_PT_NAME] = KEY(PORTAL, "name", STRING, NULL, "required", LIVE,
		"unique among portals; targets refer to it"),
	[CK_PT_LISTEN] = KEY(PORTAL, "listen", STRING, "\"a.b.c.d:port\" or \"[ipv6]:port\"",
		"required", LIVE,
		"numeric address (no host names), port 1..65535; no two portals on one address "
		"and port, a wildcard excludes every other address of its family on that port"),
	[CK_PT_TPGT] = { .sect = CONF_S_PORTAL, .name = "tpgt", .type = CONF_T_INT, .min = 1,
			 .max = 65535, .def = "position", .reload = CONF_RELOAD_LIVE,
			 .desc = "the target portal group tag, unique among portals; by default "
				 "the portal's 1-based position in the list" },

	/* initiator_groups */
	[CK_G_NAME] = KEY(GROUP, "name", STRING, "1..63 of A-Z a-z 0-9 . _ -", "required", LIVE,
		"unique among groups; LUN mappings refer to it"),
	[CK_G_MEMBERS] = KEY(GROUP, "members", STRINGS, "iSCSI names", "required", LIVE,
		"the group's initiators; an initiator belongs to at most one group"),

	/* discovery */
	[CK_DI_CHAP] = KEY(DISCOVERY, "chap", GROUP, NULL, NULL, LIVE,
		"CHAP every discovery session must pass (see \"chap\"); a change closes "
		"discovery sessions"),

	/* targets */
	[CK_T_IQN] = KEY(TARGET, "iqn", STRING, "iSCSI name, <= 223 bytes", "required", LIVE,
		"the target's name, unique among targets"),
	[CK_T_ALIAS] = KEY(TARGET, "alias", STRING, "<= 255 bytes", NULL, LIVE,
		"TargetAlias sent at login"),
	[CK_T_PORTALS] = KEY(TARGET, "portals", STRINGS, "non-empty, each defined, none twice",
		"required", LIVE, "names of the portals the target is reachable on"),
	[CK_T_LUNS] = KEY(TARGET, "luns", GROUPS, "non-empty", "required", LIVE,
		"the target's logical units (see \"targets[].luns[]\")"),
	[CK_T_ALLOW] = KEY(TARGET, "allow", MIXED, "non-empty", "( \"ALL\" )", LIVE,
		"initiators allowed to log in: names, `\"ALL\"`, and groups with an initiator's "
		"own CHAP or address rules (see \"targets[].allow[]\")"),
	[CK_T_CHAP] = KEY(TARGET, "chap", GROUP, NULL, NULL, LIVE,
		"CHAP for every initiator without credentials of its own (see \"chap\")"),
	[CK_T_PEER_PORTAL_GROUPS] = KEY(TARGET, "peer_portal_groups", INTS,
		"each 1..65535, none twice, none a TPGT of this target's portals", NULL, LIVE,
		"TPGTs under which other nodes export this same target (ALUA "
		"active/non-optimized)"),

	/* targets[].luns[] */
	[CK_L_LUN] = { .sect = CONF_S_LUN, .name = "lun", .type = CONF_T_INT, .min = 0,
		       .max = CONF_MAX_LUN, .def = "required", .reload = CONF_RELOAD_LIVE,
		       .desc = "the LUN, unique within the target" },
	[CK_L_POOL] = KEY(LUN, "pool", STRING, "a defined pool", "required", LIVE,
		"the pool holding the volume"),
	[CK_L_VOLUME] = KEY(LUN, "volume", STRING,
		"1..63 of A-Z a-z 0-9 . _ -, or VOLUME@SNAP (1..31 each)", "required",
		LIVE, "the volume inside the pool, created on first use; VOLUME@SNAP exports a "
		"snapshot (rtgtctl snapshot), read-only and without size"),
	[CK_L_SIZE] = KEY(LUN, "size", SIZE_PCT, "a multiple of 4K, or 1%..100% of the pool",
		"required (none for a snapshot)", LIVE,
		"the volume's size; raised and reloaded, the volume grows in place (RAID pools); "
		"volumes never shrink"),
	[CK_L_READ_ONLY] = KEY(LUN, "read_only", BOOL, NULL, "false", LIVE,
		"every initiator that sees the LUN sees it read-only"),
	[CK_L_GROUPS] = KEY(LUN, "groups", MIXED, NULL, "every initiator", LIVE,
		"only the listed initiator groups see the LUN: group names or mappings (see "
		"\"targets[].luns[].groups[]\"); `( )` hides it"),
	[CK_L_THIN] = KEY(LUN, "thin", BOOL, NULL, "false", RESTART,
		"a thin LUN: space taken by writes, given back by UNMAP"),

	/* targets[].luns[].groups[] */
	[CK_M_GROUP] = KEY(MAP, "group", STRING, "a defined initiator group", "required", LIVE,
		"the group that sees the LUN"),
	[CK_M_LUN] = { .sect = CONF_S_MAP, .name = "lun", .type = CONF_T_INT, .min = 0,
		       .max = CONF_MAX_LUN, .def = "the LUN's", .reload = CONF_RELOAD_LIVE,
		       .desc = "the number the group sees the LUN under" },
	[CK_M_READ_ONLY] = KEY(MAP, "read_only", BOOL, NULL, "the LUN's", LIVE,
		"read-only for this group (`false` cannot lift the LUN's own)"),

	/* targets[].allow[] groups */
	[CK_A_INITIATOR] = KEY(ALLOW, "initiator", STRING, "iSCSI name",
		"required without address", LIVE, "the initiator the entry is about"),
	[CK_A_CHAP] = KEY(ALLOW, "chap", GROUP, "user and secret required", NULL, LIVE,
		"that initiator's own CHAP credentials (see \"chap\"); the target's `chap` does "
		"not apply to it"),
	[CK_A_ADDRESS] = KEY(ALLOW, "address", STRING_OR_LIST,
		"numeric addresses or networks ADDR/LEN", NULL, LIVE,
		"with `initiator`: the networks it may log in from; without: any initiator the "
		"list does not name may log in from them"),

	/* chap groups */
	[CK_C_USER] = KEY(CHAP, "user", STRING, NULL, NULL, LIVE,
		"the name the initiator authenticates with; together with `secret`"),
	[CK_C_SECRET] = KEY(CHAP, "secret", STRING, "12..255 characters", NULL, LIVE,
		"the initiator's secret; over 16 is a warning (the Microsoft initiator refuses "
		"it)"),
	[CK_C_MUTUAL_USER] = KEY(CHAP, "mutual_user", STRING, NULL, NULL, LIVE,
		"the name the target answers with (mutual CHAP); together with `mutual_secret`"),
	[CK_C_MUTUAL_SECRET] = KEY(CHAP, "mutual_secret", STRING,
		"12..255 characters, not `secret`", NULL, LIVE,
		"the target's secret for mutual CHAP"),
};

#undef INT
#undef KEY

static const char *const type_names[] = {
	[CONF_T_INT] = "integer", [CONF_T_NUMBER] = "number", [CONF_T_BOOL] = "boolean",
	[CONF_T_STRING] = "string", [CONF_T_PATH] = "path", [CONF_T_SIZE] = "size",
	[CONF_T_SIZE_PCT] = "size or N%", [CONF_T_STRINGS] = "list of strings",
	[CONF_T_INTS] = "list of integers", [CONF_T_GROUP] = "group",
	[CONF_T_GROUPS] = "list of groups", [CONF_T_MIXED] = "list of strings and groups",
	[CONF_T_STRING_OR_LIST] = "string or list of strings",
};

static const char *const reload_names[] = {
	[CONF_RELOAD_LIVE] = "live", [CONF_RELOAD_NEW] = "new connections",
	[CONF_RELOAD_RESTART] = "restart", [CONF_RELOAD_OPEN] = "pool open",
	[CONF_RELOAD_KEYS] = "per key",
};

/* One line per key: section path, name, type, range, default, reload,
 * description, separated by tabs (the table's strings hold none). */
void conf_keys_print(FILE *f)
{
	for (unsigned i = 0; i < CK__N; i++) {
		const struct conf_key *k = &conf_keys[i];

		fprintf(f, "%s\t%s\t%s\t", conf_sects[k->sect].path, k->name, type_names[k->type]);
		if (k->type == CONF_T_INT)
			fprintf(f, "%lld..%lld\t", k->min, k->max);
		else
			fprintf(f, "%s\t", k->range ? k->range : "-");
		if (k->def)
			fprintf(f, "%s\t", k->def);
		else if (k->type == CONF_T_INT)
			fprintf(f, "%lld\t", k->idef);
		else
			fputs("none\t", f);
		fprintf(f, "%s\t%s\n", reload_names[k->reload], k->desc);
	}
}
