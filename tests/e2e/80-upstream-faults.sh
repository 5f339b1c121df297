#!/bin/bash
# 80-upstream-faults: an upstream that answers NFS3ERR_JUKEBOX or loses
# replies.  tests/fault-relay.py sits between nfscached and ganesha's NFS
# port (MOUNT goes straight to ganesha) and answers chosen calls JUKEBOX
# itself, or passes them on and drops the replies; upstream.timeout_ms =
# 2000.  Never NFS3ERR_IO; no byte of a failed call becomes valid in the
# cache:
#   a) the first READ of a file (forwarded as it is) answered JUKEBOX by the
#      upstream: the client gets JUKEBOX, the next READ goes upstream
#      (upstream.calls.READ, cache.read.misses) and gets the file's bytes,
#      the one after is a hit
#   b) a READ of a cached file's uncached range (a fetch) answered JUKEBOX:
#      JUKEBOX, and that range is fetched again by the next READ (a miss)
#   c) the same with the fetch's reply dropped: JUKEBOX after about
#      upstream.timeout_ms, counted in upstream.timeouts; fetched again
#   d) a forwarded GETATTR and a forwarded FILE_SYNC WRITE answered JUKEBOX:
#      passed on; the WRITE's bytes are not cached (cache.write.bytes) and a
#      READ of them gets the file's old bytes
#   e) write-back: an UNSTABLE WRITE taken locally, then COMMIT while the
#      upstream answers the write-back's WRITE JUKEBOX, then drops the reply
#      to the next one, then answers its COMMIT JUKEBOX: each COMMIT answered
#      JUKEBOX (the client asks again), the bytes kept dirty and sent again
#      (cache.writeback.retries), upstream.timeouts for the dropped reply;
#      then a COMMIT answers OK with the WRITE's verifier, the export holds
#      the bytes, no write-back error and nothing dirty
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "nfscached in front of a faulty upstream"
needs_own_upstream

start_upstream 2>"$T_TMP/up.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/up.err")"
pick_pair RELAY_PORT || fail_or_skip "no free port for the relay"
RELAY_CTL=$T_TMP/relay.sock
python3 "$top_srcdir/tests/fault-relay.py" relay "$RELAY_PORT" "$UP_HOST:$UP_NFS_PORT" \
    "$RELAY_CTL" "$T_TMP/relay.log" 2>"$T_TMP/relay.err" &
RELAY_PID=$!
track "$RELAY_PID"
for _ in $(seq 50); do [ -S "$RELAY_CTL" ] && break; sleep 0.1; done
[ -S "$RELAY_CTL" ] || fail_or_skip "fault-relay.py did not start: $(cat "$T_TMP/relay.err")"
NFSCACHED_UPSTREAM_URL="nfs://$UP_HOST/export?nfsport=$RELAY_PORT&mountport=$UP_MNT_PORT"
start_nfscached -o upstream.timeout_ms=2000 -o cache.dirty_expire_ms=60000 2>"$T_TMP/start.err" ||
    fail_or_skip "nfscached: $(cat "$T_TMP/start.err")"

head -c $((256 * 1024)) /dev/urandom > "$EXPORT_DIR/cold"
head -c $((256 * 1024)) /dev/urandom > "$EXPORT_DIR/warm"
head -c $((64 * 1024)) /dev/urandom > "$EXPORT_DIR/sync"
head -c $((64 * 1024)) /dev/urandom > "$EXPORT_DIR/wb"

timeout -k 5 90 python3 - "$top_srcdir/tests" "$PORT" "$NFSCACHECTL" "$CTL" "$RELAY_CTL" \
    "$EXPORT_DIR" > "$T_TMP/faults.out" 2>&1 <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc

port, ctlbin, ctlsock, relay, export = (int(sys.argv[2]), sys.argv[3], sys.argv[4],
                                        sys.argv[5], sys.argv[6])
chk = nsrpc.Checks()
st = nsrpc.Stats(ctlbin, ctlsock)
P = nsrpc.Client(port, timeout=20)
root = P.root()
KIB = 1024


def fault(*words):
    out = subprocess.run([sys.executable, os.path.join(sys.argv[1], "fault-relay.py"), "ctl",
                          relay] + list(words), capture_output=True, text=True, timeout=10)
    if out.stdout.strip() != "ok":
        chk.diag("relay %s: %s %s" % (" ".join(words), out.stdout.strip(), out.stderr.strip()))


def content(name, off, n):
    with open(os.path.join(export, name), "rb") as f:
        f.seek(off)
        return f.read(n).hex()


def fh(name):
    return P.lookup(root, name)["fh"]


def read(f, off, n):
    t0 = time.monotonic()
    r = P.read(f, off, n)
    r["ms"] = int((time.monotonic() - t0) * 1000)
    return r


def timed(desc, fn):
    """fn() between two snapshots: (result, s0, s1)."""
    s0 = st.snap()
    r = fn()
    return r, s0, st.snap()


# a) the first READ of a file answered JUKEBOX
cold = fh("cold")
fault("jukebox", "READ", "1")
r, s0, s1 = timed("a", lambda: read(cold, 0, 64 * KIB))
chk.is_(r["nfs_status"], "NFS3ERR_JUKEBOX", "first READ answered JUKEBOX upstream: JUKEBOX")
r, s1, s2 = timed("a", lambda: read(cold, 0, 64 * KIB))
chk.is_(r["nfs_status"], "NFS3_OK", "the READ again: OK")
chk.is_(r.get("data_hex"), content("cold", 0, 64 * KIB), "... the file's bytes")
chk.is_(nsrpc.delta(s1, s2, "upstream.calls.READ"), 1, "... from the upstream")
chk.is_(nsrpc.delta(s1, s2, "cache.read.misses"), 1, "... a miss")
r, s2, s3 = timed("a", lambda: read(cold, 0, 64 * KIB))
chk.is_(r.get("data_hex"), content("cold", 0, 64 * KIB), "a third READ: the file's bytes")
chk.is_(nsrpc.delta(s2, s3, "cache.read.hits"), 1, "... from the cache")

# b) a fetch of a cached file answered JUKEBOX
warm = fh("warm")
r = read(warm, 0, 64 * KIB)
chk.is_(r["nfs_status"], "NFS3_OK", "a cached file: its first 64 KiB read")
fault("jukebox", "READ", "1")
r, s0, s1 = timed("b", lambda: read(warm, 128 * KIB, 64 * KIB))
chk.is_(r["nfs_status"], "NFS3ERR_JUKEBOX", "READ of an uncached range answered JUKEBOX upstream: JUKEBOX")
chk.is_(nsrpc.delta(s0, s1, "upstream.calls.READ"), 1, "... one READ sent for it")
r, s1, s2 = timed("b", lambda: read(warm, 128 * KIB, 64 * KIB))
chk.is_(r.get("data_hex"), content("warm", 128 * KIB, 64 * KIB), "the READ again: the file's bytes")
chk.is_(nsrpc.delta(s1, s2, "upstream.calls.READ"), 1, "... fetched again: nothing of it was kept")
chk.is_(nsrpc.delta(s1, s2, "cache.read.misses"), 1, "... a miss")

# c) a fetch whose reply is lost
fault("drop", "READ", "1")
r, s0, s1 = timed("c", lambda: read(warm, 192 * KIB, 64 * KIB))
chk.is_(r["nfs_status"], "NFS3ERR_JUKEBOX", "READ whose upstream reply is lost: JUKEBOX")
chk.num(r["ms"], "-ge", 1900, "... after upstream.timeout_ms (%d ms)" % r["ms"])
chk.num(r["ms"], "-le", 6000, "... not long after")
chk.is_(nsrpc.delta(s0, s1, "upstream.timeouts"), 1, "... counted in upstream.timeouts")
r, s1, s2 = timed("c", lambda: read(warm, 192 * KIB, 64 * KIB))
chk.is_(r.get("data_hex"), content("warm", 192 * KIB, 64 * KIB), "the READ again: the file's bytes")
chk.is_(nsrpc.delta(s1, s2, "upstream.calls.READ"), 1, "... fetched again")
chk.is_(nsrpc.delta(s1, s2, "cache.read.misses"), 1, "... a miss")
r, s2, s3 = timed("c", lambda: read(warm, 0, 256 * KIB))
chk.is_(r.get("data_hex"), content("warm", 0, 256 * KIB), "the whole file: its bytes")

# d) forwarded calls answered JUKEBOX: passed on
sync = fh("sync")
fault("jukebox", "GETATTR", "1")
chk.is_(P.getattr(sync)["nfs_status"], "NFS3ERR_JUKEBOX", "GETATTR answered JUKEBOX upstream: JUKEBOX")
chk.is_(P.getattr(sync)["nfs_status"], "NFS3_OK", "... and OK once the upstream answers")
old = content("sync", 0, 4 * KIB)
r = read(sync, 0, 64 * KIB)
fault("jukebox", "WRITE", "1")
r, s0, s1 = timed("d", lambda: P.write(sync, 0, b"J" * 4 * KIB, stable=rpc.FILE_SYNC))
chk.is_(r["nfs_status"], "NFS3ERR_JUKEBOX", "FILE_SYNC WRITE answered JUKEBOX upstream: JUKEBOX")
chk.is_(nsrpc.delta(s0, s1, "cache.write.bytes"), 0, "... none of its bytes cached")
r = read(sync, 0, 4 * KIB)
chk.is_(r.get("data_hex"), old, "a READ of them: the file's old bytes")

# e) write-back against an upstream that says JUKEBOX or loses a reply
wb = fh("wb")
read(wb, 0, 64 * KIB)
new = os.urandom(16 * KIB)
s0 = st.snap()
w = P.write(wb, 8 * KIB, new, stable=rpc.UNSTABLE)
chk.is_(w["nfs_status"] + " " + str(w.get("committed")), "NFS3_OK UNSTABLE", "UNSTABLE WRITE taken")
s1 = st.snap()
chk.is_(nsrpc.delta(s0, s1, "upstream.calls.WRITE"), 0, "... locally")
commits = []
for what in (("jukebox", "WRITE"), ("drop", "WRITE"), ("jukebox", "COMMIT")):
    fault(what[0], what[1], "1")
    t0 = time.monotonic()
    c = P.commit(wb)
    commits.append("%s %s: %s" % (what[0], what[1], c["nfs_status"]))
    chk.is_(c["nfs_status"], "NFS3ERR_JUKEBOX",
            "COMMIT while the upstream %s the write-back's %s: JUKEBOX (%d ms)"
            % ("answers JUKEBOX to" if what[0] == "jukebox" else "loses the reply to",
               what[1], (time.monotonic() - t0) * 1000))
s2 = st.snap()
chk.is_(s2.get("cache.dirty.bytes"), 16 * KIB, "the bytes still dirty")
chk.is_(nsrpc.delta(s1, s2, "upstream.timeouts"), 1, "the lost reply counted in upstream.timeouts")
chk.is_(nsrpc.delta(s1, s2, "upstream.jukebox"), 2, "the two JUKEBOX replies counted in upstream.jukebox")
chk.is_(nsrpc.delta(s1, s2, "cache.writeback.retries"), 3,
        "three write-backs ended early, their bytes kept for another")
chk.is_(nsrpc.delta(s1, s2, "cache.writeback.errors"), 0, "... none of them an error")
c = P.commit(wb)
chk.is_(c["nfs_status"], "NFS3_OK", "COMMIT once the upstream answers: OK")
chk.is_(c.get("verf"), w.get("verf"), "... with the WRITE's verifier")
s3 = st.snap()
chk.is_(content("wb", 8 * KIB, 16 * KIB), new.hex(), "the export holds the bytes")
chk.is_(s3.get("cache.dirty.bytes"), 0, "nothing dirty")
chk.is_(nsrpc.delta(s1, s3, "cache.writeback.errors"), 0, "no write-back error")
chk.num(nsrpc.delta(s1, s3, "upstream.calls.WRITE"), "-ge", 3, "the bytes were sent again")
PY
rc=$?
checks "$T_TMP/faults.out"
ok "$rc" "every case ran (exit status $rc)" || diag "$(grep -v $'\x1f' "$T_TMP/faults.out" | tail -n 5)"
diag "relay: $(python3 "$top_srcdir/tests/fault-relay.py" ctl "$RELAY_CTL" counts | tr '\n' ';')"
grep -q "NFS3ERR_IO\|nfs_status.*IO" "$T_TMP/faults.out"
ok $((! $?)) "no call answered NFS3ERR_IO"
done_testing
