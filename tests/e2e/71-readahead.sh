#!/bin/bash
# 71-readahead: adaptive readahead per sequential stream, with
# cache.readahead = 1M and cache.readahead_max = 8M (log.level debug).
#   sequential   a file of 64 MiB and 3000 bytes (a partial last page)
#                copied through nfscached with nfs-cp: the copy is the
#                file; READs past the first two are answered from
#                readahead (few misses); the stream's window doubles
#                1M -> 2M -> 4M -> 8M (cache.readahead.window_grows 3, the
#                debug line of the 8 MiB window) and stops there; each byte
#                is fetched once, most of them ahead of the READs
#                (cache.readahead.bytes); a second copy is all hits, with no
#                upstream READ.
#   in flight    a cold 64 MiB file read in order by READs of 1 MiB with 16
#                of them in flight on one connection (tests/rpc.py), as
#                `nfsbench -w seqread -j 16`: every READ answers the file's
#                bytes, and the client's own READs and the readahead never
#                fetch a byte twice: cache.read.bytes_upstream is at least
#                the file and at most one fetch (1 MiB) more, in at most 65
#                upstream READs.
#   random       200 READs of 4 KiB at distinct random pages of a 16 MiB
#                file (never one where another ended: no READ is
#                sequential), tests/rpc.py: each answers the file's bytes,
#                and only their pages are fetched: cache.read.bytes_upstream
#                is 200 x 4 KiB, cache.readahead.bytes and window_grows 0.
#   two streams  a 32 MiB file read by two interleaved sequential streams
#                of 256 KiB READs, one from 0 and one from 16 MiB, on one
#                connection: both halves right, each stream's window grows
#                to 8M (window_grows 6), each byte fetched once, misses far
#                below the READ count.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the readahead of nfscached"
needs_own_upstream
setup -o cache.readahead=1M -o cache.readahead_max=8M -o log.level=debug

MIB=1048576

# ---- sequential ------------------------------------------------------------
SIZE=$((64 * MIB + 3000))   # a partial last page
head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/seq64"

# copy OUT: nfs-cp of seq64 through nfscached to T_TMP/OUT; sets T_MS
copy() {
    local t0
    rm -f "$T_TMP/$1"
    t0=$(now_ms)
    nfs_cp "$(proxy_url seq64)" "$T_TMP/$1" > "$T_TMP/$1.log" 2>&1
    ok $? "nfs-cp of the 64 MiB file through nfscached ($1)" || diag "$(tail -n 3 "$T_TMP/$1.log")"
    T_MS=$(( $(now_ms) - t0 ))
    cmp -s "$T_TMP/$1" "$EXPORT_DIR/seq64"
    ok $? "$1: the copy is the export file, byte for byte"
}

snap s0
copy cold
t_cold=$T_MS
snap s1
reads=$(d s0 s1 nfs3.calls.READ)
misses=$(d s0 s1 cache.read.misses)
num_ok "$reads" -ge 64 "cold: the client sent READs ($reads)"
num_ok "$misses" -le 4 "cold: at most 4 of them missed ($misses): the others were read ahead"
is "$(d s0 s1 cache.read.hits)" $((reads - misses)) "cold: the others were hits"
is "$(d s0 s1 cache.read.bytes_upstream)" "$SIZE" "cold: each byte fetched from the upstream once"
ahead=$(d s0 s1 cache.readahead.bytes)
num_ok "$ahead" -ge $((SIZE - 4 * MIB)) "cold: cache.readahead.bytes $ahead: nearly all fetched ahead"
is "$(d s0 s1 cache.readahead.window_grows)" 3 \
    "cold: the window doubled three times (1M -> 8M), then stayed at cache.readahead_max"
grep -q 'read: object [0-9]*: readahead window 8388608 bytes' "$T_TMP/nfscached.log"
ok $? "cold: the debug log shows the 8 MiB window"
is "$(grep -c 'readahead window [0-9]* bytes' "$T_TMP/nfscached.log")" 3 \
    "cold: ... and three window changes in all"

copy warm
t_warm=$T_MS
snap s2
is "$(d s1 s2 upstream.calls.READ)" 0 "warm: no upstream READ"
is "$(d s1 s2 cache.read.misses)" 0 "warm: no miss"
is "$(d s1 s2 cache.read.hits)" "$(d s1 s2 nfs3.calls.READ)" "warm: every READ a hit"
is "$(d s1 s2 cache.readahead.bytes)" 0 "warm: nothing fetched ahead"
diag "64 MiB nfs-cp: cold ${t_cold} ms, warm ${t_warm} ms (loopback; not a benchmark)"

# ---- in flight ---------------------------------------------------------------
PSIZE=$((64 * MIB))
head -c "$PSIZE" /dev/urandom > "$EXPORT_DIR/par64"
FH=$(fh_of par64)
[ -n "$FH" ] || { ok 1 "LOOKUP of par64 through nfscached"; done_testing; }
snap p0
timeout -k 5 180 python3 - "$top_srcdir/tests" "$PORT" "$FH" "$EXPORT_DIR/par64" \
    > "$T_TMP/par.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
data = open(path, "rb").read()
step, depth = 1 << 20, 16
c = rpc.Conn("127.0.0.1", port, timeout=60)
offsets = list(range(0, len(data), step))
pending = {}          # xid -> offset
got = {}
errors = 0
def send(off):
    xid, rec = c.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_READ, rpc.read_args(fh, off, step))
    c.send_raw(rec)
    pending[xid] = off
nxt = 0
while nxt < len(offsets) and len(pending) < depth:
    send(offsets[nxt]); nxt += 1
while pending:
    rep = c.recv_reply()
    off = pending.pop(rep.xid)
    st, d, eof = rpc.read3res(rep.body) if rep.ok() else (rep.summary(), b"", False)
    errors += st != "NFS3_OK"
    got[off] = d or b""
    if nxt < len(offsets):
        send(offsets[nxt]); nxt += 1
print("reads:", len(offsets))
print("errors:", errors)
print("right:", "yes" if b"".join(got[o] for o in offsets) == data else "no")
PY
snap p1
pv() { val "$T_TMP/par.out" "$1"; }
is "$(pv reads) $(pv errors)" "64 0" "in flight: 64 READs of 1 MiB, 16 at a time, no error" ||
    diag "$(tail -n 5 "$T_TMP/par.out")"
is "$(pv right)" yes "in flight: the READs answered the file's bytes"
up=$(d p0 p1 cache.read.bytes_upstream)
num_ok "$up" -ge "$PSIZE" "in flight: cache.read.bytes_upstream $up: the whole file came from the upstream"
num_ok "$up" -le $((PSIZE + MIB)) \
    "in flight: ... at most one fetch more: the READs and the readahead fetched no byte twice"
num_ok "$(d p0 p1 upstream.calls.READ)" -le 65 "in flight: at most 65 upstream READs of it"
diag "in flight: misses $(d p0 p1 cache.read.misses), hits $(d p0 p1 cache.read.hits), read ahead $(d p0 p1 cache.readahead.bytes) bytes"

# ---- random ----------------------------------------------------------------
RSIZE=$((16 * MIB))
head -c "$RSIZE" /dev/urandom > "$EXPORT_DIR/rand16"
FH=$(fh_of rand16)
[ -n "$FH" ] || { ok 1 "LOOKUP of rand16 through nfscached"; done_testing; }
snap r0
timeout -k 5 120 python3 - "$top_srcdir/tests" "$PORT" "$FH" "$EXPORT_DIR/rand16" \
    > "$T_TMP/rand.out" 2>&1 <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
data = open(path, "rb").read()
# even pages only: no READ starts where another ended
pages = random.sample(range(0, len(data) // 4096, 2), 200)
c = rpc.Conn("127.0.0.1", port, timeout=20)
right = 0
for p in pages:
    rep, st = c.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, p * 4096, 4096))
    st, got, eof = rpc.read3res(rep.body) if rep.ok() else (rep.summary(), b"", False)
    right += st == "NFS3_OK" and got == data[p * 4096:(p + 1) * 4096]
print("reads:", len(pages))
print("right:", right)
PY
snap r1
is "$(val "$T_TMP/rand.out" reads) $(val "$T_TMP/rand.out" right)" "200 200" \
    "random: 200 READs of 4 KiB, each the file's bytes" || diag "$(tail -n 5 "$T_TMP/rand.out")"
is "$(d r0 r1 cache.read.misses)" 200 "random: each READ a miss"
is "$(d r0 r1 cache.read.bytes_upstream)" $((200 * 4096)) \
    "random: cache.read.bytes_upstream is 200 pages x 4 KiB: their pages only"
is "$(d r0 r1 cache.readahead.bytes) $(d r0 r1 cache.readahead.window_grows)" "0 0" \
    "random: no readahead (cache.readahead.bytes 0, window_grows 0)"

# ---- two streams -----------------------------------------------------------
TSIZE=$((32 * MIB))
head -c "$TSIZE" /dev/urandom > "$EXPORT_DIR/two32"
FH=$(fh_of two32)
[ -n "$FH" ] || { ok 1 "LOOKUP of two32 through nfscached"; done_testing; }
snap t0
timeout -k 5 120 python3 - "$top_srcdir/tests" "$PORT" "$FH" "$EXPORT_DIR/two32" \
    > "$T_TMP/two.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
data = open(path, "rb").read()
half, step = len(data) // 2, 256 * 1024
c = rpc.Conn("127.0.0.1", port, timeout=20)
got = {0: [], half: []}
errors = 0
for off in range(0, half, step):
    for base in (0, half):        # the two streams, READ after READ
        rep, st = c.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, base + off, step))
        st, d, eof = rpc.read3res(rep.body) if rep.ok() else (rep.summary(), b"", False)
        errors += st != "NFS3_OK"
        got[base].append(d)
print("reads:", 2 * (half // step))
print("errors:", errors)
print("first_right:", "yes" if b"".join(got[0]) == data[:half] else "no")
print("second_right:", "yes" if b"".join(got[half]) == data[half:] else "no")
PY
snap t1
tv() { val "$T_TMP/two.out" "$1"; }
is "$(tv reads) $(tv errors)" "128 0" "two streams: 128 READs of 256 KiB, no error" ||
    diag "$(tail -n 5 "$T_TMP/two.out")"
is "$(tv first_right) $(tv second_right)" "yes yes" "two streams: both halves are the file's bytes"
is "$(d t0 t1 cache.read.bytes_upstream)" "$TSIZE" "two streams: each byte fetched once"
num_ok "$(d t0 t1 cache.readahead.bytes)" -ge $((TSIZE - 4 * MIB)) \
    "two streams: nearly all of it fetched ahead"
is "$(d t0 t1 cache.readahead.window_grows)" 6 \
    "two streams: each stream's window grew to 8M (3 doublings each)"
num_ok "$(d t0 t1 cache.read.misses)" -le 8 "two streams: at most 8 of the 128 READs missed"

stop_nfscached
ok $? "nfscached exits cleanly"
no_sanitizer_report "$T_TMP/nfscached.log"
ok $? "no sanitizer report in the log"
done_testing
