/*
 * target/daemon/live.c - the control command "live" (see live.h).
 *
 * Stateless: every value is a cumulative counter or a histogram since the
 * object (session, LU, member) was created, stamped with one monotonic
 * time. rtgtctl subtracts two snapshots: bytes and ops over the time give
 * MB/s and IOPS, the histograms' difference the interval's p50/p99, the
 * latency sum's growth over the time the mean number of commands in
 * service (queue depth), a member's busy_ns growth its busy share.
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * raid/, target/scsi/, target/iscsi/, conf/, json-c, libc. Calls no other
 * file of the folder.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/live.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

/* raid's log2 member histogram: bucket b holds [2^(b-1), 2^b) us */
static struct json_object *member_hist_json(const uint64_t *h)
{
	struct json_object *a = json_object_new_array();

	for (unsigned b = 0; a && b < RAID_MEMBER_LAT_BUCKETS; b++) {
		struct json_object *pair;

		if (!h[b])
			continue;
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_int64((int64_t)(1ull << b)));
		json_object_array_add(pair, json_object_new_int64((int64_t)h[b]));
		json_object_array_add(a, pair);
	}
	return a;
}

static struct json_object *pool_json(const struct raid_pool_info *pi)
{
	struct json_object *p = json_object_new_object(), *members = json_object_new_array();

	if (!p || !members) {
		json_object_put(p);
		json_object_put(members);
		return NULL;
	}
	json_object_object_add(p, "name", json_object_new_string(pi->name));
	json_object_object_add(p, "level", json_object_new_string(pi->level));
	json_object_object_add(p, "state", json_object_new_string(pi->state));
	json_object_object_add(p, "rebuild_progress", json_object_new_double(pi->rebuild_progress));
	if (pi->rebuild_eta_s >= 0)
		json_object_object_add(p, "rebuild_eta_s", json_object_new_double(pi->rebuild_eta_s));
	if (pi->syncing)
		json_object_object_add(p, "sync_progress", json_object_new_double(pi->sync_progress));
	if (pi->scrub_state) {
		json_object_object_add(p, "scrub_state", json_object_new_string(pi->scrub_state));
		add_u64(p, "scrub_mismatches", pi->scrub_mismatches);
	}
	if (pi->thin_space_bytes) {
		add_u64(p, "thin_used_bytes", pi->thin_used_bytes);
		add_u64(p, "thin_space_bytes", pi->thin_space_bytes);
	}
	for (unsigned m = 0; m < pi->n_members && m < 64; m++) {
		const struct raid_member_info *mi = &pi->members[m];
		struct json_object *mo = json_object_new_object();

		json_object_object_add(mo, "path", json_object_new_string(mi->path));
		json_object_object_add(mo, "state", json_object_new_string(mi->state));
		add_u64(mo, "read_bytes", mi->read_bytes);
		add_u64(mo, "write_bytes", mi->write_bytes);
		add_u64(mo, "read_ops", mi->read_ops);
		add_u64(mo, "write_ops", mi->write_ops);
		add_u64(mo, "busy_ns", mi->busy_ns);
		json_object_object_add(mo, "read_hist", member_hist_json(mi->lat_hist[0]));
		json_object_object_add(mo, "write_hist", member_hist_json(mi->lat_hist[1]));
		add_u64(mo, "read_lat_sum_us", mi->lat_sum_us[0]);
		add_u64(mo, "write_lat_sum_us", mi->lat_sum_us[1]);
		add_u64(mo, "read_lat_max_us", mi->read_lat_max_us);
		add_u64(mo, "write_lat_max_us", mi->write_lat_max_us);
		json_object_array_add(members, mo);
	}
	json_object_object_add(p, "members", members);
	return p;
}

static struct json_object *lu_json(const struct conf *c, const struct live_lu *e)
{
	struct json_object *o = json_object_new_object(), *ex = json_object_new_array();
	const struct conf_hist *h = scsi_lu_lat(e->lu);
	struct scsi_lu_stats st;
	char name[512];

	if (!o || !ex) {
		json_object_put(o);
		json_object_put(ex);
		return NULL;
	}
	for (unsigned t = 0; t < c->n_targets; t++)
		for (unsigned l = 0; l < c->targets[t].n_luns; l++)
			if (!strcmp(c->targets[t].luns[l].pool, e->pool) &&
			    !strcmp(c->targets[t].luns[l].volume, e->volume)) {
				snprintf(name, sizeof(name), "%s/%u", c->targets[t].iqn,
					 c->targets[t].luns[l].lun);
				json_object_array_add(ex, json_object_new_string(name));
			}
	scsi_lu_get_stats(e->lu, &st);
	json_object_object_add(o, "pool", json_object_new_string(e->pool));
	json_object_object_add(o, "volume", json_object_new_string(e->volume));
	json_object_object_add(o, "exported_as", ex);
	add_u64(o, "read_ops", st.read_ops);
	add_u64(o, "write_ops", st.write_ops);
	add_u64(o, "other_ops", st.other_ops);
	add_u64(o, "read_bytes", st.read_bytes);
	add_u64(o, "write_bytes", st.write_bytes);
	add_u64(o, "latency_count", conf_hist_count(h));
	add_u64(o, "latency_sum_us", conf_hist_sum_ns(h) / 1000u);
	json_object_object_add(o, "latency_hist", iscsi_lat_hist_json(h));
	return o;
}

int daemon_live_json(const struct conf *c, struct iscsi_server *srv,
		     struct raid_pool *const *pools, unsigned n_pools,
		     const struct live_lu *lus, unsigned n_lus, struct json_object *reply)
{
	struct json_object *pa = json_object_new_array(), *la = json_object_new_array();
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	struct timespec wall;
	int rc = 0;

	if (!pa || !la || !pi) {
		rc = -ENOMEM;
		goto out;
	}
	add_u64(reply, "time_ns", conf_mono_ns());
	clock_gettime(CLOCK_REALTIME, &wall);
	json_object_object_add(reply, "wall", json_object_new_double((double)wall.tv_sec +
								     (double)wall.tv_nsec / 1e9));
	rc = iscsi_server_live_json(srv, reply);
	for (unsigned i = 0; i < n_lus && !rc; i++) {
		struct json_object *o = lu_json(c, &lus[i]);

		if (!o)
			rc = -ENOMEM;
		else
			json_object_array_add(la, o);
	}
	for (unsigned i = 0; i < n_pools && !rc; i++) {
		struct json_object *o;

		if (raid_pool_info(pools[i], pi))
			continue;
		o = pool_json(pi);
		if (!o)
			rc = -ENOMEM;
		else
			json_object_array_add(pa, o);
	}
out:
	free(pi);
	json_object_object_add(reply, "luns", la);
	json_object_object_add(reply, "pools", pa);
	return rc;
}
