/*
 * stats_list.h — every scalar counter and gauge, declared once
 * (memcached THREAD_STATS_FIELDS): X(field, "exact.name", "help text").
 * Per-procedure call counters are arrays in struct nfsd_stats (stats.h).
 */
#ifndef NFSCACHED_STATS_LIST_H
#define NFSCACHED_STATS_LIST_H

#define STATS_COUNTERS(X) \
	X(upstream_errors, "upstream.errors", "transport failures toward the upstream server") \
	X(upstream_reconnects, "upstream.reconnects", "reconnections to the upstream server") \
	X(upstream_timeouts, "upstream.timeouts", "calls answered NFS3ERR_JUKEBOX after upstream.timeout_ms") \
	X(upstream_jukebox, "upstream.jukebox", "replies NFS3ERR_JUKEBOX from the upstream (passed on to the client, or the write-back tries again later)") \
	X(rpc_drc_hits, "rpc.drc.hits", "retransmissions answered from the duplicate request cache") \
	X(rpc_drc_drops, "rpc.drc.drops", "retransmissions dropped while the first call was in progress") \
	X(rpc_garbage_args, "rpc.garbage_args", "calls answered GARBAGE_ARGS") \
	X(rpc_rejected, "rpc.rejected", "calls answered with another RPC-level error") \
	X(conn_accepted, "conn.accepted", "client connections accepted") \
	X(conn_refused, "conn.refused", "client connections refused (server.allow, server.secure)") \
	X(conn_accept_errors, "conn.accept_errors", "accept() failures (out of file descriptors)") \
	X(conn_idle_closed, "conn.idle_closed", "connections closed after 6 minutes without a call") \
	X(rpc_oversized, "rpc.oversized", "connections closed for a record above server.max_record") \
	X(rpc_auth_tooweak, "rpc.auth_tooweak", "AUTH_NONE calls answered AUTH_TOOWEAK (server.auth_none = refuse)") \
	X(conn_partial_closed, "conn.partial_closed", "connections closed holding the oldest partly received record while all together held more than server.partial_max") \
	X(cache_index_lookups, "cache.index.lookups", "objects not in memory found in the index on demand (made resident)")

/* The READ counters, also kept per export (`stats exports`). */
#define STATS_EXPORT_COUNTERS(X) \
	X(cache_read_hits, "cache.read.hits", "READs answered wholly from wholly valid pages") \
	X(cache_read_partial_hits, "cache.read.partial_hits", "READs answered locally that touched a page not wholly valid") \
	X(cache_read_misses, "cache.read.misses", "READs that needed the upstream") \
	X(cache_read_bytes_local, "cache.read.bytes_local", "bytes answered from the cache") \
	X(cache_read_bytes_upstream, "cache.read.bytes_upstream", "bytes fetched from the upstream")

#define STATS_CACHE_COUNTERS(X) \
	STATS_EXPORT_COUNTERS(X) \
	X(cache_invalidations, "cache.invalidations", "objects whose data was dropped: a change not made through nfscached, nfscachectl invalidate") \
	X(cache_write_bytes, "cache.write.bytes", "bytes of WRITEs accepted into the cache (written locally or through)") \
	X(cache_writeback_bytes, "cache.writeback.bytes", "dirty bytes written back to the upstream") \
	X(cache_writeback_errors, "cache.writeback.errors", "write-backs the upstream refused for good (reported on the next COMMIT; with cache.commit = local kept and retried)") \
	X(cache_writeback_retries, "cache.writeback.retries", "write-backs ended before the upstream took the bytes (no answer, NFS3ERR_JUKEBOX, its verifier changing over and over): the bytes stay dirty for a later one") \
	X(cache_culled_objects, "cache.culled.objects", "objects culled to make room (least recently used first)") \
	X(cache_culled_bytes, "cache.culled.bytes", "valid bytes of the objects culled") \
	X(cache_nospace, "cache.nospace", "ENOSPC/EDQUOT from backing file writes") \
	X(backing_write_calls, "backing.write.calls", "pwrite calls on backing files") \
	X(backing_write_bytes, "backing.write.bytes", "bytes written to backing files") \
	X(backing_read_calls, "backing.read.calls", "pread calls on backing files") \
	X(cache_attr_hits, "cache.attr.hits", "GETATTRs answered from the namespace cache") \
	X(cache_attr_misses, "cache.attr.misses", "GETATTRs forwarded: attributes not cached or past their TTL") \
	X(cache_lookup_hits, "cache.lookup.hits", "LOOKUPs answered from the namespace cache with a handle") \
	X(cache_lookup_negative_hits, "cache.lookup.negative_hits", "LOOKUPs answered NFS3ERR_NOENT from the namespace cache") \
	X(cache_lookup_misses, "cache.lookup.misses", "LOOKUPs forwarded") \
	X(cache_readdir_hits, "cache.readdir.hits", "READDIR and READDIRPLUS calls answered from a cached listing") \
	X(cache_readdir_misses, "cache.readdir.misses", "READDIR and READDIRPLUS calls forwarded") \
	X(cache_access_hits, "cache.access.hits", "ACCESS calls answered from the caller's own cached result") \
	X(cache_access_misses, "cache.access.misses", "ACCESS calls forwarded") \
	X(cache_readlink_hits, "cache.readlink.hits", "READLINKs answered from the namespace cache") \
	X(cache_metadata_evictions, "cache.metadata.evictions", "namespace cache entries evicted under cache.metadata_max") \
	X(cache_metadata_invalidations, "cache.metadata.invalidations", "directories whose names and listing were dropped, or objects whose ACCESS results were, for a change not made through nfscached") \
	X(cache_readahead_bytes, "cache.readahead.bytes", "bytes fetched ahead of READs on sequential access") \
	X(cache_readahead_window_grows, "cache.readahead.window_grows", "times a sequential stream's readahead window doubled (up to cache.readahead_max)") \
	X(backing_sendfile_calls, "backing.sendfile.calls", "sendfile or splice calls sending READ data from backing files to clients (no copy)") \
	X(backing_sendfile_bytes, "backing.sendfile.bytes", "bytes sent to clients by those calls")

#define STATS_GAUGES(X) \
	X(conn_open, "conn.open", "client connections open now") \
	X(conn_partial_bytes, "conn.partial_bytes", "bytes received of records not yet complete, all connections (server.partial_max bounds it)") \
	X(calls_in_flight, "calls.in_flight", "client calls being processed now") \
	X(cache_objects, "cache.objects", "cache objects held (in the index, in memory or not)") \
	X(cache_objects_resident, "cache.objects.resident", "cache objects in memory (cache.resident_max bounds those not in use)") \
	X(cache_bytes, "cache.bytes", "valid bytes held in backing files") \
	X(cache_dirty_bytes, "cache.dirty.bytes", "bytes written locally and not yet committed upstream") \
	X(cache_unwritten_bytes, "cache.unwritten.bytes", "bytes a COMMIT answered locally (cache.commit = local) made stable that are not yet committed upstream") \
	X(cache_unwritten_oldest_s, "cache.unwritten.oldest_s", "age in seconds of the oldest of those bytes; 0 when none") \
	X(cache_metadata_entries, "cache.metadata.entries", "namespace cache entries held: attributes of a handle, or a name in a directory") \
	X(backing_extents_per_file_p99, "backing.extents_per_file_p99", "extents per backing file, 99th percentile of a sample of up to 256 files (FIEMAP) taken at start and every minute; 0 when none")

#endif
