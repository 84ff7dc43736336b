/*
 * target/scsi/iscsi_name.c - iSCSI name syntax (RFC 7143 4.2.7, RFC 3722):
 * which byte strings are iSCSI names, before and after the stringprep
 * profile's case mapping.
 *
 * Layer: names, the lowest of target/scsi (target/scsi/README.md
 * "Layers"). May call: libc only. Called by target/iscsi/login.c
 * (InitiatorName, TargetName) and target/scsi/pr.c (TransportIDs).
 *
 * State: none.
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "target/scsi/iscsi_name.h"

static bool hexdigit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool all_hex(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!hexdigit(p[i]))
			return false;
	return p[n] == '\0';
}

/* RFC 3722 stringprep output restricted to what names actually use: the
 * profile lower-cases letters, so an upper-case letter means the name was
 * not prepared. */
static bool iqn_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == ':';
}

bool iscsi_name_valid(const char *name)
{
	size_t n, i;
	const char *p;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > ISCSI_NAME_MAX)
		return false;
	if (strncmp(name, "eui.", 4) == 0)
		return n == 4 + 16 && all_hex(name + 4, 16);
	if (strncmp(name, "naa.", 4) == 0)
		return (n == 4 + 16 || n == 4 + 32) && all_hex(name + 4, n - 4);
	if (strncmp(name, "iqn.", 4) != 0)
		return false;
	for (i = 0; i < n; i++)
		if (!iqn_char_ok(name[i]))
			return false;
	/* iqn.yyyy-mm.naming-authority[:unique] */
	p = name + 4;
	for (i = 0; i < 4; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	if (p[4] != '-' || !isdigit((unsigned char)p[5]) || !isdigit((unsigned char)p[6]))
		return false;
	{
		int month = (p[5] - '0') * 10 + (p[6] - '0');

		if (month < 1 || month > 12)
			return false;
	}
	if (p[7] != '.')
		return false;
	p += 8;
	/* the reversed domain: non-empty, no empty labels, ends at ':' or end */
	if (*p == '\0' || *p == '.' || *p == ':')
		return false;
	for (; *p && *p != ':'; p++)
		if (*p == '.' && (p[1] == '.' || p[1] == '\0' || p[1] == ':'))
			return false;
	return true;
}

bool iscsi_name_ok(const char *name)
{
	char low[ISCSI_NAME_MAX + 1];
	size_t n;

	if (!name)
		return false;
	n = strlen(name);
	if (n > ISCSI_NAME_MAX)
		return false;
	for (size_t i = 0; i <= n; i++)
		low[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	if (strncmp(low, "eui.", 4) == 0 || strncmp(low, "naa.", 4) == 0)
		return strncmp(name, low, 4) == 0 && iscsi_name_valid(name);
	return iscsi_name_valid(low);
}
