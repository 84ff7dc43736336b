/*
 * conf/path.c - creating the directories a configured path lives in.
 *
 * A fresh clone has no var/: the examples name member files and control
 * sockets under it, and a new user's first `make run` must not stop on a
 * missing directory. The daemon calls this only for files it is about to
 * create itself (new members, the control socket), never for members that
 * must already exist, whose absence is the error to report.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: libc only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf/conf.h"

int conf_mkdir_parents(const char *path, mode_t mode)
{
	char *p = strdup(path), *s;
	int rc = 0;

	if (!p)
		return -ENOMEM;
	/* every '/' after the first byte ends one ancestor ("/a/b/f": /a, /a/b) */
	for (s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		struct stat st;

		*s = '\0';
		if (mkdir(p, mode) && errno != EEXIST) {
			rc = -errno;
			goto free_p;
		}
		/* an existing file (not a directory) in the way: say ENOTDIR, not EEXIST */
		if (stat(p, &st)) {
			rc = -errno;
			goto free_p;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = -ENOTDIR;
			goto free_p;
		}
		*s = '/';
	}
free_p:
	free(p);
	return rc;
}
