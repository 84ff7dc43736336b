/*
 * conf/conf_val.c - what every section's parser shares: the "FILE:LINE:
 * message" reports, the typed readers of a group's keys (string, integer,
 * number, boolean, size, list of strings), the unknown-key check with its
 * "did you mean" hint, and the small syntax checks (sizes, iSCSI names,
 * pool and volume names, listen addresses, path resolution) that the unit
 * tests call directly too. Which keys exist is conf_keys.c's table.
 *
 * The readers return 1 (found and valid), 0 (absent) or -1 (reported), so
 * that a caller can go on and report every problem of the file, not just
 * the first. No state machine: the only state is the caller's conf_vctx.
 *
 * Layer: values, the lowest of the configuration parser (conf/README.md
 * "Layers"). May call: the key table (conf_keys.c), libconfig, libc.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

/* ---- reporting ---- */

int conf_setting_line(const config_setting_t *s)
{
	int line = s ? (int)config_setting_source_line(s) : 0;

	return line > 0 ? line : 1;
}

static void vreport(struct conf_vctx *v, const config_setting_t *s, bool warn,
		    const char *fmt, va_list ap)
{
	const char *file = s ? config_setting_source_file(s) : NULL;

	fprintf(v->errs, "%s:%d: %s", file ? file : v->path, conf_setting_line(s),
		warn ? "warning: " : "");
	vfprintf(v->errs, fmt, ap);
	fputc('\n', v->errs);
	if (!warn)
		v->n_err++;
}

__attribute__((format(printf, 3, 4)))
void conf_err_at(struct conf_vctx *v, const config_setting_t *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(v, s, false, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4)))
void conf_warn_at(struct conf_vctx *v, const config_setting_t *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(v, s, true, fmt, ap);
	va_end(ap);
}

char *conf_xstrdup(struct conf_vctx *v, const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		v->nomem = true;
	return d;
}

void *conf_xcalloc(struct conf_vctx *v, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		v->nomem = true;
	return p;
}

const char *conf_type_name(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_GROUP: return "a group { }";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: return "an integer";
	case CONFIG_TYPE_FLOAT: return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array [ ]";
	case CONFIG_TYPE_LIST: return "a list ( )";
	default: return "an unknown type";
	}
}

/* ---- unknown keys ---- */

/* Edit distance, to turn "unknown key 'worker'" into a hint. Keys are short. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* Every member of group @grp must be a key of section @sect (conf_keys.c). */
void conf_check_keys(struct conf_vctx *v, const config_setting_t *grp, const char *where,
		     enum conf_sect sect)
{
	int n = config_setting_length(grp);

	for (int i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
		const char *name = config_setting_name(s);
		const char *hint = NULL;
		unsigned best = 3;
		bool ok = false;

		if (!name)
			continue;
		for (unsigned k = 0; k < CK__N; k++) {
			const char *key = conf_keys[k].name;
			unsigned d;

			if (conf_keys[k].sect != sect)
				continue;
			if (strcmp(name, key) == 0) {
				ok = true;
				break;
			}
			d = edit_distance(name, key);
			if (d < best) {
				best = d;
				hint = key;
			}
		}
		if (ok)
			continue;
		if (hint)
			conf_err_at(v, s, "%s: unknown key '%s' (did you mean '%s'?)", where, name,
				    hint);
		else
			conf_err_at(v, s, "%s: unknown key '%s'", where, name);
	}
}

/* ---- typed getters: 1 found and valid, 0 absent, -1 reported ---- */

int conf_get_string(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		    const char *where, bool required, const char **out)
{
	const config_setting_t *s = config_setting_get_member(grp, key);

	if (!s) {
		if (required) {
			conf_err_at(v, grp, "%s: missing required key '%s'", where, key);
			return -1;
		}
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		conf_err_at(v, s, "%s: %s must be a string, not %s", where, key, conf_type_name(s));
		return -1;
	}
	*out = config_setting_get_string(s);
	if (!**out) {
		conf_err_at(v, s, "%s: %s must not be empty", where, key);
		return -1;
	}
	return 1;
}

int conf_get_uint(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, long long min, long long max, unsigned long long *out)
{
	const config_setting_t *s = config_setting_get_member(grp, key);
	long long val;

	if (!s)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		conf_err_at(v, s, "%s: %s must be an integer, not %s", where, key,
			    conf_type_name(s));
		return -1;
	}
	val = config_setting_get_int64(s);
	if (val < min || val > max) {
		conf_err_at(v, s, "%s: %s = %lld is out of range %lld..%lld", where, key, val,
			    min, max);
		return -1;
	}
	*out = (unsigned long long)val;
	return 1;
}

int conf_get_key_uint(struct conf_vctx *v, const config_setting_t *grp, enum conf_key_id id,
		      const char *where, unsigned long long *out)
{
	const struct conf_key *k = &conf_keys[id];

	return conf_get_uint(v, grp, k->name, where, k->min, k->max, out);
}

int conf_get_number(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		    const char *where, double *out)
{
	const config_setting_t *s = config_setting_get_member(grp, key);

	if (!s)
		return 0;
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		*out = (double)config_setting_get_int64(s);
		return 1;
	case CONFIG_TYPE_FLOAT:
		*out = config_setting_get_float(s);
		return 1;
	default:
		conf_err_at(v, s, "%s: %s must be a number, not %s", where, key, conf_type_name(s));
		return -1;
	}
}

int conf_get_bool(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, bool *out)
{
	const config_setting_t *s = config_setting_get_member(grp, key);

	if (!s)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL) {
		conf_err_at(v, s, "%s: %s must be true or false, not %s", where, key,
			    conf_type_name(s));
		return -1;
	}
	*out = config_setting_get_bool(s);
	return 1;
}

int conf_get_size(struct conf_vctx *v, const config_setting_t *grp, const char *key,
		  const char *where, bool allow_percent, struct conf_size *out)
{
	const config_setting_t *s = config_setting_get_member(grp, key);
	const char *str;

	if (!s)
		return 0;
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: {
		long long b = config_setting_get_int64(s);

		if (b <= 0) {
			conf_err_at(v, s, "%s: %s must be > 0", where, key);
			return -1;
		}
		out->bytes = (uint64_t)b;
		out->percent = 0;
		return 1;
	}
	case CONFIG_TYPE_STRING:
		str = config_setting_get_string(s);
		if (conf_parse_size(str, allow_percent, out) == 0)
			return 1;
		if (!allow_percent && strchr(str, '%'))
			conf_err_at(v, s, "%s: %s = \"%s\": a percentage is not allowed here",
				    where, key, str);
		else
			conf_err_at(v, s,
				    "%s: %s = \"%s\" is not a size (use e.g. \"512\", \"64K\", "
				    "\"1G\"%s)", where, key, str, allow_percent ? " or \"80%\"" : "");
		return -1;
	default:
		conf_err_at(v, s, "%s: %s must be a size string like \"64K\", not %s", where, key,
			    conf_type_name(s));
		return -1;
	}
}

/* A list or array of non-empty strings. Returns the setting (NULL if absent
 * or not a list) and sets *bad when anything was reported. */
const config_setting_t *conf_get_string_list(struct conf_vctx *v, const config_setting_t *grp,
					     const char *key, const char *where,
					     bool *bad)
{
	const config_setting_t *s = config_setting_get_member(grp, key);
	int n;

	if (!s)
		return NULL;
	if (config_setting_type(s) != CONFIG_TYPE_LIST &&
	    config_setting_type(s) != CONFIG_TYPE_ARRAY) {
		conf_err_at(v, s, "%s: %s must be a list of strings ( \"a\", \"b\" ), not %s",
			    where, key, conf_type_name(s));
		*bad = true;
		return NULL;
	}
	n = config_setting_length(s);
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			conf_err_at(v, e, "%s: %s[%d] must be a string, not %s", where, key, i,
				    conf_type_name(e));
			*bad = true;
		} else if (!*config_setting_get_string(e)) {
			conf_err_at(v, e, "%s: %s[%d] must not be empty", where, key, i);
			*bad = true;
		}
	}
	return s;
}

/* ---- small syntax checks (also used by tests) ---- */

int conf_parse_size(const char *s, bool allow_percent, struct conf_size *out)
{
	unsigned long long val = 0;
	const char *p = s;
	unsigned shift = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (val > (ULLONG_MAX - 9) / 10)
			return -ERANGE;
		val = val * 10 + (unsigned)(*p - '0');
	}
	if (p == s)
		return -EINVAL;
	if (*p == '%') {
		if (!allow_percent || p[1] || val < 1 || val > 100)
			return -EINVAL;
		out->bytes = 0;
		out->percent = (unsigned)val;
		return 0;
	}
	switch (*p) {
	case '\0': shift = 0; break;
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	case 'T': case 't': shift = 40; break;
	default: return -EINVAL;
	}
	if (*p && p[1])
		return -EINVAL;
	if (val == 0)
		return -EINVAL;
	if (shift && val > (UINT64_MAX >> shift))
		return -ERANGE;
	out->bytes = (uint64_t)val << shift;
	out->percent = 0;
	return 0;
}

static bool is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_hex_lower(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

static int check_hex_name(const char *hex, size_t n1, size_t n2, const char **why)
{
	size_t len = strlen(hex);

	if (len != n1 && len != n2) {
		*why = n1 == n2 ? "needs exactly 16 hex digits after the prefix"
				: "needs 16 or 32 hex digits after the prefix";
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (!is_hex_lower(hex[i])) {
			*why = "hex digits must be 0-9 or a-f (lowercase)";
			return -EINVAL;
		}
	}
	return 0;
}

int conf_iqn_check(const char *name, const char **why)
{
	const char *p;
	bool label_start = true;

	*why = NULL;
	if (strlen(name) > CONF_IQN_MAX) {
		*why = "is longer than 223 bytes";
		return -EINVAL;
	}
	for (p = name; *p; p++) {
		if (*p >= 'A' && *p <= 'Z') {
			*why = "must be lowercase";
			return -EINVAL;
		}
	}
	if (strncmp(name, "eui.", 4) == 0)
		return check_hex_name(name + 4, 16, 16, why);
	if (strncmp(name, "naa.", 4) == 0)
		return check_hex_name(name + 4, 16, 32, why);
	if (strncmp(name, "iqn.", 4) != 0) {
		*why = "must start with iqn., eui. or naa.";
		return -EINVAL;
	}
	p = name + 4;
	/* yyyy-mm: the month the naming authority owned the domain */
	for (int i = 0; i < 7; i++) {
		bool ok = i == 4 ? p[i] == '-' : (p[i] >= '0' && p[i] <= '9');

		if (!ok) {
			*why = "needs a date iqn.YYYY-MM. after the prefix";
			return -EINVAL;
		}
	}
	if ((p[5] - '0') * 10 + (p[6] - '0') < 1 || (p[5] - '0') * 10 + (p[6] - '0') > 12) {
		*why = "has a month outside 01..12";
		return -EINVAL;
	}
	p += 7;
	if (*p != '.') {
		*why = "needs '.' and a reversed domain name after iqn.YYYY-MM";
		return -EINVAL;
	}
	p++;
	/* reversed domain name: labels of [a-z0-9-] separated by dots */
	for (; *p && *p != ':'; p++) {
		if (*p == '.') {
			if (label_start)
				break;
			label_start = true;
			continue;
		}
		if (!is_lower_alnum(*p) && *p != '-')
			break;
		label_start = false;
	}
	if (label_start || (*p && *p != ':')) {
		*why = "needs a reversed domain name (e.g. org.example) after the date";
		return -EINVAL;
	}
	if (*p == ':') {
		p++;
		if (!*p) {
			*why = "has nothing after ':'";
			return -EINVAL;
		}
		for (; *p; p++) {
			if (!is_lower_alnum(*p) && *p != '-' && *p != '.' && *p != ':') {
				*why = "may only contain a-z, 0-9, '-', '.' and ':'";
				return -EINVAL;
			}
		}
	}
	return 0;
}

int conf_volume_name_check(const char *name)
{
	size_t len = strlen(name);

	if (len < 1 || len > CONF_VOLUME_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return -EINVAL;
	}
	return 0;
}

int conf_snapshot_name_check(const char *name)
{
	const char *at = strchr(name, '@');
	char vol[CONF_SNAP_PART_MAX + 1];
	size_t n;

	if (!at)
		return -EINVAL;
	n = (size_t)(at - name);
	if (n < 1 || n > CONF_SNAP_PART_MAX || strlen(at + 1) > CONF_SNAP_PART_MAX)
		return -EINVAL;
	memcpy(vol, name, n);
	vol[n] = '\0';
	if (conf_volume_name_check(vol) < 0 || conf_volume_name_check(at + 1) < 0)
		return -EINVAL;
	return 0;
}

int conf_listen_parse(const char *s, char *host, uint16_t *port, int *family,
		      const char **why)
{
	const char *colon, *hstart, *hend;
	unsigned char addr[sizeof(struct in6_addr)];
	unsigned long val = 0;
	size_t hlen;

	*why = NULL;
	if (s[0] == '[') {
		hstart = s + 1;
		hend = strchr(s, ']');
		if (!hend || hend[1] != ':') {
			*why = "must be \"[ipv6]:port\"";
			return -EINVAL;
		}
		colon = hend + 1;
		*family = AF_INET6;
	} else {
		hstart = s;
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "must be \"ip:port\" or \"[ipv6]:port\"";
			return -EINVAL;
		}
		if (memchr(s, ':', (size_t)(colon - s))) {
			*why = "an IPv6 address must be written in brackets: \"[ipv6]:port\"";
			return -EINVAL;
		}
		hend = colon;
		*family = AF_INET;
	}
	hlen = (size_t)(hend - hstart);
	if (hlen == 0 || hlen >= 64) {
		*why = "has no valid address before the port";
		return -EINVAL;
	}
	memcpy(host, hstart, hlen);
	host[hlen] = '\0';
	if (inet_pton(*family, host, addr) != 1) {
		*why = *family == AF_INET ? "is not a numeric IPv4 address (host names are not resolved)"
					  : "is not a numeric IPv6 address";
		return -EINVAL;
	}
	if (!colon[1]) {
		*why = "has no port after ':'";
		return -EINVAL;
	}
	for (const char *p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9' || val > 65535) {
			*why = "has a port that is not a number in 1..65535";
			return -EINVAL;
		}
		val = val * 10 + (unsigned long)(*p - '0');
	}
	if (val < 1 || val > 65535) {
		*why = "has a port that is not a number in 1..65535";
		return -EINVAL;
	}
	*port = (uint16_t)val;
	return 0;
}

char *conf_path_resolve(const char *dir, const char *path)
{
	size_t cap = strlen(dir) + strlen(path) + 3;
	char *joined = malloc(cap), *out = malloc(cap);
	char *save = NULL, *tok;
	size_t len = 0;
	bool absolute;

	if (!joined || !out)
		goto free_both;
	if (path[0] == '/' || !dir[0])
		snprintf(joined, cap, "%s", path);
	else
		snprintf(joined, cap, "%s/%s", dir, path);
	absolute = joined[0] == '/';
	/* Rebuild component by component: "." vanishes, ".." eats the last
	 * kept component (or stays, when a relative path climbs above its
	 * start). Lexical only: symlinks are the raid layer's to notice. */
	out[0] = '\0';
	for (tok = strtok_r(joined, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			char *slash = strrchr(out, '/');
			const char *last = slash ? slash + 1 : out;

			if (len > 0 && strcmp(last, "..") != 0) {
				len = slash ? (size_t)(slash - out) : 0;
				out[len] = '\0';
				continue;
			}
			if (absolute)
				continue; /* "/.." is "/" */
		}
		if (len > 0 || absolute)
			out[len++] = '/';
		len += (size_t)sprintf(out + len, "%s", tok);
	}
	if (len == 0)
		snprintf(out, cap, "%s", absolute ? "/" : ".");
	free(joined);
	return out;

free_both:
	free(joined);
	free(out);
	return NULL;
}
