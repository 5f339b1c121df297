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
	X(rpc_drc_hits, "rpc.drc.hits", "retransmissions answered from the duplicate request cache") \
	X(rpc_drc_drops, "rpc.drc.drops", "retransmissions dropped while the first call was in progress") \
	X(rpc_garbage_args, "rpc.garbage_args", "calls answered GARBAGE_ARGS") \
	X(rpc_rejected, "rpc.rejected", "calls answered with another RPC-level error") \
	X(conn_accepted, "conn.accepted", "client connections accepted") \
	X(conn_refused, "conn.refused", "client connections refused (server.allow, server.secure)") \
	X(conn_accept_errors, "conn.accept_errors", "accept() failures (out of file descriptors)") \
	X(conn_idle_closed, "conn.idle_closed", "connections closed after 6 minutes without a call") \
	X(rpc_oversized, "rpc.oversized", "connections closed for a record above server.max_record")

#define STATS_GAUGES(X) \
	X(conn_open, "conn.open", "client connections open now") \
	X(calls_in_flight, "calls.in_flight", "client calls being processed now")

#endif
