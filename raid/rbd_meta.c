/*
 * raid/rbd_meta.c - image metadata of an rbd volume (rbd_int.h): the
 * getter that rbd.c (rtgt.uuid, rtgt.grow), rbd_prov.c (rtgt.thick, the
 * write-out lease) and rbd_snap.c all read through, and the text form of
 * rtgt.uuid that rbd.c and rbd_snap.c (a new image's UUID) share; below
 * them so that none calls another for it.
 *
 * Layer: rbd connection, the bottom of the rbd backend (raid/README.md
 * "Layers"). May call: librbd only; no file of raid/.
 *
 * Built without librbd this file is empty.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "raid/rbd_int.h"

#ifdef RTGT_HAVE_RBD

int rbd_meta_get(rbd_image_t img, const char *key, char *val, size_t cap)
{
	size_t len = cap;
	int rc = rbd_metadata_get(img, key, val, &len);

	if (rc < 0)
		return rc;
	val[cap - 1] = '\0';
	return 0;
}

int rbd_meta_uuid_parse(const char *s, uint8_t u[16])
{
	if (strlen(s) != 32)
		return -EINVAL;
	for (unsigned i = 0; i < 16; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		u[i] = (uint8_t)b;
	}
	return 0;
}

void rbd_meta_uuid_fmt(const uint8_t u[16], char s[33])
{
	for (unsigned i = 0; i < 16; i++)
		snprintf(s + 2 * i, 3, "%02x", u[i]);
}

#endif /* RTGT_HAVE_RBD */
