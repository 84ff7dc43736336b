/*
 * raid/rbd_meta.c - image metadata of an rbd volume (rbd_int.h): the
 * getter that rbd.c (rtgt.uuid, rtgt.grow) and rbd_prov.c (rtgt.thick, the
 * write-out lease) both read through, below them so that neither calls the
 * other for it.
 *
 * Layer: rbd connection, the bottom of the rbd backend (raid/README.md
 * "Layers"). May call: librbd only; no file of raid/.
 *
 * Built without librbd this file is empty.
 */
#include <stddef.h>

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

#endif /* RTGT_HAVE_RBD */
