/*
 * cache_config.h — the [cache] keys of nfscached.conf(5), as the cache and
 * the handlers that drive it read them.  The daemon's configuration embeds
 * one (daemon/conf.h) and fills it from its key table; the cache keeps a
 * pointer to it, so keys that a reload may change (conf_reload) are seen
 * at their next use.  Includes nothing, so that every layer may use it.
 */
#ifndef NFSCACHED_CACHE_CONFIG_H
#define NFSCACHED_CACHE_CONFIG_H

#include <stdint.h>

/* cache.write_mode */
enum write_mode { WRITE_MODE_WRITEBACK = 0, WRITE_MODE_WRITETHROUGH = 1 };

/* cache.commit: when a client's COMMIT is answered OK */
enum commit_mode {
	COMMIT_UPSTREAM = 0,            /* once the dirty bytes are committed upstream */
	COMMIT_LOCAL = 1,               /* once they are on stable local storage and in the index */
};

struct cache_config {
	char *dir;                      /* cache directory (index, backing files) */
	uint64_t page_size;             /* bytes */
	int partial_pages;              /* bool: serve partially uptodate pages */
	int write_mode;                 /* enum write_mode */
	uint64_t dirty_expire_ms;       /* age at which dirty data is written back */
	uint64_t max_dirty;             /* bytes of dirty data before writers wait */
	uint64_t readahead;             /* bytes read ahead on sequential access: the
					 * window a sequential stream starts with */
	uint64_t readahead_max;         /* bytes: the window doubles up to this (>= readahead) */
	int commit;                     /* enum commit_mode */
	uint64_t writeback_in_flight_max;   /* bytes of write-back WRITEs in flight, at most */
	uint64_t acregmin, acregmax;    /* seconds attributes of non-directories are trusted */
	uint64_t acdirmin, acdirmax;    /* seconds attributes of directories are trusted */
	int metadata;                   /* bool: the namespace cache (cache/meta.h) is on */
	uint64_t metadata_max;          /* entries the namespace cache holds at most */
	uint64_t max_size;              /* bytes of cached data, 0 = no limit */
	uint64_t brun, bcull, bstop;    /* percent of the file system's blocks free */
	uint64_t frun, fcull, fstop;    /* percent of its files free */
	uint64_t resident_max;          /* objects kept in memory when not in use */
	uint64_t extent_hint;           /* bytes: extent-size hint of new backing files, 0 = none */
};

#endif
