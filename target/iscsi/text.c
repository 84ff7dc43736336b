/*
 * target/iscsi/text.c - iSCSI text key=value lists (RFC 7143 section 6.1):
 * parsing a request's data segment into pairs, building a response segment,
 * the numeric and binary value encodings (decimal, 0x hex, 0b base64).
 * iSCSI name syntax is target/scsi/iscsi_name.c's.
 *
 * State: none. A parsed iscsi_kvlist is immutable after iscsi_kv_parse();
 * an iscsi_textbuf only grows (or becomes sticky-failed with error =
 * -ENOMEM, after which every add is a no-op so callers check once at the
 * end).
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"), its key rules. May call: libc and conf/util.h's
 * inline helpers; no other file here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"

/* RFC 7143 6.1: key names are at most 63 bytes of letters, digits and
 * ". - + @ _" (plus the '#' of "X#" public extension keys, 13.5.2).
 * Anything else means the peer is not speaking iSCSI text. */
static bool key_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '+' ||
	       c == '@' || c == '_' || c == '#';
}

void iscsi_kv_free(struct iscsi_kvlist *l)
{
	if (!l)
		return;
	free(l->kv);
	free(l->text);
	l->kv = NULL;
	l->text = NULL;
	l->n = 0;
}

int iscsi_kv_parse(const uint8_t *data, size_t len, struct iscsi_kvlist *out)
{
	size_t i, start, npairs = 0;
	unsigned k = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	/* The copy gets one extra NUL so that a final pair that lacks its
	 * terminator (seen from some initiators) is still a C string; every
	 * other NUL comes from the peer. */
	out->text = malloc(len + 1);
	if (!out->text)
		return -ENOMEM;
	if (len)
		memcpy(out->text, data, len);
	out->text[len] = '\0';

	for (i = 0; i < len; i++)
		if (out->text[i] == '\0')
			npairs++;
	npairs++;
	out->kv = calloc(npairs, sizeof(*out->kv));
	if (!out->kv) {
		ret = -ENOMEM;
		goto free_list;
	}

	start = 0;
	while (start < len) {
		char *pair = out->text + start;
		size_t plen = strlen(pair);
		char *eq;
		size_t klen;
		unsigned j;

		start += plen + 1;
		/* Empty strings are padding (zero bytes after the last pair). */
		if (plen == 0)
			continue;
		eq = strchr(pair, '=');
		if (!eq) {
			ret = -EINVAL;
			goto free_list;
		}
		klen = (size_t)(eq - pair);
		if (klen == 0 || klen > 63) {
			ret = -EINVAL;
			goto free_list;
		}
		for (j = 0; j < klen; j++) {
			if (!key_char_ok(pair[j])) {
				ret = -EINVAL;
				goto free_list;
			}
		}
		if (strlen(eq + 1) > 8192) {
			ret = -EINVAL;
			goto free_list;
		}
		*eq = '\0';
		for (j = 0; j < k; j++) {
			if (strcmp(out->kv[j].key, pair) == 0) {
				ret = -EINVAL;
				goto free_list;
			}
		}
		out->kv[k].key = pair;
		out->kv[k].value = eq + 1;
		k++;
	}
	out->n = k;
	return 0;

free_list:
	iscsi_kv_free(out);
	return ret;
}

const char *iscsi_kv_get(const struct iscsi_kvlist *l, const char *key)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->kv[i].key, key) == 0)
			return l->kv[i].value;
	return NULL;
}

static void textbuf_reserve(struct iscsi_textbuf *b, size_t more)
{
	size_t ncap;
	uint8_t *nd;

	if (b->error)
		return;
	if (b->len + more <= b->cap)
		return;
	ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + more)
		ncap *= 2;
	nd = realloc(b->data, ncap);
	if (!nd) {
		b->error = -ENOMEM;
		return;
	}
	b->data = nd;
	b->cap = ncap;
}

void iscsi_text_add(struct iscsi_textbuf *b, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	textbuf_reserve(b, kl + vl + 2);
	if (b->error)
		return;
	memcpy(b->data + b->len, key, kl);
	b->data[b->len + kl] = '=';
	memcpy(b->data + b->len + kl + 1, value, vl);
	b->data[b->len + kl + 1 + vl] = '\0';
	b->len += kl + vl + 2;
}

void iscsi_text_addf(struct iscsi_textbuf *b, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *v;
	int n;

	if (b->error)
		return;
	va_start(ap, fmt);
	n = vasprintf(&v, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->error = -ENOMEM;
		return;
	}
	iscsi_text_add(b, key, v);
	free(v);
}

void iscsi_text_free(struct iscsi_textbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->error = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int iscsi_text_parse_number(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		p = s + 2;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			int h = hexval(*p);

			if (h < 0 || v > (UINT64_MAX >> 4))
				return -EINVAL;
			v = (v << 4) | (uint64_t)h;
		}
		*out = v;
		return 0;
	}
	/* decimal-constant: a single 0, or 1-9 followed by digits */
	if (s[0] == '0' && s[1] != '\0')
		return -EINVAL;
	for (p = s; *p; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static int decode_hex(const char *p, uint8_t *out, size_t max, size_t *len)
{
	size_t n = strlen(p), o = 0, i = 0;

	if (n == 0)
		return -EINVAL;
	/* RFC 7143 6.1: n hex digits encode (n+1)/2 bytes, so an odd count
	 * means the first byte has only its low nibble written. */
	if ((n + 1) / 2 > max)
		return -EINVAL;
	if (n % 2) {
		int h = hexval(p[0]);

		if (h < 0)
			return -EINVAL;
		out[o++] = (uint8_t)h;
		i = 1;
	}
	for (; i < n; i += 2) {
		int hi = hexval(p[i]), lo = hexval(p[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[o++] = (uint8_t)(hi << 4 | lo);
	}
	*len = o;
	return 0;
}

static int decode_b64(const char *p, uint8_t *out, size_t max, size_t *len)
{
	size_t n = strlen(p), o = 0, i, pad = 0;

	/* RFC 4648 with padding: whole 4-character groups only. */
	if (n == 0 || n % 4)
		return -EINVAL;
	if (p[n - 1] == '=')
		pad++;
	if (p[n - 2] == '=')
		pad++;
	if (n / 4 * 3 - pad > max)
		return -EINVAL;
	for (i = 0; i < n; i += 4) {
		int v[4], j;
		bool last = i + 4 == n;

		for (j = 0; j < 4; j++) {
			if (p[i + j] == '=' && last && j >= 4 - (int)pad)
				v[j] = 0;
			else if ((v[j] = b64val(p[i + j])) < 0)
				return -EINVAL;
		}
		out[o++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		if (!last || pad < 2)
			out[o++] = (uint8_t)((v[1] & 0xf) << 4 | v[2] >> 2);
		if (!last || pad < 1)
			out[o++] = (uint8_t)((v[2] & 0x3) << 6 | v[3]);
	}
	*len = o;
	return 0;
}

int iscsi_text_decode_binary(const char *s, uint8_t *out, size_t max, size_t *len)
{
	if (!s || s[0] != '0')
		return -EINVAL;
	if (s[1] == 'x' || s[1] == 'X')
		return decode_hex(s + 2, out, max, len);
	if (s[1] == 'b' || s[1] == 'B')
		return decode_b64(s + 2, out, max, len);
	return -EINVAL;
}

int iscsi_text_encode_hex(const uint8_t *in, size_t n, char *out, size_t outsz)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (outsz < 2 * n + 3)
		return -ENOSPC;
	out[0] = '0';
	out[1] = 'x';
	for (i = 0; i < n; i++) {
		out[2 + 2 * i] = digits[in[i] >> 4];
		out[3 + 2 * i] = digits[in[i] & 0xf];
	}
	out[2 + 2 * n] = '\0';
	return 0;
}
