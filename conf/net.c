/*
 * conf/net.c - address rules of "allow" entries: parsing "a.b.c.d/len"
 * and "v6/len" networks and matching a peer address against one.
 *
 * No state machine: pure functions.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: libc only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/conf.h"

/* True when every bit of @addr past @prefix is zero. */
static bool host_bits_zero(const uint8_t *addr, unsigned len, unsigned prefix)
{
	for (unsigned bit = prefix; bit < len * 8; bit++)
		if (addr[bit / 8] & (0x80u >> (bit % 8)))
			return false;
	return true;
}

int conf_net_parse(const char *s, struct conf_net *out, const char **why)
{
	char host[64];
	const char *slash = strchr(s, '/');
	size_t hl = slash ? (size_t)(slash - s) : strlen(s);
	unsigned max, prefix;

	memset(out, 0, sizeof(*out));
	if (hl == 0 || hl >= sizeof(host)) {
		*why = "is not an address or network (use e.g. \"198.18.0.0/15\" or \"fd00::/8\")";
		return -EINVAL;
	}
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (inet_pton(AF_INET, host, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, host, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		*why = "is not a numeric IPv4 or IPv6 address (no host names)";
		return -EINVAL;
	}
	prefix = max;
	if (slash) {
		const char *p = slash + 1;
		char *end;
		unsigned long n;

		if (*p < '0' || *p > '9' || strlen(p) > 3) {
			*why = "has a bad prefix length after '/'";
			return -EINVAL;
		}
		n = strtoul(p, &end, 10);
		if (*end || n > max) {
			*why = max == 32 ? "has a prefix length out of range 0..32"
					 : "has a prefix length out of range 0..128";
			return -EINVAL;
		}
		prefix = (unsigned)n;
	}
	if (!host_bits_zero(out->addr, max / 8, prefix)) {
		*why = "has host bits set after the prefix (write the network address, "
		       "e.g. 198.18.0.0/15)";
		return -EINVAL;
	}
	out->prefix = prefix;
	return 0;
}

bool conf_net_match(const struct conf_net *net, const struct sockaddr_storage *peer)
{
	const uint8_t *a;
	unsigned full, rest;

	if (!net || !peer)
		return false;
	if (peer->ss_family == AF_INET) {
		if (net->family != AF_INET)
			return false;
		a = (const uint8_t *)&((const struct sockaddr_in *)peer)->sin_addr;
	} else if (peer->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			if (net->family != AF_INET)
				return false;
			a = &a6->s6_addr[12];
		} else {
			if (net->family != AF_INET6)
				return false;
			a = a6->s6_addr;
		}
	} else {
		return false;
	}
	full = net->prefix / 8;
	rest = net->prefix % 8;
	if (memcmp(a, net->addr, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xffu << (8 - rest));

		if ((a[full] & mask) != (net->addr[full] & mask))
			return false;
	}
	return true;
}
