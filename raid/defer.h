/*
 * raid/defer.h - the deferred call: what raid_defer() (ioctx.c) runs on a
 * ctx, and what stripe locks, cache waiters and the bitmap hand back to
 * whoever waits on them. Its own header so that those can name the type
 * without the I/O context.
 */
#ifndef RTGT_RAID_DEFER_H
#define RTGT_RAID_DEFER_H

typedef void (*raid_defer_fn)(void *arg);

#endif
