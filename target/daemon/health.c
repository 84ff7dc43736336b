/*
 * target/daemon/health.c - SMART health through smartctl, and the slow
 * member check (see health.h).
 *
 * The health thread, per member of the list (block devices only):
 *
 *   IDLE     -- the interval passed, or a new member list -------> CHECKING
 *   CHECKING -- smartctl spawned ("smartctl --json=c -n standby -H -A
 *               -i DEV", stdout to a pipe read up to HEALTH_OUT_MAX,
 *               stderr to /dev/null, killed after HEALTH_TIMEOUT_MS
 *               or when the daemon stops), reaped, its output parsed;
 *               the result stored under mu ----------------------> IDLE
 *
 * A state change to WARNING or FAILING (and back to PASSED) is an event
 * "member_health"; a change to FAILING also calls the failing callback
 * (health_fail = "spare": the daemon replaces the member). UNAVAILABLE and
 * STANDBY changes are logged once at INFO, not events: a loop device or a
 * sleeping disk is not news.
 *
 * Verdict from smartctl's JSON, first match wins:
 *   output unusable / no "smartctl" object          -> -EINVAL (caller: UNAVAILABLE)
 *   message "STANDBY" (exit bit 1 with -n standby)  -> STANDBY
 *   no smart_status and no attribute / health log    -> UNAVAILABLE (reason:
 *                                                      smartctl's first error message)
 *   smart_status.passed false, exit bit 3           -> FAILING
 *   exit bit 4 (pre-fail attribute <= threshold)    -> FAILING
 *   NVMe critical_warning != 0                      -> FAILING
 *   ATA 5/197/198, SCSI grown defects, NVMe media
 *   errors > 0                                      -> WARNING
 *   otherwise                                       -> PASSED
 *
 * Layer: health (target/daemon/README.md "Layers"). May call: events.c,
 * worker.c (its thread's start and stop), conf/, libc. Calls nothing above
 * it (entries.c hands it the member list).
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "target/daemon/worker.h"

#define MOD "health"

extern char **environ;

const char *health_state_name(enum health_state s)
{
	switch (s) {
	case HEALTH_UNKNOWN: return "unknown";
	case HEALTH_PASSED: return "passed";
	case HEALTH_WARNING: return "warning";
	case HEALTH_FAILING: return "failing";
	case HEALTH_UNAVAILABLE: return "unavailable";
	case HEALTH_STANDBY: return "standby";
	}
	return "unknown";
}

/* ---- parsing ---- */

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static int64_t jint(struct json_object *o, const char *k, int64_t dflt)
{
	struct json_object *v = jget(o, k);

	return v && (json_object_is_type(v, json_type_int) ||
		     json_object_is_type(v, json_type_double)) ? json_object_get_int64(v) : dflt;
}

/* ATA attribute @id's raw value, -1 when absent. */
static int64_t ata_raw(struct json_object *table, int id)
{
	for (size_t i = 0; table && i < json_object_array_length(table); i++) {
		struct json_object *a = json_object_array_get_idx(table, i);

		if (jint(a, "id", -1) == id)
			return jint(jget(a, "raw"), "value", -1);
	}
	return -1;
}

int health_parse(const char *json, size_t len, int exit_status, struct health_info *out)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root, *sc, *msgs, *status, *attrs, *table, *nvme, *temp, *v;
	const char *first_err = NULL;
	bool standby = false;
	int64_t crit = 0;

	memset(out, 0, sizeof(*out));
	out->reallocated = out->pending = out->uncorrectable = -1;
	out->media_errors = out->percentage_used = out->temperature_c = -1;
	out->exit_status = exit_status;
	if (!tok)
		return -ENOMEM;
	root = len ? json_tokener_parse_ex(tok, json, (int)len) : NULL;
	json_tokener_free(tok);
	sc = jget(root, "smartctl");
	if (!root || !json_object_is_type(root, json_type_object) || !sc) {
		json_object_put(root);
		return -EINVAL;
	}
	out->exit_status = (int)jint(sc, "exit_status", exit_status);
	msgs = jget(sc, "messages");
	for (size_t i = 0; msgs && i < json_object_array_length(msgs); i++) {
		struct json_object *m = json_object_array_get_idx(msgs, i);
		const char *s = json_object_get_string(jget(m, "string"));
		const char *sev = json_object_get_string(jget(m, "severity"));

		if (!s)
			continue;
		if (strstr(s, "STANDBY"))
			standby = true;
		if (!first_err && sev && !strcmp(sev, "error"))
			first_err = s;
	}
	if ((v = jget(jget(root, "device"), "protocol")))
		snprintf(out->protocol, sizeof(out->protocol), "%s", json_object_get_string(v));
	if ((v = jget(root, "model_name")))
		snprintf(out->model, sizeof(out->model), "%s", json_object_get_string(v));
	status = jget(root, "smart_status");
	attrs = jget(root, "ata_smart_attributes");
	table = jget(attrs, "table");
	nvme = jget(root, "nvme_smart_health_information_log");
	if (table) {
		out->reallocated = ata_raw(table, 5);
		out->pending = ata_raw(table, 197);
		out->uncorrectable = ata_raw(table, 198);
		/* 194's raw value packs min/max in its upper bytes */
		if (ata_raw(table, 194) >= 0)
			out->temperature_c = ata_raw(table, 194) & 0xff;
	}
	if (jget(root, "scsi_grown_defect_list"))
		out->reallocated = jint(root, "scsi_grown_defect_list", -1);
	if (nvme) {
		crit = jint(nvme, "critical_warning", 0);
		out->media_errors = jint(nvme, "media_errors", -1);
		out->percentage_used = jint(nvme, "percentage_used", -1);
		if (jint(nvme, "temperature", -1) >= 0)
			out->temperature_c = jint(nvme, "temperature", -1);
	}
	temp = jget(root, "temperature");
	if (jint(temp, "current", -1) >= 0)
		out->temperature_c = jint(temp, "current", -1);

	if (standby) {
		out->state = HEALTH_STANDBY;
		snprintf(out->reason, sizeof(out->reason), "in standby: not woken up to check");
	} else if (!status && !table && !nvme) {
		out->state = HEALTH_UNAVAILABLE;
		snprintf(out->reason, sizeof(out->reason), "%s",
			 first_err ? first_err : "the device reports no SMART data");
	} else if ((status && jget(status, "passed") &&
		    !json_object_get_boolean(jget(status, "passed"))) || (out->exit_status & 8)) {
		out->state = HEALTH_FAILING;
		snprintf(out->reason, sizeof(out->reason), "SMART overall-health self-assessment: FAILED");
	} else if (out->exit_status & 16) {
		out->state = HEALTH_FAILING;
		snprintf(out->reason, sizeof(out->reason),
			 "a pre-failure attribute is at or below its threshold");
	} else if (crit) {
		out->state = HEALTH_FAILING;
		snprintf(out->reason, sizeof(out->reason), "NVMe critical warning 0x%02llx",
			 (unsigned long long)crit);
	} else if (out->reallocated > 0 || out->pending > 0 || out->uncorrectable > 0 ||
		   out->media_errors > 0) {
		out->state = HEALTH_WARNING;
		if (out->media_errors > 0)
			snprintf(out->reason, sizeof(out->reason), "%lld media errors",
				 (long long)out->media_errors);
		else
			snprintf(out->reason, sizeof(out->reason),
				 "%lld reallocated, %lld pending, %lld uncorrectable sectors",
				 (long long)(out->reallocated > 0 ? out->reallocated : 0),
				 (long long)(out->pending > 0 ? out->pending : 0),
				 (long long)(out->uncorrectable > 0 ? out->uncorrectable : 0));
	} else {
		out->state = HEALTH_PASSED;
	}
	json_object_put(root);
	return 0;
}

/* Runs smartctl; *@stop (may be NULL) is polled to give up early. */
static int query(const char *smartctl, const char *dev, unsigned timeout_ms,
		 const volatile bool *stop, pthread_mutex_t *mu, struct health_info *out)
{
	char *argv[] = { (char *)smartctl, "--json=c", "-n", "standby", "-H", "-A", "-i",
			 (char *)dev, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dflt;
	uint64_t deadline = conf_mono_ms() + timeout_ms;
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	int pfd[2], rc, status = 0;
	bool killed = false, eof = false;
	pid_t pid;

	if (!buf)
		return -ENOMEM;
	if (pipe2(pfd, O_CLOEXEC)) {
		free(buf);
		return -errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(&pid, smartctl, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		free(buf);
		memset(out, 0, sizeof(*out));
		out->state = HEALTH_UNAVAILABLE;
		snprintf(out->reason, sizeof(out->reason), "cannot run %s: %s", smartctl,
			 strerror(rc));
		return 0;
	}
	while (!eof) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		uint64_t now = conf_mono_ms();
		bool s = false;
		ssize_t n;

		if (stop) {
			pthread_mutex_lock(mu);
			s = *stop;
			pthread_mutex_unlock(mu);
		}
		if (s || now >= deadline) {
			killed = true;
			break;
		}
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if (len == cap) {
			if (cap >= HEALTH_OUT_MAX) {
				killed = true;   /* far beyond any smartctl report */
				break;
			}
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				killed = true;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(pfd[0], buf + len, cap - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || errno != EINTR)
			eof = true;
	}
	close(pfd[0]);
	if (killed) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	/* stdout closed: smartctl is done or about to be; a child that closed
	 * stdout and hangs on is killed at the deadline */
	for (;;) {
		pid_t r = waitpid(pid, &status, killed ? 0 : WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			break;
		if (r == 0 && conf_mono_ms() >= deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = true;
			continue;
		}
		if (r == 0)
			usleep(10000);
	}
	if (killed) {
		free(buf);
		memset(out, 0, sizeof(*out));
		out->state = HEALTH_UNKNOWN;
		snprintf(out->reason, sizeof(out->reason), "smartctl did not finish within %u ms",
			 timeout_ms);
		return -ETIMEDOUT;
	}
	rc = health_parse(buf, len, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
	free(buf);
	if (rc == -EINVAL) {
		out->state = HEALTH_UNAVAILABLE;
		snprintf(out->reason, sizeof(out->reason), "%s gave no JSON (exit status %d)",
			 smartctl, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 0;
	}
	return rc;
}

int health_query(const char *smartctl, const char *dev, unsigned timeout_ms,
		 struct health_info *out)
{
	return query(smartctl, dev, timeout_ms, NULL, NULL, out);
}

/* ---- the thread ---- */

struct hentry {
	struct health_member m;
	struct health_info info;
	bool checked;        /* info holds a result */
	bool block;          /* a block device at the last look */
};

struct health {
	struct worker w;     /* the health thread; w.mu guards the rest */
	bool kick;           /* new members: check now */
	char *smartctl;
	unsigned interval_s;
	struct events *ev;
	health_failing_fn failing;
	void *arg;
	struct hentry *e;    /* owned */
	unsigned n;
};

static bool is_block(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISBLK(st.st_mode);
}

static void report(struct health *h, const struct health_member *m, const struct health_info *old,
		   const struct health_info *nw)
{
	struct json_object *f;

	if (old->state == nw->state)
		return;
	if (nw->state == HEALTH_UNAVAILABLE || nw->state == HEALTH_STANDBY ||
	    nw->state == HEALTH_UNKNOWN || (nw->state == HEALTH_PASSED &&
					    (old->state == HEALTH_UNKNOWN ||
					     old->state == HEALTH_UNAVAILABLE ||
					     old->state == HEALTH_STANDBY))) {
		LOG_INFO(MOD, "pool %s: member %s: health %s%s%s", m->pool, m->path,
			 health_state_name(nw->state), nw->reason[0] ? ": " : "", nw->reason);
		return;
	}
	if (!h->ev)
		return;
	f = json_object_new_object();
	if (!f)
		return;
	json_object_object_add(f, "pool", json_object_new_string(m->pool));
	json_object_object_add(f, "member", json_object_new_string(m->path));
	json_object_object_add(f, "health", json_object_new_string(health_state_name(nw->state)));
	json_object_object_add(f, "was", json_object_new_string(health_state_name(old->state)));
	json_object_object_add(f, "reason", json_object_new_string(nw->reason));
	if (nw->reallocated >= 0)
		json_object_object_add(f, "reallocated_sectors", json_object_new_int64(nw->reallocated));
	if (nw->pending >= 0)
		json_object_object_add(f, "pending_sectors", json_object_new_int64(nw->pending));
	if (nw->temperature_c >= 0)
		json_object_object_add(f, "temperature_c", json_object_new_int64(nw->temperature_c));
	events_post(h->ev, "member_health",
		    nw->state == HEALTH_FAILING ? "error" :
		    nw->state == HEALTH_WARNING ? "warning" : "info", f,
		    "pool %s: member %s health %s%s%s", m->pool, m->path,
		    health_state_name(nw->state), nw->reason[0] ? ": " : "", nw->reason);
}

static void *health_main(void *arg)
{
	struct health *h = arg;
	uint64_t next = 0;   /* at once */

	pthread_mutex_lock(&h->w.mu);
	while (!h->w.stop) {
		uint64_t now = conf_mono_ms();

		if (!h->kick && now < next) {
			struct timespec ts;
			uint64_t wait = next - now > 1000 ? 1000 : next - now;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(wait / 1000);
			ts.tv_nsec += (long)(wait % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&h->w.cv, &h->w.mu, &ts);
			continue;
		}
		bool all = !h->kick || now >= next;

		h->kick = false;
		for (unsigned i = 0; i < h->n && !h->w.stop; i++) {
			struct health_member m = h->e[i].m;
			struct health_info old = h->e[i].info, nw;
			char *smartctl;
			bool block;
			int rc;

			if (!all && h->e[i].checked)
				continue;   /* a new list: only the new members now */
			smartctl = strdup(h->smartctl);
			if (!smartctl)
				continue;
			pthread_mutex_unlock(&h->w.mu);
			block = is_block(m.path);
			rc = block ? query(smartctl, m.path, HEALTH_TIMEOUT_MS, &h->w.stop, &h->w.mu, &nw) : 0;
			free(smartctl);
			pthread_mutex_lock(&h->w.mu);
			/* the list may have changed meanwhile: find the member again */
			for (unsigned k = 0; k < h->n; k++) {
				struct hentry *e = &h->e[k];

				if (strcmp(e->m.path, m.path) || strcmp(e->m.pool, m.pool))
					continue;
				e->block = block;
				if (!block || rc == -ECANCELED)
					break;
				if (rc && rc != -ETIMEDOUT)
					break;
				e->info = nw;
				e->checked = true;
				pthread_mutex_unlock(&h->w.mu);
				report(h, &m, &old, &nw);
				if (nw.state == HEALTH_FAILING && old.state != HEALTH_FAILING && h->failing)
					h->failing(h->arg, m.pool, m.path);
				pthread_mutex_lock(&h->w.mu);
				break;
			}
		}
		if (all)
			next = conf_mono_ms() + (uint64_t)h->interval_s * 1000u;
	}
	pthread_mutex_unlock(&h->w.mu);
	return NULL;
}

int health_create(const char *smartctl, unsigned interval_s, struct events *ev,
		  health_failing_fn failing, void *arg, struct health **out)
{
	struct health *h = calloc(1, sizeof(*h));
	int rc;

	if (!h || !(h->smartctl = strdup(smartctl))) {
		free(h);
		return -ENOMEM;
	}
	worker_init(&h->w);
	h->interval_s = interval_s;
	h->ev = ev;
	h->failing = failing;
	h->arg = arg;
	if (interval_s) {
		rc = worker_start(&h->w, health_main, h);
		if (rc) {
			health_destroy(h);
			return rc;
		}
	}
	*out = h;
	return 0;
}

void health_destroy(struct health *h)
{
	if (!h)
		return;
	worker_stop(&h->w);
	free(h->e);
	free(h->smartctl);
	worker_fini(&h->w);
	free(h);
}

int health_set_members(struct health *h, const struct health_member *m, unsigned n)
{
	struct hentry *ne = calloc(n ? n : 1, sizeof(*ne));
	bool fresh = false;

	if (!ne)
		return -ENOMEM;
	pthread_mutex_lock(&h->w.mu);
	for (unsigned i = 0; i < n; i++) {
		ne[i].m = m[i];
		ne[i].info.state = HEALTH_UNKNOWN;
		for (unsigned k = 0; k < h->n; k++)
			if (!strcmp(h->e[k].m.path, m[i].path) && !strcmp(h->e[k].m.pool, m[i].pool)) {
				ne[i] = h->e[k];
				break;
			}
		fresh |= !ne[i].checked;
	}
	free(h->e);
	h->e = ne;
	h->n = n;
	if (fresh) {
		h->kick = true;
		pthread_cond_signal(&h->w.cv);
	}
	pthread_mutex_unlock(&h->w.mu);
	return 0;
}

bool health_member_get(struct health *h, const char *path, struct health_info *out)
{
	bool found = false;

	pthread_mutex_lock(&h->w.mu);
	for (unsigned k = 0; k < h->n && !found; k++)
		if (!strcmp(h->e[k].m.path, path) && h->e[k].block && h->e[k].checked) {
			*out = h->e[k].info;
			found = true;
		}
	pthread_mutex_unlock(&h->w.mu);
	return found;
}

void health_member_json(struct health *h, const char *path, struct json_object *mo)
{
	struct health_info hi;
	struct json_object *o;

	if (!h || !health_member_get(h, path, &hi) || !(o = json_object_new_object()))
		return;
	json_object_object_add(o, "state", json_object_new_string(health_state_name(hi.state)));
	if (hi.reason[0])
		json_object_object_add(o, "reason", json_object_new_string(hi.reason));
	if (hi.protocol[0])
		json_object_object_add(o, "protocol", json_object_new_string(hi.protocol));
	if (hi.model[0])
		json_object_object_add(o, "model", json_object_new_string(hi.model));
	if (hi.reallocated >= 0)
		json_object_object_add(o, "reallocated_sectors", json_object_new_int64(hi.reallocated));
	if (hi.pending >= 0)
		json_object_object_add(o, "pending_sectors", json_object_new_int64(hi.pending));
	if (hi.uncorrectable >= 0)
		json_object_object_add(o, "uncorrectable_sectors",
				       json_object_new_int64(hi.uncorrectable));
	if (hi.media_errors >= 0)
		json_object_object_add(o, "media_errors", json_object_new_int64(hi.media_errors));
	if (hi.percentage_used >= 0)
		json_object_object_add(o, "percentage_used", json_object_new_int64(hi.percentage_used));
	if (hi.temperature_c >= 0)
		json_object_object_add(o, "temperature_c", json_object_new_int64(hi.temperature_c));
	json_object_object_add(mo, "health", o);
}

/* ---- slow members ---- */

uint64_t slow_hist_p99(const uint64_t *h, uint64_t *count)
{
	uint64_t n = 0, acc = 0, want;

	for (unsigned b = 0; b < RAID_MEMBER_LAT_BUCKETS; b++)
		n += h[b];
	*count = n;
	if (!n)
		return 0;
	want = (n * 99 + 99) / 100;   /* ceil(0.99 n) */
	for (unsigned b = 0; b < RAID_MEMBER_LAT_BUCKETS; b++) {
		acc += h[b];
		if (acc >= want)
			return 1ull << b;
	}
	return 1ull << (RAID_MEMBER_LAT_BUCKETS - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void slow_update(struct slow_pool *sp, const struct raid_pool_info *pi, struct events *ev)
{
	struct slow_member *cur[64] = { NULL };
	uint64_t p99[64], sorted[64];
	unsigned n = pi->n_members < 64 ? pi->n_members : 64;

	snprintf(sp->name, sizeof(sp->name), "%s", pi->name);
	for (unsigned k = 0; k < sp->n; k++)
		sp->m[k].seen = false;
	for (unsigned i = 0; i < n; i++) {
		const struct raid_member_info *mi = &pi->members[i];
		struct slow_member *s = NULL;
		uint64_t d[RAID_MEMBER_LAT_BUCKETS], cnt;

		for (unsigned k = 0; k < sp->n && !s; k++)
			if (!strcmp(sp->m[k].path, mi->path) && !sp->m[k].seen)
				s = &sp->m[k];
		if (!s && sp->n < 64) {
			s = &sp->m[sp->n++];
			memset(s, 0, sizeof(*s));
			snprintf(s->path, sizeof(s->path), "%s", mi->path);
			for (unsigned b = 0; b < RAID_MEMBER_LAT_BUCKETS; b++)
				s->prev[b] = mi->lat_hist[0][b] + mi->lat_hist[1][b];
			s->seen = true;
			p99[i] = 0;
			continue;   /* the first window starts now */
		}
		if (!s)
			continue;
		s->seen = true;
		for (unsigned b = 0; b < RAID_MEMBER_LAT_BUCKETS; b++) {
			uint64_t now = mi->lat_hist[0][b] + mi->lat_hist[1][b];

			d[b] = now >= s->prev[b] ? now - s->prev[b] : 0;
			s->prev[b] = now;
		}
		s->p99_us = slow_hist_p99(d, &cnt);
		if (cnt < SLOW_MIN_IOS || strcmp(mi->state, "active"))
			s->p99_us = 0;
		p99[i] = s->p99_us;
		cur[i] = s;
	}
	/* drop members no longer in the pool */
	for (unsigned k = 0; k < sp->n;) {
		if (sp->m[k].seen) {
			k++;
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			if (cur[i] == &sp->m[sp->n - 1])
				cur[i] = &sp->m[k];
		sp->m[k] = sp->m[--sp->n];
	}
	for (unsigned i = 0; i < n; i++) {
		struct slow_member *s = cur[i];
		unsigned ns = 0;
		uint64_t median;
		bool over;

		if (!s)
			continue;
		for (unsigned j = 0; j < n; j++)
			if (j != i && cur[j] && p99[j])
				sorted[ns++] = p99[j];
		if (!ns || !p99[i]) {
			over = false;
		} else {
			qsort(sorted, ns, sizeof(sorted[0]), cmp_u64);
			median = sorted[ns / 2];
			over = p99[i] > (uint64_t)SLOW_FACTOR * median && p99[i] > SLOW_FLOOR_US;
		}
		s->over = over ? s->over + 1 : 0;
		if (!s->slow && s->over >= SLOW_WINDOWS) {
			s->slow = true;
			if (ev) {
				struct json_object *f = json_object_new_object();

				json_object_object_add(f, "pool", json_object_new_string(pi->name));
				json_object_object_add(f, "member", json_object_new_string(s->path));
				json_object_object_add(f, "p99_us", json_object_new_int64((int64_t)p99[i]));
				json_object_object_add(f, "siblings_p99_us",
						       json_object_new_int64((int64_t)sorted[ns / 2]));
				events_post(ev, "member_slow", "warning", f,
					    "pool %s: member %s slow: p99 %llu us, its siblings' %llu us",
					    pi->name, s->path, (unsigned long long)p99[i],
					    (unsigned long long)sorted[ns / 2]);
			}
		} else if (s->slow && !over && p99[i]) {
			s->slow = false;
			if (ev) {
				struct json_object *f = json_object_new_object();

				json_object_object_add(f, "pool", json_object_new_string(pi->name));
				json_object_object_add(f, "member", json_object_new_string(s->path));
				events_post(ev, "member_not_slow", "info", f,
					    "pool %s: member %s no longer slow", pi->name, s->path);
			}
		}
	}
}
