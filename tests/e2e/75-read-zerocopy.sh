#!/bin/bash
# 75-read-zerocopy: READs answered from the page cache with sendfile (the
# reply's header sent first, the data straight from the backing file, then
# the XDR padding), with cache.acregmax = 1.
#   warm 64 MiB    nfs-cp of a 64 MiB file, cold then warm: the warm copy is
#                  the export file, every byte from the cache, no upstream
#                  READ, and most of its bytes sent by sendfile
#                  (backing.sendfile.calls, backing.sendfile.bytes).
#   odd ranges     a file of 5 MiB + 3 bytes, warm: single READs of lengths
#                  that are not multiples of 4 at odd offsets (one reaching
#                  EOF) return the export's bytes, count and eof, each sent
#                  at least partly by sendfile; then 40 READs of 33335
#                  bytes (odd, 33335-aligned) 8 in flight on one connection
#                  (replies queued behind others go out copied) match the
#                  file: every record's padding right, or the next one
#                  would not parse.
#   tshark         those READs captured and decoded: every call answered,
#                  no malformed packet.
#   backed up      200 READs of 65537 bytes pipelined by a client that reads
#                  no reply for a second: the replies behind the full socket
#                  go out copied, each still right, nothing left over.
#   concurrency    6 clients copy the cached 64 MiB file at once: each copy
#                  is the export file, no upstream READ.
#   changes        the file rewritten shorter upstream: after acregmax the
#                  READs return the new bytes and EOF; a backing file cut
#                  short and one with a hole punched behind the daemon's back
#                  are refetched, never sent short or as zeros.
TEST_TIMEOUT=${TEST_TIMEOUT:-280}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the read cache of nfscached"
setup -o cache.acregmax=1

MIB=1048576
CACHE_DIR=$T_TMP/cache

# fetch NAME OUT: nfs-cp of /export/NAME through nfscached into T_TMP/OUT,
# asserted byte-equal to the export file
fetch() {
    rm -f "$T_TMP/$2"
    nfs_cp "$(proxy_url "$1")" "$T_TMP/$2" > "$T_TMP/$2.log" 2>&1
    ok $? "nfs-cp of $1 through nfscached ($2)" || diag "$(tail -n 3 "$T_TMP/$2.log")"
    cmp -s "$T_TMP/$2" "$EXPORT_DIR/$1"
    ok $? "$2: the copy is the export file, byte for byte"
    rm -f "$T_TMP/$2"
}

# backing_of SIZE: the backing file of SIZE bytes (one such object)
backing_of() {
    find "$CACHE_DIR/objects" -type f -size "$1"c 2>/dev/null |
        grep -E '/objects/[0-9a-f]{2}/[0-9a-f]{16}$' | head -n 1
}

# ---- warm 64 MiB --------------------------------------------------------------
BIG=big64
BIG_SIZE=$((64 * MIB))
head -c "$BIG_SIZE" /dev/urandom > "$EXPORT_DIR/$BIG"
fetch "$BIG" cold
snap w0
fetch "$BIG" warm
snap w1
is "$(d w0 w1 upstream.calls.READ)" 0 "warm 64 MiB: no upstream READ"
is "$(d w0 w1 cache.read.bytes_local)" "$BIG_SIZE" "warm 64 MiB: every byte from the cache"
sf_calls=$(d w0 w1 backing.sendfile.calls)
sf_bytes=$(d w0 w1 backing.sendfile.bytes)
num_ok "$sf_calls" -gt 0 "warm 64 MiB: sendfile was called ($sf_calls calls)"
num_ok "$sf_bytes" -ge $((BIG_SIZE / 2)) \
    "warm 64 MiB: at least half of the bytes sent by sendfile ($sf_bytes)"
num_ok "$sf_bytes" -le "$BIG_SIZE" "warm 64 MiB: no byte sent twice"

# ---- odd ranges, under capture ----------------------------------------------------
ODD=odd
ODD_SIZE=$((5 * MIB + 3))
head -c "$ODD_SIZE" /dev/urandom > "$EXPORT_DIR/$ODD"
fetch "$ODD" odd-cold
OFH=$(fh_of "$ODD")
[ -n "$OFH" ] || { ok 1 "LOOKUP of $ODD through nfscached"; done_testing; }

CAP=$T_TMP/reads.pcapng
have_tshark=0
if command -v tshark >/dev/null; then
    tshark -q -i lo -B 64 -f "tcp port $PORT" -w "$CAP" </dev/null >/dev/null \
        2>"$T_TMP/tshark.err" &
    TSHARK_PID=$!
    track "$TSHARK_PID"
    for ((i = 0; i < 100; i++)); do
        grep -q 'Capturing on' "$T_TMP/tshark.err" && break
        sleep 0.1
    done
    grep -q 'Capturing on' "$T_TMP/tshark.err" && have_tshark=1
    sleep 0.3
fi
[ "$have_tshark" = 1 ] || [ "${NFSCACHED_REQUIRE_E2E:-0}" != 1 ]
ok $? "tshark captures on lo (port $PORT)" || diag "$(cat "$T_TMP/tshark.err" 2>/dev/null)"

# offset count: lengths not multiples of 4 (padding 1, 2, 3), odd offsets,
# one past EOF (cut at it), one of 1 MiB - 1
for range in "7 32771" "1 100001" "12345 65538" "4099 1048575" \
             "$((ODD_SIZE - 40003)) 40003" "$((ODD_SIZE - 50001)) 60000"; do
    set -- $range
    want_count=$(( $1 + $2 > ODD_SIZE ? ODD_SIZE - $1 : $2 ))
    want_eof=$( [ $(( $1 + want_count )) -ge "$ODD_SIZE" ] && echo true || echo false )
    snap r0
    rread odd "$OFH" "$1" "$2"
    snap r1
    is "$(rv nfs_status) $(rv count) $(rv eof)" "NFS3_OK $want_count $want_eof" \
        "READ $2 at $1: $want_count bytes, eof $want_eof"
    is "$(md5 "$T_TMP/odd.data")" "$(range_md5 "$EXPORT_DIR/$ODD" "$1" "$want_count")" \
        "READ $2 at $1: the export's bytes"
    is "$(d r0 r1 upstream.calls.READ) $(d r0 r1 cache.read.bytes_local)" "0 $want_count" \
        "READ $2 at $1: from the cache, no upstream READ"
    num_ok "$(d r0 r1 backing.sendfile.bytes)" -gt 0 \
        "READ $2 at $1: sent by sendfile ($(d r0 r1 backing.sendfile.bytes) of $want_count bytes)"
done

snap q0
rpc w1 "$OFH" --model "$EXPORT_DIR/$ODD" --writes 0 --reads 40 --block 33335 --depth 8 \
    --no-commit > "$T_TMP/w1.out" 2>&1
snap q1
is "$(val "$T_TMP/w1.out" reads) $(val "$T_TMP/w1.out" read_errors) $(val "$T_TMP/w1.out" mismatches)" \
    "40 0 0" "40 READs of 33335 bytes, 8 in flight on one connection: all match the file" ||
    diag "$(tail -n 5 "$T_TMP/w1.out")"
is "$(d q0 q1 upstream.calls.READ)" 0 "the pipelined READs: no upstream READ"
num_ok "$(d q0 q1 backing.sendfile.calls)" -gt 0 "the pipelined READs: sendfile was used"
diag "pipelined READs: $(d q0 q1 backing.sendfile.bytes) bytes by sendfile," \
     "$(d q0 q1 backing.read.calls) replies or rests copied"

if [ "$have_tshark" = 1 ]; then
    sleep 0.5
    kill -INT "$TSHARK_PID"
    { wait "$TSHARK_PID"; } 2>/dev/null
    # segments of one connection sent from two CPUs (the daemon's splice,
    # the ACK path pushing what was queued) may reach the capture out of
    # order on lo: reassembled in sequence order, as the client reads them
    DECODE=(-d "tcp.port==$PORT,rpc" -o tcp.reassemble_out_of_order:TRUE)
    count() { tshark -r "$CAP" "${DECODE[@]}" -Y "$1" 2>/dev/null | wc -l; }
    types=$(tshark -r "$CAP" "${DECODE[@]}" -Y nfs -T fields -e rpc.msgtyp 2>/dev/null |
            tr ',' '\n')
    calls=$(grep -cx 0 <<<"$types") replies=$(grep -cx 1 <<<"$types")
    num_ok "$calls" -ge 46 "tshark: the 46 READ calls are decoded"
    is "$replies" "$calls" "tshark: every RPC call ($calls) has a reply"
    bad=$(count '_ws.malformed || _ws.expert.severity >= "error"')
    is "$bad" 0 "tshark: no malformed packet, no error-level expert info" ||
        diag "$(tshark -r "$CAP" "${DECODE[@]}" -Y '_ws.malformed || _ws.expert.severity >= "error"' \
                2>/dev/null | head -n 10)"
    if [ "$T_FAILED" != 0 ]; then
        cp "$CAP" /tmp/nfscached-75-read-zerocopy.pcapng &&
            diag "capture kept: /tmp/nfscached-75-read-zerocopy.pcapng"
    fi
fi

# a client that pipelines 200 READs of 65537 bytes and reads no reply for
# a second: the socket fills, the replies behind go to the queue copied,
# and the stream still parses reply by reply
snap b0
timeout -k 5 90 python3 - "$top_srcdir/tests" "$PORT" "$OFH" "$EXPORT_DIR/$ODD" \
    > "$T_TMP/backed.out" 2>&1 <<'PY'
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
model = open(path, "rb").read()
n, count = 200, 65537
offsets = [(i * 104729 + 3) % (len(model) - count) for i in range(n)]
c = rpc.Conn("127.0.0.1", port, timeout=30)
want, recs = {}, []
for off in offsets:
    xid, rec = c.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_READ,
                       rpc.read_args(fh, off, count))
    want[xid] = off
    recs.append(rec)
stream = b"".join(recs)
def sender():
    view, sent = memoryview(stream), 0
    while sent < len(stream):
        sent += c.sock.send(view[sent:])
t = threading.Thread(target=sender, daemon=True)
t.start()
time.sleep(1)
right = 0
for _ in range(n):
    rep = c.recv_reply(timeout=30)
    if rep.ok() and rpc.nfs_status(rep.body) == "NFS3_OK":
        u = rpc.Unpacker(rep.body)
        u.u32()
        rpc.skip_post_op_attr(u)
        got, eof = u.u32(), u.u32()
        data = u.opaque(count)
        off = want.pop(rep.xid, None)
        right += off is not None and got == count and data == model[off:off + count] \
            and u.remaining() == 0
t.join(10)
print("replies_right:", right)
print("unanswered:", len(want))
PY
rc=$?
snap b1
is "$rc $(val "$T_TMP/backed.out" replies_right) $(val "$T_TMP/backed.out" unanswered)" "0 200 0" \
    "200 READs of 65537 bytes pipelined, replies read late: each the file's bytes, nothing left over" ||
    diag "$(tail -n 5 "$T_TMP/backed.out")"
num_ok "$(d b0 b1 backing.read.calls)" -gt 0 \
    "replies behind a full socket went out copied ($(d b0 b1 backing.read.calls) preads)"
num_ok "$(d b0 b1 backing.sendfile.calls)" -gt 0 "and the others by sendfile"
is "$(d b0 b1 upstream.calls.READ)" 0 "the backed-up READs: no upstream READ"

# ---- many clients at once -----------------------------------------------------------
snap c0
pids=()
for i in 1 2 3 4 5 6; do
    rm -f "$T_TMP/c$i"
    nfs_cp "$(proxy_url "$BIG")" "$T_TMP/c$i" > "$T_TMP/c$i.log" 2>&1 &
    pids+=($!)
    track "$!"
done
for i in 1 2 3 4 5 6; do
    wait "${pids[$((i - 1))]}"
    ok $? "client $i of 6: nfs-cp at once with the others" || diag "$(tail -n 2 "$T_TMP/c$i.log")"
    cmp -s "$T_TMP/c$i" "$EXPORT_DIR/$BIG"
    ok $? "client $i of 6: the copy is the export file"
    rm -f "$T_TMP/c$i"
done
snap c1
is "$(d c0 c1 upstream.calls.READ)" 0 "6 clients at once: no upstream READ"
is "$(d c0 c1 cache.read.bytes_local)" $((6 * BIG_SIZE)) "6 clients at once: every byte from the cache"
num_ok "$(d c0 c1 backing.sendfile.bytes)" -gt 0 "6 clients at once: sendfile was used"

# ---- changes upstream and behind the daemon's back ------------------------------------
# the odd file rewritten shorter, with new bytes
NEW_SIZE=$((3 * MIB + 1))
head -c "$NEW_SIZE" /dev/urandom > "$T_TMP/new"
cat "$T_TMP/new" > "$EXPORT_DIR/$ODD"
truncate -s "$NEW_SIZE" "$EXPORT_DIR/$ODD"
sleep 2   # past cache.acregmax
for range in "1 100001" "$((NEW_SIZE - 70001)) 1048576" "$((4 * MIB)) 65536"; do
    set -- $range
    want_count=$(( $1 >= NEW_SIZE ? 0 : ($1 + $2 > NEW_SIZE ? NEW_SIZE - $1 : $2) ))
    rread chg "$OFH" "$1" "$2"
    is "$(rv nfs_status) $(rv count) $(rv eof)" \
       "NFS3_OK $want_count $( [ $(( $1 + want_count )) -ge "$NEW_SIZE" ] && echo true || echo false )" \
       "rewritten upstream: READ $2 at $1 gives $want_count bytes, eof right"
    is "$(md5 "$T_TMP/chg.data")" "$(range_md5 "$T_TMP/new" "$1" "$want_count")" \
        "rewritten upstream: READ $2 at $1 returns the new bytes"
done

# a backing file cut short behind the daemon's back
TAMPER=tamper
head -c $((4 * MIB)) /dev/urandom > "$EXPORT_DIR/$TAMPER"
fetch "$TAMPER" tamper-cold
TFH=$(fh_of "$TAMPER")
B=$(backing_of $((4 * MIB)))
ok $([ -n "$B" ]; echo $?) "the backing file of the 4 MiB file exists"
truncate -s $((2 * MIB)) "$B"
snap t0
rread cut "$TFH" $((3 * MIB - 5)) 65541
snap t1
is "$(rv nfs_status) $(rv count)" "NFS3_OK 65541" "backing file cut short: READ 65541 at 3 MiB - 5 answered"
is "$(md5 "$T_TMP/cut.data")" "$(range_md5 "$EXPORT_DIR/$TAMPER" $((3 * MIB - 5)) 65541)" \
    "backing file cut short: the export's bytes"
num_ok "$(d t0 t1 upstream.calls.READ)" -ge 1 "backing file cut short: refetched from the upstream"
num_ok "$(d t0 t1 cache.invalidations)" -ge 1 "backing file cut short: the object's data dropped"

# a hole punched in it
rread warmup "$TFH" 0 $((1 * MIB)) >/dev/null
rread warmup "$TFH" 0 $((1 * MIB)) >/dev/null
fallocate -p -o $((256 * 1024)) -l 65536 "$B"
snap h0
rread holed "$TFH" 99999 300001
snap h1
is "$(rv nfs_status) $(rv count)" "NFS3_OK 300001" "hole punched: READ 300001 at 99999 answered"
is "$(md5 "$T_TMP/holed.data")" "$(range_md5 "$EXPORT_DIR/$TAMPER" 99999 300001)" \
    "hole punched: the export's bytes, not zeros"
num_ok "$(d h0 h1 upstream.calls.READ)" -ge 1 "hole punched: refetched from the upstream"

no_sanitizer_report "$T_TMP/nfscached.log"
ok $? "no sanitizer report in the daemon's log"
done_testing
