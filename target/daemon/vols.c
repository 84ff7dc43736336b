/*
 * target/daemon/vols.c - the control socket's volume and snapshot commands:
 * "volume list [POOL]", "volume create POOL NAME SIZE [--thin]", "volume
 * delete POOL NAME", "volume inflate POOL NAME", "snapshot POOL VOLUME
 * NAME", "snapshot delete POOL VOLUME@NAME", "clone POOL VOLUME@SNAP NEW"
 * and "rollback POOL VOLUME@SNAP [--force]" (rtgtctl, README "Snapshots
 * and clones").
 *
 * Layer: helpers (target/daemon/README.md "Layers"). May call: entries.c
 * (the daemon's pools and LUs), raid/raid.h, target/scsi/scsi.h (a forced
 * rollback resets the LU), conf/, json-c.
 *
 * The raid layer checks and refuses; this file only turns its answers into
 * one line for the user and the reply's fields. Nothing here holds a lock
 * of its own: the pools serialize their volume tables.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/daemon_int.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"

static const char *arg_at(struct json_object *args, size_t i)
{
	if (!args || !json_object_is_type(args, json_type_array) ||
	    json_object_array_length(args) <= i)
		return NULL;
	return json_object_get_string(json_object_array_get_idx(args, i));
}

static struct raid_pool *pool_named(struct daemon *d, const char *name, char *err, size_t errlen)
{
	struct pool_ent *pe = name ? daemon_pool_find(d, name) : NULL;

	if (!pe)
		snprintf(err, errlen, "no pool named '%s'", name ? name : "");
	return pe ? pe->pool : NULL;
}

static void add_i64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

/* One pool's volumes into @arr. */
static int list_pool(struct daemon *d, struct pool_ent *pe, struct json_object *arr)
{
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	int rc;

	if (!pi)
		return -ENOMEM;
	rc = raid_pool_info(pe->pool, pi);
	if (rc) {
		free(pi);
		return rc;
	}
	for (unsigned i = 0; i < pi->n_volumes; i++) {
		const __typeof__(pi->volumes[0]) *v = &pi->volumes[i];
		struct json_object *o = json_object_new_object();
		uint64_t alloc = v->thin ? v->allocated : v->bytes;

		if (!o)
			break;
		json_object_object_add(o, "pool", json_object_new_string(pe->name));
		json_object_object_add(o, "name", json_object_new_string(v->name));
		json_object_object_add(o, "type", json_object_new_string(
			v->snapshot ? "snapshot" : v->thin ? "thin" : "thick"));
		add_i64(o, "size", v->bytes);
		add_i64(o, "allocated", alloc);
		add_i64(o, "shared", v->shared);
		add_i64(o, "exclusive", alloc - v->shared);
		json_object_object_add(o, "origin", json_object_new_string(v->origin));
		json_object_object_add(o, "open", json_object_new_boolean(v->open));
		json_object_array_add(arr, o);
	}
	free(pi);
	(void)d;
	return 0;
}

static int volume_cmd(struct daemon *d, struct json_object *args, struct json_object *reply,
		      char *err, size_t errlen)
{
	const char *sub = arg_at(args, 0), *a1 = arg_at(args, 1), *a2 = arg_at(args, 2);

	if (sub && !strcmp(sub, "list")) {
		struct json_object *arr = json_object_new_array();
		int rc = 0;

		if (!arr)
			return -ENOMEM;
		json_object_object_add(reply, "volumes", arr);
		if (a1) {
			struct pool_ent *pe = daemon_pool_find(d, a1);

			if (!pe) {
				snprintf(err, errlen, "no pool named '%s'", a1);
				return -ENOENT;
			}
			rc = list_pool(d, pe, arr);
		} else {
			for (unsigned i = 0; i < d->n_pools && !rc; i++)
				rc = list_pool(d, d->pools[i], arr);
		}
		if (rc)
			snprintf(err, errlen, "volume list: %s", strerror(-rc));
		return rc;
	}
	if (sub && !strcmp(sub, "delete") && a1 && a2) {
		struct raid_pool *p = pool_named(d, a1, err, errlen);
		char why[256] = "";
		int rc;

		if (!p)
			return -ENOENT;
		if (strchr(a2, '@')) {
			snprintf(err, errlen, "volume delete: %s is a snapshot: use snapshot delete %s %s",
				 a2, a1, a2);
			return -EINVAL;
		}
		LOG_INFO(MOD, "ctl: deleting volume %s of pool %s", a2, a1);
		rc = raid_pool_vol_delete(p, a2, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "volume delete: %s", why[0] ? why : strerror(-rc));
		else
			json_object_object_add(reply, "deleted", json_object_new_string(a2));
		return rc;
	}
	if (sub && !strcmp(sub, "create") && a1 && a2 && arg_at(args, 3)) {
		struct raid_pool *p = pool_named(d, a1, err, errlen);
		const char *sz = arg_at(args, 3), *fl = arg_at(args, 4);
		bool thin = fl && !strcmp(fl, "--thin");
		struct conf_size size;
		char why[256] = "";
		int rc;

		if (!p)
			return -ENOENT;
		if (fl && !thin) {
			snprintf(err, errlen, "usage: volume create POOL NAME SIZE [--thin]");
			return -EINVAL;
		}
		if (conf_parse_size(sz, true, &size) || size.bytes % 4096) {
			snprintf(err, errlen, "volume create: '%s' is not a size (bytes, a multiple of 4K, with K, M, G or T; or N%% of the pool)",
				 sz);
			return -EINVAL;
		}
		LOG_INFO(MOD, "ctl: creating %s volume %s of %s in pool %s", thin ? "thin" : "thick",
			 a2, sz, a1);
		rc = raid_pool_vol_create(p, a2, &size, thin, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "volume create: %s", why[0] ? why : strerror(-rc));
		else
			json_object_object_add(reply, "created", json_object_new_string(a2));
		return rc;
	}
	if (sub && !strcmp(sub, "inflate") && a1 && a2) {
		struct raid_pool *p = pool_named(d, a1, err, errlen);
		char why[256] = "";
		int rc;

		if (!p)
			return -ENOENT;
		LOG_INFO(MOD, "ctl: inflating volume %s of pool %s", a2, a1);
		rc = raid_pool_vol_inflate(p, a2, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "volume inflate: %s", why[0] ? why : strerror(-rc));
		else
			json_object_object_add(reply, "inflated", json_object_new_string(a2));
		return rc;
	}
	snprintf(err, errlen, "usage: volume list [POOL] | volume create POOL NAME SIZE [--thin] | volume delete POOL NAME | volume inflate POOL NAME");
	return -EINVAL;
}

static int clone_cmd(struct daemon *d, struct json_object *args, struct json_object *reply,
		     char *err, size_t errlen)
{
	const char *a0 = arg_at(args, 0), *a1 = arg_at(args, 1), *a2 = arg_at(args, 2);
	struct raid_pool *p;
	char why[256] = "";
	int rc;

	if (!a0 || !a1 || !a2) {
		snprintf(err, errlen, "usage: clone POOL VOLUME@SNAP NEW");
		return -EINVAL;
	}
	p = pool_named(d, a0, err, errlen);
	if (!p)
		return -ENOENT;
	LOG_INFO(MOD, "ctl: clone of %s as %s in pool %s", a1, a2, a0);
	rc = raid_pool_clone(p, a1, a2, why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "clone: %s", why[0] ? why : strerror(-rc));
	else
		json_object_object_add(reply, "clone", json_object_new_string(a2));
	return rc;
}

static int rollback_cmd(struct daemon *d, struct json_object *args, struct json_object *reply,
			char *err, size_t errlen)
{
	const char *a0 = arg_at(args, 0), *a1 = arg_at(args, 1), *a2 = arg_at(args, 2);
	bool force = a2 && !strcmp(a2, "--force");
	struct raid_pool *p;
	struct lu_ent *e = NULL;
	char why[256] = "", vol[64];
	const char *at;
	int rc;

	if (!a0 || !a1 || (a2 && !force)) {
		snprintf(err, errlen, "usage: rollback POOL VOLUME@SNAP [--force]");
		return -EINVAL;
	}
	p = pool_named(d, a0, err, errlen);
	if (!p)
		return -ENOENT;
	at = strchr(a1, '@');
	if (!at || at == a1 || (size_t)(at - a1) >= sizeof(vol)) {
		snprintf(err, errlen, "rollback: '%s' is not a snapshot (VOLUME@SNAP)", a1);
		return -EINVAL;
	}
	snprintf(vol, sizeof(vol), "%.*s", (int)(at - a1), a1);
	e = daemon_lu_find(d, a0, vol);
	LOG_INFO(MOD, "ctl: rollback of %s/%s to %s%s", a0, vol, a1, force ? " (forced)" : "");
	rc = raid_pool_rollback(p, a1, force, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "rollback: %s", why[0] ? why : strerror(-rc));
		return rc;
	}
	if (e && e->lu) {
		/* what the initiators cached is gone: as a LUN reset */
		scsi_lu_reset(e->lu);
		json_object_object_add(reply, "reset", json_object_new_boolean(true));
	}
	json_object_object_add(reply, "rolled_back", json_object_new_string(vol));
	json_object_object_add(reply, "to", json_object_new_string(a1));
	return 0;
}

static int snapshot_cmd(struct daemon *d, struct json_object *args, struct json_object *reply,
			char *err, size_t errlen)
{
	const char *a0 = arg_at(args, 0), *a1 = arg_at(args, 1), *a2 = arg_at(args, 2);
	struct raid_pool *p;
	char why[256] = "";
	int rc;

	if (a0 && !strcmp(a0, "delete")) {
		if (!a1 || !a2) {
			snprintf(err, errlen, "usage: snapshot delete POOL VOLUME@NAME");
			return -EINVAL;
		}
		p = pool_named(d, a1, err, errlen);
		if (!p)
			return -ENOENT;
		if (!strchr(a2, '@')) {
			snprintf(err, errlen, "snapshot delete: '%s' is not a snapshot (VOLUME@NAME)", a2);
			return -EINVAL;
		}
		LOG_INFO(MOD, "ctl: deleting snapshot %s of pool %s", a2, a1);
		rc = raid_pool_vol_delete(p, a2, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "snapshot delete: %s", why[0] ? why : strerror(-rc));
		else
			json_object_object_add(reply, "deleted", json_object_new_string(a2));
		return rc;
	}
	if (!a0 || !a1 || !a2) {
		snprintf(err, errlen, "usage: snapshot POOL VOLUME NAME | snapshot delete POOL VOLUME@NAME");
		return -EINVAL;
	}
	p = pool_named(d, a0, err, errlen);
	if (!p)
		return -ENOENT;
	LOG_INFO(MOD, "ctl: snapshot %s@%s of pool %s", a1, a2, a0);
	rc = raid_pool_snapshot(p, a1, a2, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "snapshot: %s", why[0] ? why : strerror(-rc));
		return rc;
	}
	{
		char name[80];

		snprintf(name, sizeof(name), "%s@%s", a1, a2);
		json_object_object_add(reply, "snapshot", json_object_new_string(name));
	}
	return 0;
}

static int check_cmd(struct daemon *d, struct json_object *args, struct json_object *reply,
		     char *err, size_t errlen)
{
	const char *a0 = arg_at(args, 0);
	struct raid_maps_check *c;
	struct json_object *probs;
	struct raid_pool *p;
	char why[256] = "";
	int rc;

	if (!a0) {
		snprintf(err, errlen, "usage: check POOL");
		return -EINVAL;
	}
	p = pool_named(d, a0, err, errlen);
	if (!p)
		return -ENOENT;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	rc = raid_pool_check_maps(p, c, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "check: %s", why[0] ? why : strerror(-rc));
		free(c);
		return rc;
	}
	LOG_INFO(MOD, "ctl: check of pool %s: %u maps, %u problems", a0, c->maps, c->n_problems);
	json_object_object_add(reply, "pool", json_object_new_string(a0));
	json_object_object_add(reply, "maps", json_object_new_int((int)c->maps));
	add_i64(reply, "extents_used", c->extents_used);
	add_i64(reply, "extents_shared", c->extents_shared);
	json_object_object_add(reply, "n_problems", json_object_new_int((int)c->n_problems));
	probs = json_object_new_array();
	for (unsigned i = 0; probs && i < c->n_problems && i < 8; i++)
		json_object_array_add(probs, json_object_new_string(c->problems[i]));
	json_object_object_add(reply, "problems", probs);
	free(c);
	return 0;
}

int daemon_vol_cmd(struct daemon *d, const char *cmd, struct json_object *args,
		   struct json_object *reply, char *err, size_t errlen)
{
	if (!strcmp(cmd, "check"))
		return check_cmd(d, args, reply, err, errlen);
	if (!strcmp(cmd, "volume"))
		return volume_cmd(d, args, reply, err, errlen);
	if (!strcmp(cmd, "clone"))
		return clone_cmd(d, args, reply, err, errlen);
	if (!strcmp(cmd, "rollback"))
		return rollback_cmd(d, args, reply, err, errlen);
	return snapshot_cmd(d, args, reply, err, errlen);
}
