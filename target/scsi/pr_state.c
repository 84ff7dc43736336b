/*
 * target/scsi/pr_state.c - where the persistent-reservation state lives:
 * the APTPL file of a local LU (lu->pr_path) and, on a shared LU, the
 * volume's cluster blob; and when a PERSISTENT RESERVE OUT's change becomes
 * the LU's. The service actions themselves are pr.c's (pr_dispatch(),
 * pr_int.h), run here on scratch copies of the state.
 *
 * Shared LUs (lu->pr_shared: the volume is an RBD image that other rtgt
 * nodes serve too, raid_vol_shared()). The authoritative state is the
 * volume's "pr" blob (raid.h, shared state; the RADOS object
 * rtgt_pr.<image id>), a strictly parsed, checksummed text (st_format /
 * st_parse): magic "rtgt-pr 2", seq (version, +1 per change), gen, aptpl,
 * type and holder index, one "reg" line per registration (key, relative
 * port, all_tg_pt, initiator port), one "ev" line per event of the last
 * 16 changes (the seq that made it, UA code or 0 for "abort their
 * commands", the registration it applies to, the sending nexus that gets
 * no UA), and an FNV-1a sum.
 * lu->regs/pr_type/pr_holder/pr_gen/pr_aptpl are this node's copy, at
 * version lu->pr_seq. Per shared LU, the copy moves:
 *
 *   EMPTY --pr_load (shared_load: watch, then read the blob)--> CURRENT
 *   CURRENT --PROUT here (pr_out -> pr_shared_out)--> UPDATING
 *   UPDATING --raid helper thread: read blob, shared_apply() runs the same
 *              prout_* handlers on a scratch LU whose ua_reg/abort_reg record
 *              events instead of raising them, write blob seq+1 atomically
 *              (retried if another node wrote in between), notify every
 *              node and wait for their acks--> CURRENT (shared_done, on the
 *              submitting thread: installs the blob if the watch did not
 *              yet, then completes the command)
 *   CURRENT --any node's change (watch_cb -> st_take -> st_install)--> CURRENT
 *              (newer seq only; the events newer than the copy it replaces
 *              done to this node's nexuses: UA for each matching nexus but
 *              the sender, abort for code 0; so a node that sees version
 *              N+1 before N, or re-reads after a broken watch, misses no
 *              event of the last 16 changes)
 *   CURRENT --pr_free (LU destroyed): unwatch--> EMPTY
 *
 * Because every node installs the blob (under lu->lock) before it
 * acknowledges the notify, and the PROUT completes only after the notify
 * returned, a command through any node after GOOD sees the new state. A
 * node that does not acknowledge within 5 s (dead, or cut off from the
 * cluster) does not hold the PROUT longer: it completes GOOD (the state is
 * written) with a warning logged; that node catches up from the object when
 * its watch is re-established (raid re-reads the blob then), and until then
 * enforces its old copy: in a network partition the cut-off node is stale
 * for at most the OSD's watch timeout, after which its watch errors out.
 * PR IN, pr_conflict() and the UA queues stay local. APTPL on a shared LU:
 * the state is always kept (the object outlives every node; a node restart
 * is not a power loss of the LU, which other nodes keep serving), the APTPL
 * bit is stored and reported, lu->pr_path is not used. SPC-2 RESERVE /
 * RELEASE on a shared LU: refused with ILLEGAL REQUEST, INVALID COMMAND
 * OPERATION CODE (a nexus-bound reservation that dies with its session
 * cannot be kept consistently by a node that never sees that session).
 * A LOGICAL UNIT / target reset through one node (lu.c lu_reset ->
 * pr_lu_reset) is a notify "rtgt-pr-reset <code>" with no state change:
 * the others abort the LU's commands and raise the reset UA for their
 * nexuses (reset_take); it is sent from a helper thread
 * (raid_vol_shared_notify_async), counted in lu->pr_resets_pending until
 * they answered or 3 s passed, and the TMF response waits for that
 * (scsi_resets_pending) while the reactor goes on serving.
 * A grow of the volume through one node (scsi_lu_grown_share, after
 * raid_vol_resize and scsi_lu_resized there) is a notify "rtgt-grow
 * <bytes>": every other node re-reads the volume's size (raid_vol_refresh,
 * retried for up to 5 s until it reaches <bytes>) on a thread of its own
 * (grow_main; the watch thread is not held while the store catches up),
 * counted in lu->pr_grows_pending until done, and raises CAPACITY DATA HAS
 * CHANGED for its nexuses (scsi_lu_resized).
 * Invariant: pr_check() holds on the installed copy as on a local LU, and
 * every installed blob passed st_parse() (which checks pr_check itself).
 *
 * Layer: reservations, above pr.c (target/scsi/README.md "Layers"). May
 * call: pr.c, sense.c, task.c, raid/raid.h, conf/. Called by pr_out.c
 * (pr_local_out, pr_shared_out) and lu.c (load, free, reset); it calls
 * neither.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "target/scsi/pr_int.h"
#include "target/scsi/scsi_int.h"

/* how long a reset waits for the other nodes of a shared LU */
#define PR_RESET_NOTIFY_MS 3000u

/* ---- APTPL persistence ---- */

/*
 * lu->pr_path (POOL.VOLUME.pr in daemon.state_dir) holds one JSON object,
 * written by json-c, so that no byte of a name can end a field or start
 * another:
 *
 *   { "format": "rtgt-pr-aptpl", "version": 2, "generation": 7, "type": 3,
 *     "holder": 0,
 *     "registrations": [ { "key": "00000000000000aa", "rel_port": 1,
 *                          "all_tg_pt": false,
 *                          "initiator_port": "iqn.1994-05.com.a,i,0x400000000001" } ] }
 *
 * holder is the index of the holder in registrations, -1 for none (no
 * reservation, or an all-registrants type). Loading is strict: exactly
 * these keys with these types and ranges, every initiator port an iSCSI
 * name login accepts plus ",i,0x" and 12 hex digits, pr_check() on the
 * result. Version 1 (the line format "rtgt-pr 1" of earlier releases,
 * kept next to the control socket) is not migrated: a name could forge
 * its lines, so nothing in it can be trusted, and it is refused like a
 * damaged file. A file that cannot be loaded stops its LU alone
 * (lu->pr_bad, see scsi_int.h) with one log line; it is never written
 * over, so the operator finds it as it was.
 *
 * Written as: mkdir -p the directory (0700), a temp file in it created
 * with O_EXCL | O_NOFOLLOW (a symlink planted there is removed, never
 * followed), fsync, rename over the file, fsync of the directory. Read
 * with O_NOFOLLOW: a symlink in its place is refused.
 * A PERSISTENT RESERVE OUT on such an LU is all or nothing (pr_local_out):
 * the service action runs on a scratch copy, the file is written from it
 * when the old or the new state has APTPL set, and only then does the copy
 * become the state and are its UAs and aborts done; a file that cannot be
 * written leaves everything as it was and the command gets HARDWARE ERROR,
 * INTERNAL TARGET FAILURE (04/44/00).
 */
#define PR_FILE_FORMAT "rtgt-pr-aptpl"
#define PR_FILE_VERSION 2
#define PR_FILE_MAX (1u << 20)
#define PR_FILE_V1 "rtgt-pr 1\n"

static int jset(struct json_object *o, const char *k, struct json_object *v)
{
	if (!v || json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* The state of @lu as the file's text (malloc'd, ends in a newline). */
static int pr_json(const struct scsi_lu *lu, char **out, size_t *out_len)
{
	struct json_object *top = json_object_new_object(), *regs = json_object_new_array();
	const struct scsi_pr_reg *r;
	const char *s;
	int idx = -1, i = 0, rc = -ENOMEM;

	if (!top || !regs) {
		json_object_put(regs);
		goto put_top;
	}
	for (r = lu->regs; r; r = r->next, i++) {
		struct json_object *e = json_object_new_object();
		char key[17];

		if (r == lu->pr_holder)
			idx = i;
		snprintf(key, sizeof(key), "%016" PRIx64, r->key);
		if (!e || json_object_array_add(regs, e) < 0) {
			json_object_put(e);
			json_object_put(regs);
			goto put_top;
		}
		if (jset(e, "key", json_object_new_string(key)) ||
		    jset(e, "rel_port", json_object_new_int(r->rel_port)) ||
		    jset(e, "all_tg_pt", json_object_new_boolean(r->all_tg_pt)) ||
		    jset(e, "initiator_port", json_object_new_string(r->iport))) {
			json_object_put(regs);
			goto put_top;
		}
	}
	if (jset(top, "format", json_object_new_string(PR_FILE_FORMAT)) ||
	    jset(top, "version", json_object_new_int(PR_FILE_VERSION)) ||
	    jset(top, "generation", json_object_new_int64(lu->pr_gen)) ||
	    jset(top, "type", json_object_new_int(lu->pr_type)) ||
	    jset(top, "holder", json_object_new_int(idx)) || jset(top, "registrations", regs))
		goto put_top;
	s = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
						JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s || asprintf(out, "%s\n", s) < 0)
		goto put_top;
	*out_len = strlen(*out);
	rc = 0;
put_top:
	json_object_put(top);
	return rc;
}

static int fsync_dir_of(const char *path)
{
	char buf[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (!slash)
		snprintf(buf, sizeof(buf), ".");
	else if (snprintf(buf, sizeof(buf), "%.*s", (int)(slash - path) ?: 1, path) >=
		 (int)sizeof(buf))
		return -ENAMETOOLONG;
	fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes @lu's state to lu->pr_path (removes the file when APTPL is 0).
 * *@replaced: whether the file was replaced or removed, even when a later
 * step (the directory fsync) failed. 0 or -errno. */
static int pr_save(struct scsi_lu *lu, bool *replaced)
{
	char tmp[PATH_MAX], *text = NULL;
	size_t len = 0;
	int fd, rc;

	*replaced = false;
	if (!lu->pr_path)
		return 0;
	if (!lu->pr_aptpl) {
		/* ENOTDIR: a path component is no directory, so no file */
		if (unlink(lu->pr_path) < 0)
			return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		*replaced = true;
		return fsync_dir_of(lu->pr_path);
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", lu->pr_path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	rc = pr_json(lu, &text, &len);
	if (rc < 0)
		return rc;
	/* daemon.state_dir on the first save; new levels 0700 */
	rc = conf_mkdir_parents(lu->pr_path, 0700);
	if (rc < 0)
		goto free_text;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* left by a crash between create and rename (or planted):
		 * unlink removes a symlink itself, not what it points to */
		if (unlink(tmp) < 0 && errno != ENOENT) {
			rc = -errno;
			goto free_text;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		rc = -errno;
		goto free_text;
	}
	rc = write_all(fd, text, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		goto unlink_tmp;
	if (rename(tmp, lu->pr_path) < 0) {
		rc = -errno;
		goto unlink_tmp;
	}
	*replaced = true;
	free(text);
	return fsync_dir_of(lu->pr_path);

unlink_tmp:
	unlink(tmp);
free_text:
	free(text);
	return rc;
}

static bool j_get(struct json_object *o, const char *k, enum json_type t, struct json_object **v)
{
	return json_object_object_get_ex(o, k, v) && json_object_is_type(*v, t);
}

static bool j_int(struct json_object *o, const char *k, int64_t min, int64_t max, int64_t *out)
{
	struct json_object *v;

	if (!j_get(o, k, json_type_int, &v))
		return false;
	/* json-c saturates what does not fit int64 */
	*out = json_object_get_int64(v);
	return *out >= min && *out <= max;
}

/* Installs the parsed file into @lu; a message for the log in @why when
 * it is not a state this version wrote. */
static int json_take(struct scsi_lu *lu, struct json_object *top, const char **why)
{
	struct json_object *v, *regs;
	int64_t ver, gen, type, holder;
	size_t n, i;

	*why = "holds no reservation state of this format";
	if (!json_object_is_type(top, json_type_object) || json_object_object_length(top) != 6 ||
	    !j_get(top, "format", json_type_string, &v) ||
	    strcmp(json_object_get_string(v), PR_FILE_FORMAT) != 0)
		return -EBADMSG;
	if (!j_int(top, "version", 0, INT32_MAX, &ver) || ver != PR_FILE_VERSION) {
		*why = "has an unknown version";
		return -EBADMSG;
	}
	*why = "has a bad generation, type, holder or registrations list";
	if (!j_int(top, "generation", 0, UINT32_MAX, &gen) || !j_int(top, "type", 0, 15, &type) ||
	    (type && !pr_type_valid((uint8_t)type)) || !j_int(top, "holder", -1, INT32_MAX, &holder) ||
	    !j_get(top, "registrations", json_type_array, &regs))
		return -EBADMSG;
	n = json_object_array_length(regs);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(regs, i), *k, *atp, *ip;
		const char *ks;
		int64_t rel;
		char *end;
		uint64_t key;

		*why = "has a bad registration";
		if (!json_object_is_type(e, json_type_object) || json_object_object_length(e) != 4 ||
		    !j_get(e, "key", json_type_string, &k) ||
		    !j_int(e, "rel_port", 0, UINT16_MAX, &rel) ||
		    !j_get(e, "all_tg_pt", json_type_boolean, &atp) ||
		    !j_get(e, "initiator_port", json_type_string, &ip))
			return -EBADMSG;
		ks = json_object_get_string(k);
		if (json_object_get_string_len(k) != 16 || !isxdigit((unsigned char)ks[0]))
			return -EBADMSG;
		errno = 0;
		key = strtoull(ks, &end, 16);
		if (errno || *end)
			return -EBADMSG;
		if (!pr_iport_valid(json_object_get_string(ip),
				 (size_t)json_object_get_string_len(ip))) {
			*why = "has a registration whose initiator_port is not an iSCSI initiator port name";
			return -EBADMSG;
		}
		if (!pr_reg_add(lu, json_object_get_string(ip), (uint16_t)rel,
			     json_object_get_boolean(atp), key))
			return -ENOMEM;
	}
	*why = "has a type and holder that do not match its registrations";
	if (type && !n)
		return -EBADMSG;
	if (!type || pr_type_all_reg((uint8_t)type)) {
		if (holder != -1)
			return -EBADMSG;
	} else {
		struct scsi_pr_reg *r = lu->regs;

		for (int64_t j = 0; r && j < holder; j++)
			r = r->next;
		if (holder < 0 || !r)
			return -EBADMSG;
		lu->pr_holder = r;
	}
	lu->pr_type = (uint8_t)type;
	lu->pr_gen = (uint32_t)gen;
	lu->pr_aptpl = true;
	return pr_check(lu) ? 0 : -EBADMSG;
}

/* Reads the file into @buf (NUL-terminated); *why for the log. */
static int file_read(const char *path, char **buf, size_t *len, const char **why)
{
	struct stat st;
	size_t got = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		*why = rc == -ELOOP ? "is a symbolic link, which is not followed"
				    : "cannot be opened";
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		*why = "cannot be read";
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > PR_FILE_MAX) {
		*why = S_ISREG(st.st_mode) ? "is larger than 1 MiB" : "is not a regular file";
		rc = -EBADMSG;
		goto close_fd;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		rc = -ENOMEM;
		goto close_fd;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EBADMSG;
			*why = "cannot be read";
			free(*buf);
			*buf = NULL;
			goto close_fd;
		}
		got += (size_t)n;
	}
	(*buf)[got] = 0;
	*len = got;
close_fd:
	close(fd);
	return rc;
}

static unsigned line_of(const char *buf, size_t off)
{
	unsigned line = 1;

	for (size_t i = 0; i < off; i++)
		line += buf[i] == '\n';
	return line;
}

static int file_load(struct scsi_lu *lu)
{
	struct json_tokener *tok;
	struct json_object *top = NULL;
	const char *why = NULL;
	char *buf = NULL, jwhy[96];
	size_t len = 0, end;
	unsigned line = 0, n = 0;
	int rc;

	if (!lu->pr_path)
		return 0;
	rc = file_read(lu->pr_path, &buf, &len, &why);
	if (rc == -ENOENT)
		return 0;
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		goto bad;
	if (len >= strlen(PR_FILE_V1) && memcmp(buf, PR_FILE_V1, strlen(PR_FILE_V1)) == 0) {
		why = "is in the line format of earlier versions (\"rtgt-pr 1\"), which a crafted initiator name could forge, so it is not migrated: check it, then remove it and register again";
		line = 1;
		rc = -EBADMSG;
		goto bad;
	}
	tok = json_tokener_new();
	if (!tok) {
		rc = -ENOMEM;
		goto free_buf;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* with its NUL: a text that ends in a number or literal is complete */
	top = json_tokener_parse_ex(tok, buf, (int)len + 1);
	end = json_tokener_get_parse_end(tok);
	if (!top || json_tokener_get_error(tok) != json_tokener_success ||
	    (end <= len && strspn(buf + end, " \t\n") != len - end)) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		if (top)
			why = "has bytes after the JSON text";
		else if (jerr == json_tokener_continue)
			why = "ends in the middle of the JSON text";
		else if (jerr == json_tokener_success)
			why = "holds no JSON object";
		else
			why = (snprintf(jwhy, sizeof(jwhy), "is not valid JSON (%s)",
					json_tokener_error_desc(jerr)), jwhy);
		line = line_of(buf, end < len ? end : len);
		json_tokener_free(tok);
		rc = -EBADMSG;
		goto bad;
	}
	json_tokener_free(tok);
	rc = json_take(lu, top, &why);
	if (rc == -ENOMEM)
		goto put_top;
	if (rc < 0) {
		pr_regs_free(lu);
		goto bad;
	}
	for (const struct scsi_pr_reg *r = lu->regs; r; r = r->next)
		n++;
	LOG_INFO("scsi", "%s: restored %u persistent registration(s) from %s", lu->name, n,
		 lu->pr_path);
	goto put_top;

bad:
	/* this LU only: the daemon and its other LUs go on */
	lu->pr_bad = true;
	lu->pr_aptpl = false;
	if (line)
		LOG_ERR("scsi", "%s:%u: the reservation state file of LU %s %s; the LU answers NOT READY until the file is fixed or removed and the LU added again (restart, or a reload without it, then one with it)",
			lu->pr_path, line, lu->name, why ? why : strerror(-rc));
	else
		LOG_ERR("scsi", "%s: the reservation state file of LU %s %s (%s); the LU answers NOT READY until the file is fixed or removed and the LU added again (restart, or a reload without it, then one with it)",
			lu->pr_path, lu->name, why ? why : "is unusable", strerror(-rc));
	rc = 0;
put_top:
	json_object_put(top);
free_buf:
	free(buf);
	return rc;
}

/* ---- shared LUs: the state blob ---- */

#define PR_TAG "pr"
#define PR_MAGIC "rtgt-pr 2\n"
#define PR_RESET_MAGIC "rtgt-pr-reset "
#define PR_GROW_MAGIC "rtgt-grow "
#define PR_IPORT_MAX 511
#define PR_EV_KEEP 16u          /* changes whose events a blob keeps */

/* A parsed blob: the state in a scratch LU (regs, pr_type, pr_holder,
 * pr_gen, pr_aptpl; no lock, nexuses or commands) plus its version and the
 * events of the change that made it. */
struct pr_st {
	struct scsi_lu lu;
	uint64_t seq;
	struct pr_ev *evs;              /* owned */
};

static void st_free(struct pr_st *st)
{
	if (!st)
		return;
	pr_regs_free(&st->lu);
	pr_ev_free(st->evs);
	free(st);
}

/* FNV-1a: catches a torn or hand-edited object, not an adversary. */
static uint64_t blob_sum(const char *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int st_format(const struct pr_st *st, uint8_t **out, size_t *out_len)
{
	const struct scsi_pr_reg *r;
	const struct pr_ev *e;
	char *buf = NULL;
	size_t len = 0;
	int idx = -1, i = 0;
	uint64_t sum;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (r = st->lu.regs; r; r = r->next, i++)
		if (r == st->lu.pr_holder)
			idx = i;
	fprintf(f, PR_MAGIC "seq %" PRIu64 "\ngen %" PRIu32 "\naptpl %d\ntype %u %d\n", st->seq,
		st->lu.pr_gen, st->lu.pr_aptpl, st->lu.pr_type, idx);
	for (r = st->lu.regs; r; r = r->next)
		fprintf(f, "reg %016" PRIx64 " %u %d %s\n", r->key, r->rel_port, r->all_tg_pt,
			r->iport);
	for (e = st->evs; e; e = e->next)
		fprintf(f, "ev %" PRIu64 " %04x %u %d %s %u %s\n", e->seq, e->code, e->rel, e->atp,
			e->iport, e->xrel, e->xiport ? e->xiport : "-");
	if (fflush(f) != 0) {
		fclose(f);
		free(buf);
		return -ENOMEM;
	}
	sum = blob_sum(buf, len);
	fprintf(f, "sum %016" PRIx64 "\n", sum);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*out = (uint8_t *)buf;
	*out_len = len;
	return 0;
}

/* Strict: every line as st_format() writes it, in its order, the checksum
 * right; anything else is -EBADMSG (and nothing is half-installed). */
static int st_parse(const uint8_t *b, size_t len, struct pr_st *st)
{
	char *buf, *line, *end, iport[PR_IPORT_MAX + 1], xiport[PR_IPORT_MAX + 1];
	unsigned type, rel, atp, xrel, code, n_regs = 0, stage = 0;
	int holder = 0, used, aptpl, rc = -EBADMSG;
	uint64_t sum, key, eseq;
	struct pr_ev **tail = &st->evs;
	size_t last;

	if (len < sizeof(PR_MAGIC) || len > (1u << 20) || memchr(b, 0, len) ||
	    b[len - 1] != '\n')
		return -EBADMSG;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, b, len);
	buf[len] = 0;
	for (last = len - 1; last > 0 && buf[last - 1] != '\n'; last--)
		;
	if (sscanf(buf + last, "sum %16" SCNx64 "\n%n", &sum, &used) != 1 ||
	    last + (size_t)used != len || blob_sum(buf, last) != sum)
		goto free_buf;
	buf[last] = 0;
	if (strncmp(buf, PR_MAGIC, strlen(PR_MAGIC)) != 0)
		goto free_buf;
	for (line = buf + strlen(PR_MAGIC); *line; line = end + 1) {
		end = strchr(line, '\n');
		*end = 0;
		used = -1;
		if (stage == 0 && sscanf(line, "seq %" SCNu64 "%n", &st->seq, &used) == 1) {
			stage = 1;
		} else if (stage == 1 && sscanf(line, "gen %" SCNu32 "%n", &st->lu.pr_gen, &used) == 1) {
			stage = 2;
		} else if (stage == 2 && sscanf(line, "aptpl %d%n", &aptpl, &used) == 1 &&
			   (aptpl == 0 || aptpl == 1)) {
			st->lu.pr_aptpl = aptpl;
			stage = 3;
		} else if (stage == 3 && sscanf(line, "type %u %d%n", &type, &holder, &used) == 2 &&
			   (type == 0 || pr_type_valid((uint8_t)type))) {
			stage = 4;
		} else if (stage == 4 && sscanf(line, "reg %16" SCNx64 " %u %u %511s%n", &key, &rel,
						&atp, iport, &used) == 4 && rel <= 0xffff && atp <= 1) {
			if (!pr_reg_add(&st->lu, iport, (uint16_t)rel, atp, key)) {
				rc = -ENOMEM;
				goto free_buf;
			}
			n_regs++;
		} else if (stage >= 4 && sscanf(line, "ev %" SCNu64 " %4x %u %u %511s %u %511s%n", &eseq,
						&code, &rel, &atp, iport, &xrel, xiport, &used) == 7 &&
			   rel <= 0xffff && xrel <= 0xffff && atp <= 1 && eseq <= st->seq) {
			struct pr_ev *e = calloc(1, sizeof(*e));

			stage = 5;
			if (!e) {
				rc = -ENOMEM;
				goto free_buf;
			}
			*tail = e;
			tail = &e->next;
			e->seq = eseq;
			e->code = (uint16_t)code;
			e->rel = (uint16_t)rel;
			e->atp = atp;
			e->xrel = (uint16_t)xrel;
			e->iport = strdup(iport);
			e->xiport = strcmp(xiport, "-") ? strdup(xiport) : NULL;
			if (!e->iport || (strcmp(xiport, "-") && !e->xiport)) {
				rc = -ENOMEM;
				goto free_buf;
			}
		} else {
			goto free_buf;
		}
		if (used < 0 || line[used] != 0)
			goto free_buf;
	}
	if (stage < 4)
		goto free_buf;
	if (type && n_regs) {
		struct scsi_pr_reg *r = st->lu.regs;

		st->lu.pr_type = (uint8_t)type;
		if (pr_type_all_reg((uint8_t)type)) {
			if (holder != -1)
				goto free_buf;
		} else {
			for (int i = 0; r && i < holder; i++)
				r = r->next;
			if (holder < 0 || !r)
				goto free_buf;
			st->lu.pr_holder = r;
		}
	} else if (type || holder != -1) {
		goto free_buf;
	}
	rc = pr_check(&st->lu) ? 0 : -EBADMSG;
free_buf:
	free(buf);
	return rc;
}

static bool nexus_is(const struct scsi_nexus *n, const char *iport, uint16_t rel)
{
	return iport && n->rel_port == rel && strcmp(n->iport, iport) == 0;
}

/* Makes @st the LU's state if it is newer than what is installed, and with
 * @raise does its events to this node's nexuses. Caller holds lu->lock.
 * Returns whether it was installed. */
static bool st_install(struct scsi_lu *lu, struct pr_st *st, bool raise)
{
	const struct pr_ev *e;
	uint64_t had = lu->pr_seq;

	if (st->seq <= had)
		return false;
	pr_regs_free(lu);
	lu->regs = st->lu.regs;
	lu->pr_type = st->lu.pr_type;
	lu->pr_holder = st->lu.pr_holder;
	lu->pr_gen = st->lu.pr_gen;
	lu->pr_aptpl = st->lu.pr_aptpl;
	lu->pr_seq = st->seq;
	st->lu.regs = NULL;
	st->lu.pr_holder = NULL;
	st->lu.pr_type = 0;
	for (e = raise ? st->evs : NULL; e; e = e->next) {
		struct scsi_pr_reg pat = { .iport = e->iport, .rel_port = e->rel, .all_tg_pt = e->atp };
		struct scsi_cmd *c;
		struct scsi_ua *ua;

		/* done here already, with the version that made it */
		if (e->seq <= had)
			continue;
		if (!e->code) {
			for (c = lu->inflight; c; c = c->snext)
				if (pr_reg_matches(&pat, c->nexus->iport, c->nexus->rel_port))
					scsi_cmd_abort(c);
			continue;
		}
		for (ua = lu->uas; ua; ua = ua->next)
			if (pr_reg_matches(&pat, ua->nexus->iport, ua->nexus->rel_port) &&
			    !nexus_is(ua->nexus, e->xiport, e->xrel))
				scsi_ua_add(ua, e->code);
	}
	return true;
}

/* Parses @b and installs it (lock taken here); logs garbage. */
static void st_take(struct scsi_lu *lu, const uint8_t *b, size_t len, bool raise)
{
	struct pr_st *st = calloc(1, sizeof(*st));
	int rc;

	if (!st) {
		LOG_ERR("scsi", "%s: no memory for the shared reservation state", lu->name);
		return;
	}
	rc = st_parse(b, len, st);
	if (rc < 0) {
		LOG_ERR("scsi", "%s: ignoring a malformed shared reservation state (%zu bytes): %s",
			lu->name, len, strerror(-rc));
	} else {
		pthread_mutex_lock(&lu->lock);
		st_install(lu, st, raise);
		pthread_mutex_unlock(&lu->lock);
	}
	st_free(st);
}

/* A peer's LOGICAL UNIT / target reset, as lu_reset() does it for a local
 * one (mode pages are per node and stay). */
static void reset_take(struct scsi_lu *lu, const uint8_t *msg, size_t len)
{
	char buf[32];
	unsigned code;
	int used = -1;
	struct scsi_cmd *c;

	if (len >= sizeof(buf))
		goto bad;
	memcpy(buf, msg, len);
	buf[len] = 0;
	if (sscanf(buf, PR_RESET_MAGIC "%4x\n%n", &code, &used) != 1 || used != (int)len ||
	    (code != ASC_BUS_DEVICE_RESET && code != ASC_POWER_ON_RESET))
		goto bad;
	pthread_mutex_lock(&lu->lock);
	for (c = lu->inflight; c; c = c->snext)
		scsi_cmd_abort(c);
	scsi_ua_add_all(lu, NULL, (uint16_t)code);
	pthread_mutex_unlock(&lu->lock);
	LOG_INFO("scsi", "%s: reset through another node", lu->name);
	return;
bad:
	LOG_ERR("scsi", "%s: ignoring a malformed reset message from another node (%zu bytes)",
		lu->name, len);
}

/* Its own thread: another node grew the volume to j->bytes. */
struct grow_job {
	struct scsi_lu *lu;
	uint64_t bytes;
};

static void *grow_main(void *arg)
{
	struct grow_job *j = arg;
	struct scsi_lu *lu = j->lu;
	struct timespec t = { 0, 100000000 };
	int rc = 0;

	/* the grower's store told every open image before it returned, but
	 * the notice of that and this one travel apart: wait for it a while */
	for (unsigned tries = 0; tries < 50; tries++) {
		rc = raid_vol_refresh(lu->vol);
		if (rc < 0 || raid_vol_bytes(lu->vol) >= j->bytes)
			break;
		nanosleep(&t, NULL);
	}
	if (raid_vol_bytes(lu->vol) < j->bytes)
		LOG_WARN("scsi", "%s: another node grew the volume to %llu bytes but this node sees %llu (%s)",
			 lu->name, (unsigned long long)j->bytes,
			 (unsigned long long)raid_vol_bytes(lu->vol),
			 rc < 0 ? strerror(-rc) : "not yet");
	scsi_lu_resized(lu);
	pthread_mutex_lock(&lu->lock);
	lu->pr_grows_pending--;
	pthread_mutex_unlock(&lu->lock);
	free(j);
	return NULL;
}

static void grow_take(struct scsi_lu *lu, const uint8_t *msg, size_t len)
{
	char buf[48];
	unsigned long long bytes;
	struct grow_job *j;
	pthread_attr_t a;
	pthread_t th;
	int used = 0, rc;

	if (len >= sizeof(buf))
		goto bad;
	memcpy(buf, msg, len);
	buf[len] = '\0';
	if (sscanf(buf, PR_GROW_MAGIC "%llu\n%n", &bytes, &used) != 1 || used != (int)len ||
	    bytes % SCSI_BS)
		goto bad;
	j = malloc(sizeof(*j));
	if (!j)
		goto fail;
	j->lu = lu;
	j->bytes = bytes;
	pthread_mutex_lock(&lu->lock);
	lu->pr_grows_pending++;
	pthread_mutex_unlock(&lu->lock);
	rc = pthread_attr_init(&a);
	if (rc == 0) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&th, &a, grow_main, j);
		pthread_attr_destroy(&a);
	}
	if (rc == 0)
		return;
	pthread_mutex_lock(&lu->lock);
	lu->pr_grows_pending--;
	pthread_mutex_unlock(&lu->lock);
	free(j);
fail:
	LOG_ERR("scsi", "%s: another node grew the volume, but this node cannot look (out of resources); a restart shows the new size",
		lu->name);
	return;
bad:
	LOG_ERR("scsi", "%s: ignoring a malformed grow message from another node (%zu bytes)",
		lu->name, len);
}

void scsi_lu_grown_share(struct scsi_lu *lu)
{
	char msg[48];
	int len, rc;

	if (!lu->pr_shared)
		return;
	len = snprintf(msg, sizeof(msg), PR_GROW_MAGIC "%llu\n",
		       (unsigned long long)raid_vol_bytes(lu->vol));
	rc = raid_vol_shared_notify(lu->vol, PR_TAG, msg, (size_t)len, PR_RESET_NOTIFY_MS);
	if (rc < 0)
		LOG_WARN("scsi", "%s: not every other node confirmed the new size: %s", lu->name,
			 strerror(-rc));
}

/* Library thread: a change (or reset) made by any node, this one included;
 * the node that made it waits until we return. */
static void watch_cb(void *arg, const uint8_t *msg, size_t len, bool self)
{
	struct scsi_lu *lu = arg;

	if (len >= strlen(PR_GROW_MAGIC) && memcmp(msg, PR_GROW_MAGIC, strlen(PR_GROW_MAGIC)) == 0) {
		if (!self)
			grow_take(lu, msg, len);
		return;
	}
	if (len >= strlen(PR_RESET_MAGIC) && memcmp(msg, PR_RESET_MAGIC, strlen(PR_RESET_MAGIC)) == 0) {
		if (!self)
			reset_take(lu, msg, len);
		return;
	}
	if (len) {
		st_take(lu, msg, len, true);
	} else {
		/* the watch was re-established on an empty object (removed by
		 * hand): no reservations any more */
		pthread_mutex_lock(&lu->lock);
		pr_regs_free(lu);
		lu->pr_seq = 0;
		pthread_mutex_unlock(&lu->lock);
		LOG_WARN("scsi", "%s: the shared reservation state is gone; no reservations now",
			 lu->name);
	}
}

static int shared_load(struct scsi_lu *lu)
{
	uint8_t *b = NULL;
	size_t len = 0;
	int rc;

	lu->pr_shared = true;
	/* watch first, read second: no change can fall between the two */
	rc = raid_vol_shared_watch(lu->vol, PR_TAG, watch_cb, lu, &lu->pr_watch);
	if (rc < 0) {
		LOG_ERR("scsi", "%s: cannot watch the shared reservation state: %s", lu->name,
			strerror(-rc));
		return rc;
	}
	rc = raid_vol_shared_read(lu->vol, PR_TAG, &b, &len);
	if (rc < 0) {
		LOG_ERR("scsi", "%s: cannot read the shared reservation state: %s", lu->name,
			strerror(-rc));
		goto unwatch;
	}
	if (len) {
		struct pr_st *st = calloc(1, sizeof(*st));

		rc = st ? st_parse(b, len, st) : -ENOMEM;
		if (rc < 0) {
			LOG_ERR("scsi", "%s: the shared reservation state (RADOS object rtgt_pr.<image id>, %zu bytes) is malformed: %s; fix or remove it",
				lu->name, len, strerror(-rc));
			st_free(st);
			free(b);
			goto unwatch;
		}
		pthread_mutex_lock(&lu->lock);
		st_install(lu, st, false);
		pthread_mutex_unlock(&lu->lock);
		st_free(st);
	}
	free(b);
	{
		unsigned n = 0;
		const struct scsi_pr_reg *r;

		pthread_mutex_lock(&lu->lock);
		for (r = lu->regs; r; r = r->next)
			n++;
		LOG_INFO("scsi", "%s: persistent reservations shared through the cluster: %u registration(s), generation %" PRIu32,
			 lu->name, n, lu->pr_gen);
		pthread_mutex_unlock(&lu->lock);
	}
	return 0;

unwatch:
	raid_vol_shared_unwatch(lu->pr_watch);
	lu->pr_watch = NULL;
	return rc;
}

int pr_load(struct scsi_lu *lu)
{
	if (raid_vol_shared(lu->vol))
		return shared_load(lu);
	return file_load(lu);
}

void pr_free(struct scsi_lu *lu)
{
	/* a reset notify still running calls back into @lu, a grow taken from
	 * another node looks at it: wait for them (a few seconds at most) */
	for (;;) {
		struct timespec ms = { 0, 10000000 };
		unsigned n;

		pthread_mutex_lock(&lu->lock);
		n = lu->pr_resets_pending + lu->pr_grows_pending;
		pthread_mutex_unlock(&lu->lock);
		if (!n)
			break;
		nanosleep(&ms, NULL);
	}
	/* no watch callback runs on @lu once this returns */
	raid_vol_shared_unwatch(lu->pr_watch);
	lu->pr_watch = NULL;
	pr_regs_free(lu);
}

/* Helper thread of raid_vol_shared_notify_async: the reset's notify ended. */
static void reset_notified(void *arg, int rc)
{
	struct scsi_lu *lu = arg;

	if (rc < 0)
		LOG_WARN("scsi", "%s: reset not confirmed by every other node: %s", lu->name,
			 strerror(-rc));
	pthread_mutex_lock(&lu->lock);
	lu->pr_resets_pending--;
	pthread_mutex_unlock(&lu->lock);
}

void pr_lu_reset(struct scsi_lu *lu, uint16_t code)
{
	char msg[32];
	int len, rc;

	if (!lu->pr_shared)
		return;
	len = snprintf(msg, sizeof(msg), PR_RESET_MAGIC "%04x\n", code);
	/* on a helper thread: a dead peer must not hold the calling reactor
	 * (every session on it) for the notify timeout; the TMF response
	 * waits for it through scsi_resets_pending() instead */
	pthread_mutex_lock(&lu->lock);
	lu->pr_resets_pending++;
	pthread_mutex_unlock(&lu->lock);
	rc = raid_vol_shared_notify_async(lu->vol, PR_TAG, msg, (size_t)len, PR_RESET_NOTIFY_MS,
					  reset_notified, lu);
	if (rc < 0) {
		pthread_mutex_lock(&lu->lock);
		lu->pr_resets_pending--;
		pthread_mutex_unlock(&lu->lock);
		LOG_WARN("scsi", "%s: cannot tell the other nodes of the reset: %s", lu->name,
			 strerror(-rc));
	}
}

/* ---- PERSISTENT RESERVE OUT on a local LU with an APTPL file ---- */

/* @dst (a scratch LU without registrations) gets a copy of @src's state,
 * registrations in the same order. 0 or -ENOMEM (@dst then empty). */
static int state_copy(struct scsi_lu *dst, const struct scsi_lu *src)
{
	const struct scsi_pr_reg *r;

	for (r = src->regs; r; r = r->next) {
		struct scsi_pr_reg *c = pr_reg_add(dst, r->iport, r->rel_port, r->all_tg_pt, r->key);

		if (!c) {
			pr_regs_free(dst);
			return -ENOMEM;
		}
		if (r == src->pr_holder)
			dst->pr_holder = c;
	}
	dst->pr_type = src->pr_type;
	dst->pr_gen = src->pr_gen;
	dst->pr_aptpl = src->pr_aptpl;
	return 0;
}

/*
 * The service action of @o on an LU whose state may have to persist
 * (lu->pr_path), lock held: all or nothing. It runs on a scratch copy of
 * the state, the events it causes (UAs, aborts) recorded as on a shared
 * LU; the file is written from the copy when the old or the new state has
 * APTPL set (with APTPL 0 on both sides no file exists: nothing to do); only
 * once that succeeded does the copy become the LU's state and are the
 * events done. A save that fails leaves the LU's state, the other nexuses'
 * UAs and their commands as they were, and the command gets HARDWARE
 * ERROR, INTERNAL TARGET FAILURE (PRO_SAVE_FAILED): never GOOD for a
 * change that a power loss would undo, and never an error for a change
 * that took effect. When the failure came after the file was replaced
 * (its directory's fsync), the old state is written back.
 */
int pr_local_out(struct scsi_lu *lu, struct prout *o, uint8_t sa)
{
	struct pr_rec rec = { .head = NULL, .tail = &rec.head, .err = 0 };
	struct pr_st *st = calloc(1, sizeof(*st));
	bool replaced;
	int rc, src;

	if (!st || state_copy(&st->lu, lu) < 0) {
		free(st);
		return PRO_NOMEM;
	}
	st->lu.name = lu->name;
	st->lu.pr_path = lu->pr_path;
	st->lu.pr_rec = &rec;
	o->lu = &st->lu;
	o->reg = pr_reg_find(&st->lu, o->n);
	rc = pr_dispatch(o, sa);
	o->lu = lu;
	o->reg = NULL;
	st->lu.pr_rec = NULL;
	if (rc == PRO_OK && rec.err)
		rc = PRO_NOMEM;
	if (rc == PRO_OK && (lu->pr_aptpl || st->lu.pr_aptpl)) {
		/* rare and small: a synchronous write under the lock keeps
		 * the file in step with the state */
		src = pr_save(&st->lu, &replaced);
		if (src < 0) {
			LOG_ERR("scsi", "%s: cannot save reservations to %s: %s; PERSISTENT RESERVE OUT refused, state unchanged",
				lu->name, lu->pr_path, strerror(-src));
			if (replaced && (src = pr_save(lu, &replaced)) < 0)
				LOG_ERR("scsi", "%s: cannot write the previous reservations back to %s either (%s): after a power loss it may hold the refused change",
					lu->name, lu->pr_path, strerror(-src));
			rc = PRO_SAVE_FAILED;
		}
	}
	if (rc == PRO_OK) {
		struct pr_ev *e;

		/* st_install() does the recorded events to this LU's nexuses,
		 * as for a change another node made */
		st->seq = lu->pr_seq + 1;
		for (e = rec.head; e; e = e->next)
			e->seq = st->seq;
		st->evs = rec.head;
		rec.head = NULL;
		st_install(lu, st, true);
	}
	pr_ev_free(rec.head);
	st_free(st);
	return rc;
}

/* ---- PERSISTENT RESERVE OUT on a shared LU ---- */

/* One PROUT in flight through the cluster; owned by the raid update, freed
 * by shared_done(). */
struct prout_job {
	struct scsi_cmd *cmd;           /* borrowed until completed */
	struct scsi_lu *lu;
	uint8_t sa;
	struct prout o;                 /* checked fields; lu/n/reg set per attempt */
	struct scsi_nexus n;            /* the sender's identity (iport borrowed from cmd) */
	int pro_rc;                     /* PRO_* of the last attempt */
	bool bad_state;                 /* the stored state was malformed */
};

/* Helper thread, once per attempt: applies the service action to the
 * state now stored and hands back the new one with its events. */
static int shared_apply(void *arg, const uint8_t *old, size_t old_len, uint8_t **out,
			size_t *out_len)
{
	struct prout_job *j = arg;
	struct pr_rec rec = { .head = NULL, .tail = &rec.head, .err = 0 };
	struct pr_st *st = calloc(1, sizeof(*st));
	struct prout o = j->o;
	int rc;

	j->bad_state = false;
	j->pro_rc = PRO_NOMEM;
	if (!st)
		return 0;
	rc = old_len ? st_parse(old, old_len, st) : 0;
	if (rc == -EBADMSG) {
		LOG_ERR("scsi", "%s: the shared reservation state (RADOS object rtgt_pr.<image id>, %zu bytes) is malformed; PERSISTENT RESERVE OUT refused until it is fixed or removed",
			j->lu->name, old_len);
		j->bad_state = true;
		st_free(st);
		return 0;
	}
	if (rc < 0) {
		st_free(st);
		return 0;
	}
	st->lu.name = j->lu->name;
	st->lu.pr_rec = &rec;
	o.lu = &st->lu;
	o.n = &j->n;
	o.reg = pr_reg_find(&st->lu, &j->n);
	j->pro_rc = pr_dispatch(&o, j->sa);
	st->lu.pr_rec = NULL;
	if (j->pro_rc == PRO_OK && rec.err)
		j->pro_rc = PRO_NOMEM;
	if (j->pro_rc != PRO_OK) {
		pr_ev_free(rec.head);
		st_free(st);
		return 0;                       /* nothing to write */
	}
	st->seq++;
	{
		/* keep the events of the last PR_EV_KEEP changes: a node that
		 * got a later version first (notifies from two writers may
		 * cross) or re-read after a broken watch still does them */
		struct pr_ev **pp = &st->evs, *e;

		while ((e = *pp)) {
			if (e->seq + PR_EV_KEEP <= st->seq) {
				*pp = e->next;
				e->next = NULL;
				pr_ev_free(e);
			} else {
				pp = &e->next;
			}
		}
		for (e = rec.head; e; e = e->next)
			e->seq = st->seq;
		*pp = rec.head;
	}
	rc = st_format(st, out, out_len);
	if (rc < 0)
		j->pro_rc = PRO_NOMEM;
	st_free(st);
	return 0;
}

/* Submitting thread: the update is over (written and seen by every node,
 * or not written). */
static void shared_done(void *arg, int rc, const uint8_t *blob, size_t len)
{
	struct prout_job *j = arg;
	struct scsi_cmd *cmd = j->cmd;

	/* usually installed already, by our own watch callback */
	if (blob)
		st_take(j->lu, blob, len, true);
	if (j->bad_state || (rc < 0 && rc != -ETIMEDOUT)) {
		if (!j->bad_state)
			LOG_ERR("scsi", "%s: PERSISTENT RESERVE OUT through the cluster failed: %s",
				j->lu->name, strerror(-rc));
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
	} else {
		pr_out_status(cmd, j->pro_rc);
	}
	free(j);
	scsi_cmd_complete(cmd);
}

void pr_shared_out(struct scsi_cmd *cmd, struct prout *o, uint8_t sa)
{
	struct prout_job *j = calloc(1, sizeof(*j));
	int rc;

	if (!j) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INSUFFICIENT_REG_RESOURCES);
		return scsi_cmd_complete(cmd);
	}
	j->cmd = cmd;
	j->lu = o->lu;
	j->sa = sa;
	j->o = *o;
	j->n.iport = cmd->nexus->iport;
	j->n.rel_port = cmd->nexus->rel_port;
	j->n.tpgt = cmd->nexus->tpgt;
	rc = raid_vol_shared_update(o->lu->vol, PR_TAG, cmd->ioctx, shared_apply, shared_done, j);
	if (rc < 0) {
		LOG_ERR("scsi", "%s: cannot start PERSISTENT RESERVE OUT through the cluster: %s",
			o->lu->name, strerror(-rc));
		free(j);
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		scsi_cmd_complete(cmd);
	}
}

