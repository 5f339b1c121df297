#!/bin/bash
# 12-backpressure: a client that pipelines 2000 READs of 1 MiB and does not
# read the replies.  The daemon must stop reading that connection once its
# output queue is backed up or too many calls are in flight (it does not
# buffer 2 GiB of replies), serve other clients meanwhile, and answer every
# call once the client reads.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon's backpressure"
setup

head -c 1M /dev/urandom > "$EXPORT_DIR/bp.bin"
N=2000

timeout -k 5 90 python3 - "$top_srcdir/tests" "$PORT" "$N" "$CTL" "$NFSCACHECTL" > "$T_TMP/bp.out" 2>&1 <<'PY'
import hashlib, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[1])
import rpc
port, n, ctl, ctlbin = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]

def stat(name):
    out = subprocess.run([ctlbin, "-s", ctl, "stats"], capture_output=True, text=True).stdout
    return int(dict(line.split() for line in out.splitlines())[name])

c = rpc.Conn("127.0.0.1", port, timeout=30)
st, root = c.mnt("/export")
rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, "bp.bin"))
fh = bytes.fromhex(rpc.decode_lookup(rep.body)["fh"])
reads_before = stat("nfs3.calls.READ")

xids, recs = [], []
for i in range(n):
    xid, rec = c.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_READ, rpc.read_args(fh, 0, 1 << 20))
    xids.append(xid)
    recs.append(rec)
stream = b"".join(recs)

# a sender thread writes every call; nobody reads yet
sent = [0]
def sender():
    view = memoryview(stream)
    while sent[0] < len(stream):
        sent[0] += c.sock.send(view[sent[0]:])
t = threading.Thread(target=sender, daemon=True)
t.start()
time.sleep(2)
print("calls_received_while_blocked:", stat("nfs3.calls.READ") - reads_before)

# another client is served meanwhile
d = rpc.Conn("127.0.0.1", port, timeout=10)
print("other_client_null:", 1 if d.null().ok() else 0)
d.close()

# now read every reply while the sender finishes
got_ok, seen, digests = 0, set(), set()
for _ in xids:
    rep = c.recv_reply(timeout=30)
    seen.add(rep.xid)
    if rep.ok() and rpc.nfs_status(rep.body) == "NFS3_OK":
        u = rpc.Unpacker(rep.body)
        u.u32()
        rpc.skip_post_op_attr(u)
        count, eof = u.u32(), u.u32()
        data = u.opaque(1 << 20)
        got_ok += count == len(data) == 1 << 20
        digests.add(hashlib.md5(data).hexdigest())
t.join(10)
print("replies_ok:", got_ok)
print("every_xid_once:", int(seen == set(xids)))
print("distinct_data:", len(digests))
print("data_md5:", digests.pop() if len(digests) == 1 else "-")
PY
rc=$?
diag "$(cat "$T_TMP/bp.out")"
is "$rc" 0 "the pipelining client ran to the end"
num_ok "$(val "$T_TMP/bp.out" calls_received_while_blocked)" -le 300 \
    "the daemon stopped reading: at most ~256 calls in flight while no reply is read"
is "$(val "$T_TMP/bp.out" other_client_null)" 1 "another client is served meanwhile"
is "$(val "$T_TMP/bp.out" replies_ok)" "$N" "every READ is answered NFS3_OK once the client reads"
is "$(val "$T_TMP/bp.out" every_xid_once)" 1 "each call answered once (by XID)"
is "$(val "$T_TMP/bp.out" distinct_data)" 1 "all with the same 1 MiB of data"
is "$(val "$T_TMP/bp.out" data_md5)" "$(md5 "$EXPORT_DIR/bp.bin")" "which is the file's"
stat_ok nfs3.calls.READ -eq "$N"
stat_ok calls.in_flight -eq 0
done_testing
