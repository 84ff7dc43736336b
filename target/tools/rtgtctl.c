/*
 * target/tools/rtgtctl.c - command line client of rtgtd's control socket.
 *
 * Layer: front end (target/tools/README.md "Layers"), the top: main().
 * May call: rtgtctl_live.c, rtgtctl_events.c (the other two front ends),
 * ctlclient.c, conf/ (conf_load for daemon.control), json-c, libc.
 *
 *   rtgtctl [-s SOCKET | -c CONFIG] COMMAND [ARGS] [--json]
 *
 * Sends one request line {"cmd":..., "args":[...]} and reads one reply line
 * (protocol: target/daemon/ctl.h). Prints the reply as tables, or with
 * --json as the daemon's object minus "ok".
 *
 * Exit status: 0 success, 1 the daemon reported an error, 2 usage error,
 * 3 the daemon could not be reached or did not answer.
 *
 * One request, one reply: no state machine beyond connect, send, receive.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "target/tools/rtgtctl.h"

#define DEFAULT_SOCKET "var/rtgtd.sock"
#define SYSTEM_CONF "/etc/rtgt/rtgt.conf"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtgtctl [-s SOCKET | -c CONFIG] COMMAND [ARGS] [--json]\n"
		"\n"
		"commands:\n"
		"  status                   pools, members, volumes, targets, sessions\n"
		"  stats                    per target, LUN, session and member counters, latency\n"
		"  sessions                 logged-in initiators per target, negotiated parameters\n"
		"  fail POOL MEMBER         mark a member faulty (MEMBER: 0-based index or path)\n"
		"  add-spare POOL PATH      add an existing file or device as a hot spare\n"
		"                           (a relative PATH is taken from the current directory)\n"
		"  replace POOL MEMBER      copy a working member to a spare, which then takes\n"
		"                           its place (the pool stays redundant)\n"
		"  remove POOL MEMBER       detach a faulty or spare member\n"
		"  grow POOL --add PATH     add a raid disk to a raid0/5/6 pool (two --add: a mirror\n"
		"                           pair to a raid10) and reshape onto it\n"
		"  convert POOL LEVEL --add PATH\n"
		"                           raid1 of two -> raid5 of three, raid5 -> raid6 (reshape)\n"
		"  scrub POOL [--repair]    check parity/mirrors, optionally repair mismatches\n"
		"  resize TARGET LUN SIZE   grow a LUN's volume online (SIZE: bytes, K/M/G/T, N%%)\n"
		"  volume list|create|delete|inflate ...\n"
		"                           volumes of a pool: sizes, space, thin or thick, origin\n"
		"  snapshot [delete] POOL VOLUME[@]NAME\n"
		"                           take (or delete) a read-only snapshot of a thin volume\n"
		"  clone POOL VOLUME@SNAP NEW  a writable thin volume sharing the snapshot's extents\n"
		"  rollback POOL VOLUME@SNAP [--force]\n"
		"                           make the volume the snapshot again\n"
		"  check POOL               re-count every extent map of the pool from the members\n"
		"  reload                   re-read the daemon's configuration file and apply it live\n"
		"  events [--follow]        what happened: members faulty, slow or failing their\n"
		"                           health check, rebuilds, scrubs, pool state, logins refused\n"
		"  stats --watch SECONDS [--count N]\n"
		"                           MB/s, IOPS, p50/p99, queue depth per portal, session,\n"
		"                           LUN and member every SECONDS (--json: one object a line)\n"
		"  top [--interval SECONDS] refreshing view of the same (q quits)\n"
		"  paths [--interval SECONDS]\n"
		"                           each initiator's sessions, their TCP paths (MSS, RTT,\n"
		"                           retransmits), parameters, I/O shares, and warnings\n"
		"  COMMAND --help           what one command does\n"
		"\n"
		"options:\n"
		"  -s, --socket SOCKET      control socket; default: $RTGT_SOCKET, else\n"
		"                           daemon.control of " SYSTEM_CONF " if it exists,\n"
		"                           else " DEFAULT_SOCKET "\n"
		"  -c, --config CONFIG      take the socket from CONFIG's daemon.control\n"
		"      --json               print the daemon's JSON reply\n"
		"  -h, --help               this text\n"
		"\n"
		"exit status: 0 ok, 1 the daemon reported an error, 2 usage error,\n"
		"             3 the daemon cannot be reached\n");
}

/* ---- choosing the socket ---- */

/* daemon.control of @path; NULL (with a message when @loud) if unusable. */
static char *control_from_conf(const char *path, bool loud)
{
	struct conf *c;
	char *sock;
	FILE *errs = loud ? stderr : fopen("/dev/null", "w");
	int rc = conf_load(path, &c, errs ? errs : stderr);

	if (errs && errs != stderr)
		fclose(errs);
	if (rc) {
		if (loud)
			fprintf(stderr, "rtgtctl: %s: unusable configuration\n", path);
		return NULL;
	}
	sock = strdup(c->daemon.control);
	conf_free(c);
	return sock;
}

/* ---- human output ---- */

static const char *human_bytes(int64_t v, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	double d = (double)v;
	unsigned u = 0;

	while (d >= 1024 && u < sizeof(units) - 2) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lldB", (long long)v);
	else
		snprintf(buf, len, "%.1f%c", d, units[u]);
	return buf;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

static const char *get_str(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v = get(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

static int64_t get_i64(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	return v ? json_object_get_int64(v) : 0;
}

static size_t arr_len(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* "passed, 34 C, 0 realloc, 0 pending", "unavailable (why)", "-" for files;
 * "SLOW" when the slow check flags it. */
static void print_health(struct json_object *mo)
{
	struct json_object *h = get(mo, "health"), *slow = get(mo, "slow");

	printf("  ");
	if (!h) {
		printf("-");
	} else {
		printf("%s", get_str(h, "state", "?"));
		if (get(h, "temperature_c"))
			printf(", %lld C", (long long)get_i64(h, "temperature_c"));
		if (get(h, "reallocated_sectors"))
			printf(", %lld realloc", (long long)get_i64(h, "reallocated_sectors"));
		if (get(h, "pending_sectors"))
			printf(", %lld pending", (long long)get_i64(h, "pending_sectors"));
		if (get(h, "media_errors"))
			printf(", %lld media errors", (long long)get_i64(h, "media_errors"));
		if (get(h, "reason"))
			printf(" (%s)", get_str(h, "reason", ""));
	}
	if (slow && json_object_get_boolean(slow))
		printf(", SLOW");
}

static void print_pools(struct json_object *reply, bool counters)
{
	struct json_object *pools = get(reply, "pools");
	char b1[32], b2[32];

	if (!arr_len(pools)) {
		printf("no pools\n");
		return;
	}
	printf("%-16s %-7s %-11s %8s %9s %7s  %s\n", "POOL", "LEVEL", "STATE", "REBUILD",
	       "USABLE", "CHUNK", "SCRUB");
	for (size_t i = 0; i < arr_len(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);
		struct json_object *members = get(p, "members"), *vols = get(p, "volumes");
		struct json_object *prog = get(p, "rebuild_progress");
		char rebuild[16] = "-", scrub[48] = "-";
		const char *state = get_str(p, "state", "?");

		if (prog && (strcmp(state, "rebuilding") == 0 || strcmp(state, "provisioning") == 0))
			snprintf(rebuild, sizeof(rebuild), "%.1f%%",
				 json_object_get_double(prog) * 100.0);
		if (get(p, "scrub_state"))
			snprintf(scrub, sizeof(scrub), "%s, %lld mismatches",
				 get_str(p, "scrub_state", "?"),
				 (long long)get_i64(p, "scrub_mismatches"));
		printf("%-16s %-7s %-11s %8s %9s %7s  %s\n", get_str(p, "name", "?"),
		       get_str(p, "level", "?"), state, rebuild,
		       get(p, "usable_bytes") ? human_bytes(get_i64(p, "usable_bytes"), b1, sizeof(b1)) : "-",
		       get(p, "chunk") ? human_bytes(get_i64(p, "chunk"), b2, sizeof(b2)) : "-",
		       scrub);
		if (get(p, "rebuild_eta_s") && strcmp(state, "rebuilding") == 0)
			printf("  rebuild eta %.0f s\n", json_object_get_double(get(p, "rebuild_eta_s")));
		if (get(p, "sync_progress")) {
			printf("  initial sync %.1f%%", json_object_get_double(get(p, "sync_progress")) * 100.0);
			if (get(p, "sync_eta_s"))
				printf(", eta %.0f s", json_object_get_double(get(p, "sync_eta_s")));
			printf("\n");
		}
		if (get(p, "replace_progress")) {
			printf("  replacing a member: %.1f%% copied",
			       json_object_get_double(get(p, "replace_progress")) * 100.0);
			if (get(p, "replace_eta_s"))
				printf(", eta %.0f s", json_object_get_double(get(p, "replace_eta_s")));
			printf("\n");
		}
		if (get(p, "reshape")) {
			struct json_object *r = get(p, "reshape");

			printf("  reshape from %s on %lld members: %.1f%% moved", get_str(r, "from_level", "?"),
			       (long long)get_i64(r, "from_members"),
			       json_object_get_double(get(r, "progress")) * 100.0);
			if (get(r, "eta_s"))
				printf(", eta %.0f s", json_object_get_double(get(r, "eta_s")));
			if (get(r, "error"))
				printf(" (stalled: %s; retrying)", get_str(r, "error", "?"));
			printf("\n");
		}
		if (get(p, "thin_space_bytes")) {
			int64_t used = get_i64(p, "thin_used_bytes"), space = get_i64(p, "thin_space_bytes");

			printf("  thin volumes take %s of %s (%.0f%%, soft threshold %lld%%)\n",
			       human_bytes(used, b1, sizeof(b1)), human_bytes(space, b2, sizeof(b2)),
			       space ? (double)used * 100.0 / (double)space : 0.0,
			       (long long)get_i64(p, "thin_threshold"));
		}
		if (get(p, "bad_bytes"))
			printf("  %s recorded bad (unreadable)\n",
			       human_bytes(get_i64(p, "bad_bytes"), b1, sizeof(b1)));
		if (counters)
			printf("  %3s %-36s %-10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %8s\n", "#",
			       "MEMBER", "STATE", "READ", "WRITTEN", "READ OPS", "WRITE OPS", "RD p50",
			       "RD p99", "RD max", "WR p50", "WR p99", "WR max");
		else
			printf("  %3s %-36s %-10s %10s %10s  %s\n", "#", "MEMBER", "STATE", "READ",
			       "WRITTEN", "HEALTH");
		for (size_t m = 0; m < arr_len(members); m++) {
			struct json_object *mo = json_object_array_get_idx(members, m);

			printf("  %3zu %-36s %-10s %10s %10s", m, get_str(mo, "path", "?"),
			       get_str(mo, "state", "?"),
			       human_bytes(get_i64(mo, "read_bytes"), b1, sizeof(b1)),
			       human_bytes(get_i64(mo, "write_bytes"), b2, sizeof(b2)));
			if (counters)
				printf(" %10lld %10lld %8lld %8lld %8lld %8lld %8lld %8lld%s",
				       (long long)get_i64(mo, "read_ops"),
				       (long long)get_i64(mo, "write_ops"),
				       (long long)get_i64(mo, "read_lat_p50_us"),
				       (long long)get_i64(mo, "read_lat_p99_us"),
				       (long long)get_i64(mo, "read_lat_max_us"),
				       (long long)get_i64(mo, "write_lat_p50_us"),
				       (long long)get_i64(mo, "write_lat_p99_us"),
				       (long long)get_i64(mo, "write_lat_max_us"),
				       get(mo, "slow") && json_object_get_boolean(get(mo, "slow"))
				       ? "  SLOW" : "");
			else
				print_health(mo);
			printf("\n");
		}
		if (arr_len(vols)) {
			printf("  volumes:");
			for (size_t v = 0; v < arr_len(vols); v++) {
				struct json_object *vo = json_object_array_get_idx(vols, v);

				const char *vst = get_str(vo, "state", "ready");

				printf(" %s (%s", get_str(vo, "name", "?"),
				       human_bytes(get_i64(vo, "bytes"), b1, sizeof(b1)));
				if (get(vo, "thin"))
					printf(", thin, %s allocated",
					       human_bytes(get_i64(vo, "allocated_bytes"), b2, sizeof(b2)));
				/* rbd thick provisioning: not ready until written out */
				if (strcmp(vst, "provisioning") == 0) {
					printf(", provisioning %.1f%%, %s of ",
					       json_object_get_double(get(vo, "provision_progress")) * 100.0,
					       human_bytes(get_i64(vo, "provision_done_bytes"), b1, sizeof(b1)));
					printf("%s", human_bytes(get_i64(vo, "provision_total_bytes"), b2, sizeof(b2)));
					if (get(vo, "provision_eta_s"))
						printf(", eta %.0f s",
						       json_object_get_double(get(vo, "provision_eta_s")));
				} else if (strcmp(vst, "failed") == 0) {
					printf(", provisioning FAILED at %s: %s, not ready",
					       human_bytes(get_i64(vo, "provision_done_bytes"), b1, sizeof(b1)),
					       get_str(vo, "provision_error", "?"));
				}
				printf(")");
			}
			printf("\n");
		}
	}
}

static void print_params(struct json_object *params)
{
	int col = 0;

	if (!params)
		return;
	json_object_object_foreach(params, key, val) {
		char kv[96];
		int n = snprintf(kv, sizeof(kv), "%s=%s", key, json_object_get_string(val));

		if (col + n + 1 > 100) {
			printf("\n");
			col = 0;
		}
		if (col == 0)
			col = printf("        ");
		col += printf("%s ", kv);
	}
	if (col)
		printf("\n");
}

static void print_sessions(struct json_object *t, bool params)
{
	struct json_object *list = get(t, "session_list");

	for (size_t s = 0; s < arr_len(list); s++) {
		struct json_object *so = json_object_array_get_idx(list, s);
		struct json_object *tsih = get(so, "tsih");

		printf("    %-48s isid %-14s tsih %-6s via %s\n", get_str(so, "initiator", "?"),
		       get_str(so, "isid", "?"), tsih ? json_object_get_string(tsih) : "?",
		       get_str(so, "portal", "?"));
		if (params)
			print_params(get(so, "params"));
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* Whatever numeric counters the daemon reports for an object, nested
 * objects ("stats": {...}) flattened to "stats.read_ops"; byte counts in
 * human units. New counters show up without a client change. */
static void print_counters(struct json_object *o, const char *prefix)
{
	json_object_object_foreach(o, key, val) {
		char name[128], b[32];

		snprintf(name, sizeof(name), "%s%s", prefix, key);
		if (json_object_is_type(val, json_type_object)) {
			char sub[sizeof(name) + 1];

			snprintf(sub, sizeof(sub), "%s.", name);
			print_counters(val, sub);
		} else if (json_object_is_type(val, json_type_int)) {
			if (strcmp(name, "sessions") == 0)
				continue;
			if (ends_with(key, "bytes"))
				printf("    %-28s %s\n", name,
				       human_bytes(json_object_get_int64(val), b, sizeof(b)));
			else
				printf("    %-28s %lld\n", name,
				       (long long)json_object_get_int64(val));
		} else if (json_object_is_type(val, json_type_double)) {
			printf("    %-28s %.3f\n", name, json_object_get_double(val));
		}
	}
}

/* "1 2; peers 3" from a target's tpgts and peer_tpgts ("-" when it has no
 * portal); cut short at @len. */
static void tpg_list(struct json_object *t, char *out, size_t len)
{
	struct json_object *local = get(t, "tpgts"), *peers = get(t, "peer_tpgts");
	size_t o = 0;

#define TPG_PUT(...)                                                                  \
	do {                                                                          \
		int w_ = snprintf(out + o, len - o, __VA_ARGS__);                     \
		if (w_ < 0 || (size_t)w_ >= len - o)                                  \
			return;                                                       \
		o += (size_t)w_;                                                      \
	} while (0)
	out[0] = '\0';
	if (!arr_len(local))
		TPG_PUT("-");
	for (size_t i = 0; i < arr_len(local); i++)
		TPG_PUT("%s%lld", i ? " " : "",
			(long long)json_object_get_int64(json_object_array_get_idx(local, i)));
	if (arr_len(peers))
		TPG_PUT("; peers");
	for (size_t i = 0; i < arr_len(peers); i++)
		TPG_PUT(" %lld", (long long)json_object_get_int64(json_object_array_get_idx(peers, i)));
#undef TPG_PUT
}

static void print_targets(struct json_object *reply, bool sessions, bool counters, bool params)
{
	struct json_object *targets = get(reply, "targets");

	if (!arr_len(targets)) {
		printf("no targets\n");
		return;
	}
	printf("%-56s %8s  %s\n", "TARGET", "SESSIONS", "PORT GROUPS (local; peer nodes)");
	for (size_t i = 0; i < arr_len(targets); i++) {
		struct json_object *t = json_object_array_get_idx(targets, i);
		char groups[256];

		tpg_list(t, groups, sizeof(groups));
		printf("%-56s %8lld  %s\n", get_str(t, "iqn", "?"), (long long)get_i64(t, "sessions"),
		       groups);
		if (counters)
			print_counters(t, "");
		if (sessions)
			print_sessions(t, params);
		if (counters) {
			struct json_object *list = get(t, "session_list");

			for (size_t s = 0; s < arr_len(list); s++) {
				struct json_object *so = json_object_array_get_idx(list, s);

				printf("  session %s isid %s tsih %lld\n",
				       get_str(so, "initiator", "?"), get_str(so, "isid", "?"),
				       (long long)get_i64(so, "tsih"));
				print_counters(get(so, "stats"), "");
			}
		}
	}
}

/* Fields of an action's reply, one "key: value" line each. */
static void print_fields(struct json_object *reply)
{
	json_object_object_foreach(reply, key, val) {
		if (json_object_is_type(val, json_type_object) ||
		    json_object_is_type(val, json_type_array))
			printf("%s: %s\n", key,
			       json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		else
			printf("%s: %s\n", key, json_object_get_string(val));
	}
}

static void print_luns(struct json_object *reply)
{
	struct json_object *luns = get(reply, "luns");

	if (!luns)
		return;
	printf("\n%-32s %s\n", "VOLUME", "EXPORTED AS");
	for (size_t i = 0; i < arr_len(luns); i++) {
		struct json_object *l = json_object_array_get_idx(luns, i);
		struct json_object *ex = get(l, "exported_as");

		printf("%-32s", get_str(l, "volume", "?"));
		for (size_t j = 0; j < arr_len(ex); j++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(ex, j)));
		printf("%s\n", arr_len(ex) ? "" : " (not exported)");
		print_counters(l, "");
	}
}

/* A reload's summary: one line per non-empty list. */
static void print_reload(struct json_object *reply)
{
	static const char *const keys[][2] = {
		{ "targets_added", "targets added" },     { "targets_removed", "targets removed" },
		{ "targets_changed", "targets changed" }, { "portals_added", "portals added" },
		{ "portals_removed", "portals removed" }, { "pools_added", "pools added" },
		{ "pools_removed", "pools removed" },     { "volumes_added", "volumes added" },
		{ "volumes_resized", "volumes grown (bytes)" },
		{ "volumes_closed", "volumes no longer exported (closed)" },
		{ "needs_restart", "needs restart (skipped)" }, { "warnings", "warnings" },
	};
	bool any = false;

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		struct json_object *a = get(reply, keys[k][0]);

		if (!arr_len(a))
			continue;
		any = true;
		printf("%s:\n", keys[k][1]);
		for (size_t i = 0; i < arr_len(a); i++)
			printf("  %s\n", json_object_get_string(json_object_array_get_idx(a, i)));
	}
	if (!any)
		printf("configuration reloaded: nothing changed\n");
	else
		printf("configuration reloaded\n");
}

static void mib(char *buf, size_t len, int64_t b)
{
	snprintf(buf, len, "%.1f", (double)b / (1024.0 * 1024.0));
}

static void print_volumes(struct json_object *reply)
{
	struct json_object *vols = get(reply, "volumes");

	printf("%-12s %-32s %-8s %10s %10s %10s %10s  %-16s %s\n", "POOL", "NAME", "TYPE",
	       "SIZE MiB", "ALLOC MiB", "SHARED", "EXCLUSIVE", "ORIGIN", "LUN");
	for (size_t i = 0; i < arr_len(vols); i++) {
		struct json_object *v = json_object_array_get_idx(vols, i), *o;
		char sz[32], al[32], sh[32], ex[32];

		mib(sz, sizeof(sz), get_i64(v, "size"));
		mib(al, sizeof(al), get_i64(v, "allocated"));
		mib(sh, sizeof(sh), get_i64(v, "shared"));
		mib(ex, sizeof(ex), get_i64(v, "exclusive"));
		printf("%-12s %-32s %-8s %10s %10s %10s %10s  %-16s %s\n", get_str(v, "pool", "?"),
		       get_str(v, "name", "?"), get_str(v, "type", "?"), sz, al, sh, ex,
		       *get_str(v, "origin", "") ? get_str(v, "origin", "") : "-",
		       json_object_object_get_ex(v, "open", &o) && json_object_get_boolean(o) ?
		       "open" : "-");
	}
}

static void print_human(const char *cmd, char **args, struct json_object *reply)
{
	if (strcmp(cmd, "status") == 0) {
		print_pools(reply, false);
		printf("\n");
		print_targets(reply, true, false, false);
	} else if (strcmp(cmd, "stats") == 0) {
		print_pools(reply, true);
		printf("    (member latency in us, submission to completion of member I/O;\n"
		       "     p50/p99: upper bound of a power-of-two bucket, max: exact; 0: no I/O yet)\n\n");
		print_targets(reply, false, true, false);
		print_luns(reply);
	} else if (strcmp(cmd, "sessions") == 0) {
		print_targets(reply, true, false, true);
	} else if (strcmp(cmd, "reload") == 0) {
		print_reload(reply);
	} else {
		if (strcmp(cmd, "fail") == 0)
			printf("pool %s: member %s marked faulty\n", args[0], args[1]);
		else if (strcmp(cmd, "add-spare") == 0)
			printf("pool %s: spare %s added\n", args[0], args[1]);
		else if (strcmp(cmd, "grow") == 0)
			printf("pool %s: %s%s%s joins; reshape started (status shows the progress).\n"
			       "Add %s to the pool's members in the configuration as well.\n",
			       args[0], args[1], args[2] ? " and " : "", args[2] ? args[2] : "",
			       args[2] ? "them" : "it");
		else if (strcmp(cmd, "convert") == 0)
			printf("pool %s: %s joins; reshape to %s started (status shows the progress).\n"
			       "Add it to the pool's members and set its level in the configuration as well.\n",
			       args[0], args[1], args[2]);
		else if (strcmp(cmd, "replace") == 0)
			printf("pool %s: member %s is being copied to a spare (status shows the progress)\n",
			       args[0], args[1]);
		else if (strcmp(cmd, "scrub") == 0)
			printf("pool %s: scrub%s started\n", args[0],
			       args[1] ? " with repair" : "");
		else if (strcmp(cmd, "volume") == 0 && strcmp(args[0], "list") == 0) {
			print_volumes(reply);
			return;
		} else if (get(reply, "deleted")) {
			printf("pool %s: %s deleted\n", args[1], get_str(reply, "deleted", "?"));
			return;
		} else if (strcmp(cmd, "check") == 0) {
			struct json_object *pr = get(reply, "problems");

			printf("pool %s: %lld maps, %lld extents in use, %lld shared: %s\n", args[0],
			       (long long)get_i64(reply, "maps"), (long long)get_i64(reply, "extents_used"),
			       (long long)get_i64(reply, "extents_shared"),
			       get_i64(reply, "n_problems") ? "PROBLEMS" : "consistent");
			for (size_t i = 0; i < arr_len(pr); i++)
				printf("  %s\n", json_object_get_string(json_object_array_get_idx(pr, i)));
			if (get_i64(reply, "n_problems") > (int64_t)arr_len(pr))
				printf("  (%lld more)\n",
				       (long long)(get_i64(reply, "n_problems") - (int64_t)arr_len(pr)));
			return;
		} else if (strcmp(cmd, "snapshot") == 0) {
			printf("pool %s: snapshot %s taken\n", args[0], get_str(reply, "snapshot", "?"));
			return;
		} else if (get(reply, "created")) {
			printf("pool %s: volume %s created\n", args[1], get_str(reply, "created", "?"));
			return;
		} else if (get(reply, "inflated")) {
			printf("pool %s: volume %s no longer shares extents with its origin\n", args[1],
			       get_str(reply, "inflated", "?"));
			return;
		} else if (strcmp(cmd, "clone") == 0) {
			printf("pool %s: clone %s of %s made\n", args[0], get_str(reply, "clone", "?"),
			       args[1]);
			return;
		} else if (strcmp(cmd, "rollback") == 0) {
			printf("pool %s: volume %s rolled back to %s%s\n", args[0],
			       get_str(reply, "rolled_back", "?"), get_str(reply, "to", "?"),
			       get(reply, "reset") ? " (its LUN was reset)" : "");
			return;
		} else if (strcmp(cmd, "resize") == 0) {
			printf("%s LUN %s: volume %s %s %lld bytes\n", args[0], args[1],
			       get_str(reply, "volume", "?"),
			       get_i64(reply, "bytes") > get_i64(reply, "bytes_before") ?
			       "grown to" : "already", (long long)get_i64(reply, "bytes"));
			return;
		}
		print_fields(reply);
	}
}

/* ---- main ---- */

struct command {
	const char *name;
	int min_args, max_args;
	const char *usage;
	const char *help;
};

static const struct command commands[] = {
	{ "status", 0, 0, "status",
	  "Pools (level, state, rebuild progress and ETA, usable size, chunk, scrub),\n"
	  "their members (state, bytes) and volumes; targets with their sessions.\n" },
	{ "top", 0, 0, "top [--interval SECONDS] [--count N]",
	  "A refreshing terminal view (every SECONDS, default 1): total, per portal, per\n"
	  "session (initiator IQN, source address, portal), per LUN: MB/s read and\n"
	  "written, IOPS, p50/p99 command latency over the interval and the mean number\n"
	  "of commands in service (queue depth); per pool its state and rebuild\n"
	  "progress, per member its busy share, MB/s, IOPS and I/O latency. q or\n"
	  "Ctrl-C quits; --count N stops after N refreshes.\n" },
	{ "paths", 0, 0, "paths [--interval SECONDS] [--json]",
	  "Per initiator: its sessions, the portal (local address) and peer address\n"
	  "each came in on, the TCP_INFO of each connection (MSS, RTT, retransmits,\n"
	  "cwnd), negotiated digests, MaxRecvDataSegmentLength and burst lengths, and\n"
	  "each session's share of the I/O over SECONDS (default 2). Then warnings in\n"
	  "plain words: two sessions through one portal, one path only, MSS differing\n"
	  "between paths, retransmits above 1%, all I/O on one path, data digest on,\n"
	  "a MaxBurstLength below 1 MiB. Exit 0 (warnings are advice).\n" },
	{ "stats", 0, 0, "stats [--watch SECONDS [--count N]]",
	  "Counters since start: per member bytes, ops and I/O latency p50/p99 in\n"
	  "microseconds (power-of-two buckets) and the slowest I/O, SLOW when its p99\n"
	  "stays far above its siblings'; per target and per session ops, bytes,\n"
	  "logins and command latency p50/p99 in microseconds (time inside the SCSI\n"
	  "layer, log-linear histogram, <= 12.5% error); per LUN (volume) the same.\n"
	  "--watch SECONDS: every SECONDS the rates over the interval instead (as in\n"
	  "top), one line each, or with --json one object per line for recording\n"
	  "(scripts/initiator/report.py reads it); with --json and stdout not a\n"
	  "terminal a progress line goes to stderr. --count N stops after N.\n" },
	{ "sessions", 0, 0, "sessions",
	  "Logged-in sessions per target: initiator IQN, ISID, TSIH, portal, and the\n"
	  "negotiated parameters (digests, R2T and burst sizes, ...).\n" },
	{ "fail", 2, 2, "fail POOL MEMBER",
	  "Marks MEMBER (0-based position in the pool's members list, or its path)\n"
	  "faulty as if it had died; a configured spare starts rebuilding.\n" },
	{ "add-spare", 2, 2, "add-spare POOL PATH",
	  "Adds an existing file or block device as a hot spare (a relative PATH is\n"
	  "taken from the current directory). A degraded pool rebuilds onto it.\n" },
	{ "replace", 2, 2, "replace POOL MEMBER",
	  "Replaces a member that still works (a disk whose health is failing) with a\n"
	  "spare without degrading the pool: the spare, shown \"replacing\", receives a\n"
	  "copy of the member in the background (rate-capped like a rebuild, resumed\n"
	  "after a restart) and every write meanwhile; rows the member cannot read are\n"
	  "rebuilt from redundancy. Then it takes the member's slot and the old one is\n"
	  "left faulty, to be removed. Needs an optimal pool with a spare.\n" },
	{ "remove", 2, 2, "remove POOL MEMBER",
	  "Detaches a faulty or spare member (position or path, as for fail) from the\n"
	  "pool; its file is closed and left as it is. A raid disk's slot shows as\n"
	  "\"(removed)\", \"empty\" until a spare rebuilds into it. An active member is\n"
	  "refused (fail it first). The file may stay in the configuration: a restart\n"
	  "leaves it out with a warning.\n" },
	{ "grow", 1, 1, "grow POOL --add PATH [--add PATH]",
	  "Adds PATH (an existing file or device at least as large as the members; a\n"
	  "relative PATH is taken from the current directory) as one more raid disk\n"
	  "of a raid0, raid5 or raid6 pool (a raid10 takes a mirror pair: two --add)\n"
	  "and moves the data onto the wider layout in\n"
	  "the background while LUNs stay online (status: reshape progress and ETA;\n"
	  "rate-capped like a rebuild; resumed after a crash or restart from a\n"
	  "checkpoint in the superblocks). When it is done the pool's usable space has\n"
	  "grown. Needs an optimal pool. Add PATH to the pool's members in the\n"
	  "configuration now: a restart checks that the file and the pool agree.\n" },
	{ "convert", 2, 2, "convert POOL LEVEL --add PATH",
	  "Changes a pool's level with PATH as an added raid disk: a raid1 of two\n"
	  "members becomes a raid5 of three (LEVEL raid5), reshaped in the background\n"
	  "as grow does; a raid5 becomes a raid6 (LEVEL raid6) with Q on PATH, the\n"
	  "data staying where it is. Set level and members in the configuration now\n"
	  "as well.\n" },
	{ "scrub", 1, 1, "scrub POOL [--repair]",
	  "Starts a background check of parity / mirror copies; progress and the\n"
	  "mismatch count show in status. --repair rewrites what does not match.\n" },
	{ "resize", 3, 3, "resize TARGET LUN SIZE",
	  "Grows the volume behind LUN of TARGET (its IQN) to SIZE (bytes, with K, M,\n"
	  "G or T, or N% of its pool) while initiators use it: the volume grows in\n"
	  "place over the free space after it, the new size is recorded on every\n"
	  "member before the reply, and every session gets CAPACITY DATA HAS CHANGED\n"
	  "(rescan: iscsiadm -m session --rescan, then resize2fs/xfs_growfs; Windows:\n"
	  "Disk Management, Rescan Disks, Extend Volume). Refused, nothing changed:\n"
	  "a smaller SIZE (volumes never shrink), no free space after the volume\n"
	  "(volumes are never moved), a pool that cannot grow volumes (rbd). Raise\n"
	  "size in the configuration too: at start a larger on-disk volume is kept\n"
	  "with a warning.\n" },
	{ "volume", 1, 4,
	  "volume list [POOL] | volume create POOL NAME SIZE [--thin] |\n"
	  "       volume delete POOL NAME | volume inflate POOL NAME",
	  "list: every volume, snapshot and clone of POOL (or of every pool): its type\n"
	  "(thick, thin, snapshot), size, the bytes of the pool it takes (allocated),\n"
	  "how many of those another map shares (a snapshot and its volume share what\n"
	  "neither wrote since) and the rest (exclusive: what deleting it gives back),\n"
	  "its origin (a snapshot's volume, a clone's snapshot) and whether a LUN has\n"
	  "it open. create: a new volume of SIZE (bytes with K, M, G or T, or N% of the\n"
	  "pool), thick (reserved in full) or --thin, for a LUN to name later. delete:\n"
	  "removes volume NAME, recorded on every member before the reply; its space\n"
	  "is free then. Refused while a LUN of the running daemon has it open (remove\n"
	  "the LUN from the configuration and reload) or while it has snapshots\n"
	  "(delete them first).\n"
	  "inflate: gives clone NAME its own copy of every extent it shares with its\n"
	  "snapshot, which may then be deleted.\n" },
	{ "clone", 3, 3, "clone POOL VOLUME@SNAP NEW",
	  "Makes NEW, a writable thin volume holding what snapshot VOLUME@SNAP holds,\n"
	  "instantly: it shares the snapshot's extents until it writes them. A LUN\n"
	  "names it like any volume (thin = true). The snapshot cannot be deleted\n"
	  "while the clone depends on it (volume inflate ends that).\n" },
	{ "rollback", 2, 2, "rollback POOL VOLUME@SNAP [--force]",
	  "Makes VOLUME hold again what its snapshot VOLUME@SNAP holds, in one atomic\n"
	  "step (everything written since is gone; the snapshot stays). Refused while\n"
	  "a LUN has VOLUME open, unless --force: then its initiators get a LUN reset\n"
	  "(BUS DEVICE RESET FUNCTION OCCURRED on every path); unmount or take the disk\n"
	  "offline first, as its file system sees the old contents afterwards.\n" },
	{ "snapshot", 3, 3, "snapshot POOL VOLUME NAME | snapshot delete POOL VOLUME@NAME",
	  "Takes snapshot VOLUME@NAME of thin VOLUME: instant whatever its size (its\n"
	  "extent map is copied, no data), holding every write acknowledged before the\n"
	  "command and none after. The volume and the snapshot share their extents\n"
	  "until the volume writes one (it is copied then). A LUN with volume =\n"
	  "\"VOLUME@NAME\" exports it read-only. delete: removes the snapshot; the\n"
	  "extents only it held are free. Names: 1..31 of A-Z a-z 0-9 . _ - each.\n" },
	{ "check", 1, 1, "check POOL",
	  "Reads every extent map of POOL's thin volumes, snapshots and clones from\n"
	  "the members again and checks them: no pool extent named twice by one map\n"
	  "or by two unrelated volumes, none inside another volume's reserved space,\n"
	  "each extent's count of references as the daemon keeps it, no extent in use\n"
	  "that no map names (a leak). Prints the maps read, the extents in use and\n"
	  "shared, and each problem in one line; exit 1 when there is any. Run it on\n"
	  "an idle pool (a write in flight may be counted before its map block is\n"
	  "written). A pool whose maps contradict themselves is not assembled at all:\n"
	  "the log names the entry.\n" },
	{ "events", 0, 0, "events [--follow] [--json]",
	  "The daemon's newest events (it keeps 1024), oldest first: time, severity\n"
	  "(info, warning, error, critical), kind and what happened. Kinds:\n"
	  "member_faulty, member_removed, spare_added, member_slow, member_not_slow,\n"
	  "member_health, health_replace, health_no_replace, rebuild_started,\n"
	  "rebuild_done, rebuild_stopped, scrub_done (with its mismatches),\n"
	  "reshape_started, reshape_done, reshape_failed, thin_threshold, thin_full,\n"
	  "pool_degraded, pool_failed, login_failed. --json: one object a line\n"
	  "(seq, time, kind, severity, message and the kind's fields), the same\n"
	  "object daemon.event_exec gets on stdin. --follow: keep printing new\n"
	  "events as they come (Ctrl-C ends).\n" },
	{ "reload", 0, 0, "reload",
	  "Makes the daemon re-read its configuration file (same as SIGHUP). An\n"
	  "invalid file changes nothing: its FILE:LINE errors are printed, exit 1.\n"
	  "Otherwise targets, portals, ACLs, CHAP, LUNs, new pools and volumes are\n"
	  "applied without touching unaffected sessions; what cannot change live\n"
	  "(daemon.workers, daemon.control, a pool's level/chunk/members/spares) is\n"
	  "listed as \"needs restart\" and skipped. A volume whose size grew is grown\n"
	  "in place (as resize does); one that cannot grow is a warning.\n" },
};

/* add-spare takes paths from the user's point of view; the daemon's
 * working directory is not the user's. */
static char *absolute(const char *path)
{
	char cwd[PATH_MAX];
	char *out;

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

/* "-s X", "-sX", "--socket X", "--socket=X": the value, or NULL if @a is not
 * this option. Advances *i past a separate value. */
static const char *opt_value(int argc, char **argv, int *i, char shortc, const char *longname,
			     bool *missing)
{
	const char *a = argv[*i];
	size_t ll = strlen(longname);

	if (a[0] == '-' && a[1] == shortc && a[2])
		return a + 2;
	if (strncmp(a, "--", 2) == 0 && strncmp(a + 2, longname, ll) == 0 && a[2 + ll] == '=')
		return a + 3 + ll;
	if ((a[0] == '-' && a[1] == shortc && !a[2]) ||
	    (strncmp(a, "--", 2) == 0 && strcmp(a + 2, longname) == 0)) {
		if (*i + 1 >= argc) {
			*missing = true;
			return NULL;
		}
		return argv[++*i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *sock_opt = NULL, *conf_opt = NULL, *watch_opt = NULL, *ival_opt = NULL,
		   *count_opt = NULL, *add_opt = NULL, *add_opt2 = NULL;
	struct live_opts lo = { .interval_s = 0, .count = 0 };
	bool json = false, repair = false, dashdash = false, missing = false, help = false;
	bool follow = false, thin_opt = false, force = false;
	const struct command *cmd = NULL;
	struct json_object *req, *jargs, *reply, *ok;
	char *sock = NULL, *line, *spare = NULL, *spare2 = NULL;
	char *args[6] = { NULL, NULL, NULL, NULL, NULL, NULL };
	char *pos[5];
	const char *txt, *val;
	int npos = 0, fd, rc = EXIT_UNREACHABLE;

	/* options may come before or after the command and its arguments */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || !a[1]) {
			if (npos == 5) {
				fprintf(stderr, "rtgtctl: too many arguments (see --help)\n");
				return EXIT_USAGE;
			}
			pos[npos++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			dashdash = true;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "--repair") == 0) {
			repair = true;
		} else if (strcmp(a, "--thin") == 0) {
			thin_opt = true;
		} else if (strcmp(a, "--force") == 0) {
			force = true;
		} else if (!missing && (val = opt_value(argc, argv, &i, 'a', "add", &missing))) {
			if (add_opt2) {
				fprintf(stderr, "rtgtctl: at most two --add\n");
				return EXIT_USAGE;
			}
			if (add_opt)
				add_opt2 = val;
			else
				add_opt = val;
		} else if (strcmp(a, "--follow") == 0 || strcmp(a, "-f") == 0) {
			follow = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			help = true;
		} else if ((val = opt_value(argc, argv, &i, 'w', "watch", &missing))) {
			watch_opt = val;
		} else if (!missing && (val = opt_value(argc, argv, &i, 'i', "interval", &missing))) {
			ival_opt = val;
		} else if (!missing && (val = opt_value(argc, argv, &i, 'n', "count", &missing))) {
			count_opt = val;
		} else if (!missing && (val = opt_value(argc, argv, &i, 's', "socket", &missing))) {
			sock_opt = val;
		} else if (!missing && (val = opt_value(argc, argv, &i, 'c', "config", &missing))) {
			conf_opt = val;
		} else {
			if (missing)
				fprintf(stderr, "rtgtctl: %s needs a value\n", a);
			else
				fprintf(stderr, "rtgtctl: unknown option '%s' (see --help)\n", a);
			return EXIT_USAGE;
		}
	}
	if (npos == 0) {
		usage(help ? stdout : stderr);
		return help ? 0 : EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(pos[0], commands[i].name) == 0)
			cmd = &commands[i];
	if (!cmd) {
		if (help) {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "rtgtctl: unknown command '%s' (see --help)\n", pos[0]);
		return EXIT_USAGE;
	}
	if (help) {
		printf("usage: rtgtctl [-s SOCKET | -c CONFIG] %s [--json]\n\n%s", cmd->usage,
		       cmd->help);
		return 0;
	}
	if (npos - 1 < cmd->min_args || npos - 1 > cmd->max_args) {
		fprintf(stderr, "rtgtctl: usage: rtgtctl %s\n", cmd->usage);
		return EXIT_USAGE;
	}
	for (int i = 1; i < npos; i++)
		args[i - 1] = pos[i];
	if (repair && strcmp(cmd->name, "scrub") != 0) {
		fprintf(stderr, "rtgtctl: --repair only goes with scrub\n");
		return EXIT_USAGE;
	}
	if (thin_opt && (strcmp(cmd->name, "volume") != 0 || strcmp(args[0], "create") != 0)) {
		fprintf(stderr, "rtgtctl: --thin only goes with volume create\n");
		return EXIT_USAGE;
	}
	if (force && strcmp(cmd->name, "rollback") != 0) {
		fprintf(stderr, "rtgtctl: --force only goes with rollback\n");
		return EXIT_USAGE;
	}
	if (!strcmp(cmd->name, "volume")) {
		static const struct { const char *sub; int n; } subs[] = {
			{ "list", 0 }, { "list", 1 }, { "create", 3 }, { "delete", 2 },
			{ "inflate", 2 },
		};
		bool sub_ok = false;

		for (size_t k = 0; k < sizeof(subs) / sizeof(subs[0]); k++)
			sub_ok |= !strcmp(args[0], subs[k].sub) && npos - 2 == subs[k].n;
		if (!sub_ok) {
			fprintf(stderr, "rtgtctl: usage: rtgtctl %s\n", cmd->usage);
			return EXIT_USAGE;
		}
	}
	if (!strcmp(cmd->name, "snapshot") && !strcmp(args[0], "delete") && npos != 4) {
		fprintf(stderr, "rtgtctl: usage: rtgtctl %s\n", cmd->usage);
		return EXIT_USAGE;
	}
	if (thin_opt)
		args[npos - 1] = "--thin";
	if (force)
		args[npos - 1] = "--force";
	if (!add_opt != (strcmp(cmd->name, "grow") != 0 && strcmp(cmd->name, "convert") != 0)) {
		fprintf(stderr, add_opt ? "rtgtctl: --add only goes with grow and convert\n"
					: "rtgtctl: usage: rtgtctl %s\n", cmd->usage);
		return EXIT_USAGE;
	}
	if (follow && strcmp(cmd->name, "events") != 0) {
		fprintf(stderr, "rtgtctl: --follow only goes with events\n");
		return EXIT_USAGE;
	}
	if (watch_opt && strcmp(cmd->name, "stats") != 0) {
		fprintf(stderr, "rtgtctl: --watch only goes with stats (top and paths take --interval)\n");
		return EXIT_USAGE;
	}
	if ((ival_opt || count_opt) && strcmp(cmd->name, "top") != 0 &&
	    strcmp(cmd->name, "paths") != 0 && !watch_opt) {
		fprintf(stderr, "rtgtctl: --interval and --count go with top, paths, stats --watch\n");
		return EXIT_USAGE;
	}
	if (watch_opt || ival_opt) {
		const char *v = watch_opt ? watch_opt : ival_opt;
		char *end;

		lo.interval_s = strtod(v, &end);
		if (end == v || *end || !(lo.interval_s >= 0.1 && lo.interval_s <= 3600)) {
			fprintf(stderr, "rtgtctl: '%s': give the interval in seconds, 0.1 to 3600\n", v);
			return EXIT_USAGE;
		}
	}
	if (count_opt) {
		char *end;

		lo.count = strtol(count_opt, &end, 10);
		if (end == count_opt || *end || lo.count < 1) {
			fprintf(stderr, "rtgtctl: --count '%s': give a positive number\n", count_opt);
			return EXIT_USAGE;
		}
	}
	lo.json = json;
	if (sock_opt && conf_opt) {
		fprintf(stderr, "rtgtctl: give -s or -c, not both\n");
		return EXIT_USAGE;
	}

	if (sock_opt) {
		sock = strdup(sock_opt);
	} else if (conf_opt) {
		sock = control_from_conf(conf_opt, true);
		if (!sock)
			return EXIT_USAGE;
	} else if (getenv("RTGT_SOCKET") && *getenv("RTGT_SOCKET")) {
		sock = strdup(getenv("RTGT_SOCKET"));
	} else if (access(SYSTEM_CONF, F_OK) == 0 &&
		   (sock = control_from_conf(SYSTEM_CONF, false)) != NULL) {
		/* sock set */
	} else {
		sock = strdup(DEFAULT_SOCKET);
	}
	if (!sock) {
		fprintf(stderr, "rtgtctl: out of memory\n");
		return EXIT_UNREACHABLE;
	}

	if (!strcmp(cmd->name, "top") || !strcmp(cmd->name, "paths") || watch_opt) {
		if (lo.interval_s == 0)
			lo.interval_s = !strcmp(cmd->name, "paths") ? 2.0 : 1.0;
		rc = rtgtctl_live(sock, cmd->name, &lo);
		free(sock);
		return rc;
	}
	if (!strcmp(cmd->name, "events")) {
		rc = rtgtctl_events(sock, follow, json);
		free(sock);
		return rc;
	}
	req = json_object_new_object();
	jargs = json_object_new_array();
	if (!req || !jargs)
		goto nomem;
	json_object_object_add(req, "cmd", json_object_new_string(cmd->name));
	if (add_opt2 && strcmp(cmd->name, "grow") != 0) {
		fprintf(stderr, "rtgtctl: convert takes one --add\n");
		return EXIT_USAGE;
	}
	if (add_opt) {
		/* grow: POOL PATH [PATH]; convert: POOL PATH LEVEL */
		spare = absolute(add_opt);
		spare2 = add_opt2 ? absolute(add_opt2) : NULL;
		if (!spare || (add_opt2 && !spare2)) {
			fprintf(stderr, "rtgtctl: %s: %s\n", add_opt, strerror(errno));
			return EXIT_USAGE;
		}
		args[2] = add_opt2 ? spare2 : args[1];
		args[1] = spare;
	}
	if (strcmp(cmd->name, "add-spare") == 0) {
		spare = absolute(args[1]);
		if (!spare)
			goto nomem;
		args[1] = spare;
	}
	if (repair)
		args[1] = "--repair";
	for (int i = 0; i < 5 && args[i]; i++)
		json_object_array_add(jargs, json_object_new_string(args[i]));
	json_object_object_add(req, "args", jargs);

	fd = rtgtctl_connect(sock);
	if (fd < 0) {
		fprintf(stderr, "rtgtctl: cannot connect to %s: %s\n", sock, strerror(errno));
		goto free_req;
	}
	txt = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (rtgtctl_send_all(fd, txt, strlen(txt)) || rtgtctl_send_all(fd, "\n", 1)) {
		fprintf(stderr, "rtgtctl: cannot send to %s: %s\n", sock, strerror(errno));
		goto close_fd;
	}
	line = rtgtctl_recv_line(fd);
	if (!line) {
		fprintf(stderr, "rtgtctl: no reply from %s: %s\n", sock,
			errno == ECONNRESET ? "connection closed" : strerror(errno));
		goto close_fd;
	}
	reply = json_tokener_parse(line);
	if (!reply || !json_object_is_type(reply, json_type_object) ||
	    !json_object_object_get_ex(reply, "ok", &ok)) {
		fprintf(stderr, "rtgtctl: unreadable reply from %s: %.200s\n", sock, line);
		json_object_put(reply);
		free(line);
		goto close_fd;
	}
	if (!json_object_get_boolean(ok)) {
		fprintf(stderr, "rtgtctl: %s\n", get_str(reply, "error", "the daemon reported an error"));
		rc = EXIT_DAEMON_ERR;
	} else {
		json_object_object_del(reply, "ok");
		if (json)
			printf("%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		else
			print_human(cmd->name, args, reply);
		rc = fflush(stdout) ? EXIT_DAEMON_ERR : 0;
		if (!strcmp(cmd->name, "check") && get_i64(reply, "n_problems"))
			rc = EXIT_DAEMON_ERR;
	}
	json_object_put(reply);
	free(line);
close_fd:
	close(fd);
free_req:
	json_object_put(req);
	free(spare);
	free(spare2);
	free(sock);
	return rc;

nomem:
	fprintf(stderr, "rtgtctl: out of memory\n");
	json_object_put(req);
	json_object_put(jargs);
	free(sock);
	return EXIT_UNREACHABLE;
}
