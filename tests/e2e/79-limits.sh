#!/bin/bash
# 79-limits: calls that take more than their share, or that the upstream
# would refuse, against nfscached's own bounds:
#   1. a READ with count 0x7fffffff of a file the (frozen) upstream must
#      supply does not stop another client's READs of a cached file: two of
#      them, on a connection open before, are answered while the first still
#      waits; one with count 0xffffffff is answered with the file, clamped
#      to the transfer size;
#   2. partly received records share server.partial_max (384k here, set by
#      a reload; server.max_record 256k): six clients each sending 110,000
#      bytes of a 120,000-byte WRITE and waiting: the three whose records
#      began first are closed (conn.partial_closed 3), the other three finish
#      their WRITEs, which land upstream byte for byte; then three clients
#      hold 110,000 bytes each and a reload lowers server.partial_max to
#      256k: the oldest is closed at once, the others finish their WRITEs;
#   3. a name holding a NUL byte is never forwarded shortened: LOOKUP
#      "victim\0JUNK" and CREATE "made\0x" get GARBAGE_ARGS (as knfsd's
#      decoder), as MNT "/export\0x"; a SYMLINK target holding a NUL gets
#      NFS3ERR_INVAL; a name holding a '/' (LOOKUP "../export/victim",
#      CREATE "../outside") gets GARBAGE_ARGS too; nothing reaches the
#      upstream;
#   4. AUTH_NONE (server.auth_none = refuse, the default): NFS NULL and MOUNT
#      NULL, DUMP and EXPORT answered; GETATTR, LOOKUP and MNT denied
#      AUTH_TOOWEAK, counted in rpc.auth_tooweak.
# The daemon serves a plain NULL after each part and ends with no sanitizer
# report.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon's own limits"
needs_own_upstream
setup -o upstream.timeout_ms=3000 -o server.max_record=256k -o cache.metadata=yes

head -c 65536 /dev/urandom > "$EXPORT_DIR/warm.bin"
head -c 65536 /dev/urandom > "$EXPORT_DIR/cold.bin"
echo victim > "$EXPORT_DIR/victim"
# old: its attributes are trusted for acregmax while the upstream is frozen
touch -d '2020-01-01' "$EXPORT_DIR/warm.bin"

OUT=$T_TMP/limits.out
timeout -k 5 100 python3 - "$top_srcdir/tests" "$PORT" "$CTL" "$NFSCACHECTL" "$GANESHA_PID" \
    "$NFSCACHED_PID" "$T_TMP/nfscached.conf" "$T_TMP/nfscached.log" > "$OUT" 2>&1 <<'PY'
import hashlib, os, re, signal, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, ctl, ctlbin, ganesha = int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
daemon, conf, log = int(sys.argv[6]), sys.argv[7], sys.argv[8]

def reload_with(partial_max):
    """server.partial_max in the file, SIGHUP, wait for the verdict."""
    text = open(conf).read()
    text = re.sub(r"(?m)^partial_max = .*\n", "", text)
    text = text.replace("[server]\n", "[server]\npartial_max = %s\n" % partial_max, 1)
    open(conf, "w").write(text)
    before = open(log).read().count("main: configuration reloaded")
    os.kill(daemon, signal.SIGHUP)
    for _ in range(100):
        if open(log).read().count("main: configuration reloaded") > before:
            return True
        time.sleep(0.05)
    return False

def stats():
    out = subprocess.run([ctlbin, "-s", ctl, "stats"], capture_output=True, text=True).stdout
    return {k: int(v) for k, v in (l.split() for l in out.splitlines())}

def null_ok(tag):
    d = rpc.Conn("127.0.0.1", port, timeout=5)
    print("%s.null: %s" % (tag, d.null().summary().replace(" ", "_")))
    d.close()

def read_body(body):
    u = rpc.Unpacker(body)
    st = u.u32()
    rpc.skip_post_op_attr(u)
    if st != 0:
        return st, b""
    u.u32()
    u.u32()
    return st, u.opaque(1 << 30)

c = rpc.Conn("127.0.0.1", port, timeout=20)
st, root = c.mnt("/export")
fhs = {}
for name in ("warm.bin", "cold.bin", "victim"):
    rep, s = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, name))
    fhs[name] = bytes.fromhex(rpc.decode_lookup(rep.body)["fh"])
rep, s = c.nfs(rpc.NFSPROC3_READ, rpc.read_args(fhs["warm.bin"], 0, 65536))
print("warm.md5:", hashlib.md5(read_body(rep.body)[1]).hexdigest())

# ---- 1. one huge READ against a frozen upstream -----------------------------
s0 = stats()
os.kill(ganesha, signal.SIGSTOP)
try:
    other = rpc.Conn("127.0.0.1", port, timeout=10)
    other.null()
    big = rpc.Conn("127.0.0.1", port, timeout=20)
    big_xid, rec = big.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_READ,
                             rpc.read_args(fhs["cold.bin"], 0, 0x7fffffff))
    big.send_raw(rec)
    time.sleep(0.5)
    # two READs on a connection open before the huge one: the second one
    # is read only if the connection was not paused after the first
    t0 = time.monotonic()
    rep, s = other.nfs(rpc.NFSPROC3_READ, rpc.read_args(fhs["warm.bin"], 0, 65536))
    print("other.status:", s)
    print("other.md5:", hashlib.md5(read_body(rep.body)[1]).hexdigest())
    rep, s = other.nfs(rpc.NFSPROC3_READ, rpc.read_args(fhs["warm.bin"], 0, 0xffffffff))
    st, data = read_body(rep.body) if rep.ok() else (None, b"")
    print("wrap.status:", s)
    print("wrap.md5:", hashlib.md5(data).hexdigest())
    print("other.ms:", int((time.monotonic() - t0) * 1000))
    try:
        big.recv_reply(big_xid, timeout=0.2)
        print("big.pending_after_other: 0")
    except rpc.Timeout:
        print("big.pending_after_other: 1")
finally:
    os.kill(ganesha, signal.SIGCONT)
rep = big.recv_reply(big_xid, timeout=20)
print("big.status:", rpc.nfs_status(rep.body) if rep.ok() else rep.summary())
s1 = stats()
print("hits_delta:", s1["cache.read.hits"] - s0["cache.read.hits"])
null_ok("part1")

# ---- 2. partial records over server.partial_max -----------------------------
def hold(i):
    """A new connection that sends SENT bytes of a FILE_SYNC WRITE of
    REC - 200 bytes of the letter 65 + i to a new file part<i>, and waits:
    (connection, xid, record)."""
    rep, s = c.nfs(rpc.NFSPROC3_CREATE, rpc.create_args(root, "part%d" % i))
    fh = bytes.fromhex(rpc.decode_create(rep.body)["fh"])
    k = rpc.Conn("127.0.0.1", port, timeout=20)
    xid, rec = k.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_WRITE,
                       rpc.write_args(fh, 0, bytes([65 + i]) * (REC - 200), rpc.FILE_SYNC))
    k.send_raw(rec[:SENT])
    time.sleep(0.3)
    return k, xid, rec

def states_of(held):
    """closed, open (no reply yet) or reply, for each held connection."""
    out = []
    for k, xid, rec in held:
        try:
            k.recv_record(timeout=0.5)
            out.append("reply")
        except rpc.Closed:
            out.append("closed")
        except rpc.Timeout:
            out.append("open")
    return out

def finish(held, states, first):
    """The rest of each open connection's WRITE: "<first + index>:<status>"."""
    done = []
    for i, (k, xid, rec) in enumerate(held):
        if states[i] == "open":
            k.send_raw(rec[SENT:])
            rep = k.recv_reply(xid, timeout=20)
            done.append("%d:%s" % (first + i, rpc.nfs_status(rep.body) if rep.ok() else rep.summary()))
    return ",".join(done)

print("reload_384k:", int(reload_with("384k")))
REC, SENT = 120000, 110000
conns = [hold(i) for i in range(6)]
s2 = stats()
print("partial_closed:", s2["conn.partial_closed"] - s1["conn.partial_closed"])
print("partial_bytes:", s2["conn.partial_bytes"])
null_ok("part2_held")
states = states_of(conns)
print("part2.states:", ",".join(states))
print("part2.writes:", finish(conns, states, 0))
print("part2.partial_bytes_after:", stats()["conn.partial_bytes"])

# a lower server.partial_max applies at the reload, to what is held
held = [hold(i) for i in (6, 7, 8)]
s5 = stats()
print("lower.partial_bytes_before:", s5["conn.partial_bytes"])
print("reload_256k:", int(reload_with("256k")))
time.sleep(0.3)
s6 = stats()
print("lower.partial_closed:", s6["conn.partial_closed"] - s5["conn.partial_closed"])
states = states_of(held)
print("lower.states:", ",".join(states))
print("lower.writes:", finish(held, states, 6))
null_ok("part2")

# ---- 3. names holding a NUL byte --------------------------------------------
s3 = stats()
rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_LOOKUP,
             rpc.diropargs3(root, b"victim\x00JUNK"))
print("nul.lookup:", rep.summary().replace(" ", "_"))
rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_CREATE, rpc.create_args(root, b"made\x00x"))
print("nul.create:", rep.summary().replace(" ", "_"))
rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_SYMLINK,
             rpc.symlink_args(root, "ln", b"abc\x00def"))
print("nul.symlink:", rpc.nfs_status(rep.body) if rep.ok() else rep.summary().replace(" ", "_"))
rep = c.call(rpc.MOUNT_PROGRAM, rpc.MOUNT_V3, rpc.MOUNTPROC3_MNT,
             rpc.Packer().opaque(b"/export\x00x").bytes())
print("nul.mnt:", rep.summary().replace(" ", "_"))
rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, "../export/victim"))
print("slash.lookup:", rep.summary().replace(" ", "_"))
rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_CREATE, rpc.create_args(root, "../outside"))
print("slash.create:", rep.summary().replace(" ", "_"))
s4 = stats()
for p in ("LOOKUP", "CREATE", "SYMLINK"):
    print("nul.upstream_%s: %d" % (p, s4["upstream.calls." + p] - s3["upstream.calls." + p]))
print("nul.garbage_args:", s4["rpc.garbage_args"] - s3["rpc.garbage_args"])
null_ok("part3")

# ---- 4. AUTH_NONE -----------------------------------------------------------
a = rpc.Conn("127.0.0.1", port, timeout=10, flavor=rpc.AUTH_NONE)
print("none.null:", a.null().summary().replace(" ", "_"))
for name, proc in (("mntnull", rpc.MOUNTPROC3_NULL), ("dump", rpc.MOUNTPROC3_DUMP),
                   ("export", rpc.MOUNTPROC3_EXPORT)):
    rep = a.call(rpc.MOUNT_PROGRAM, rpc.MOUNT_V3, proc)
    print("none.%s: %s" % (name, rep.summary().replace(" ", "_")))
rep = a.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_GETATTR, rpc.getattr_args(root))
print("none.getattr:", rep.summary().replace(" ", "_"))
rep = a.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, "victim"))
print("none.lookup:", rep.summary().replace(" ", "_"))
rep = a.call(rpc.MOUNT_PROGRAM, rpc.MOUNT_V3, rpc.MOUNTPROC3_MNT,
             rpc.Packer().opaque(b"/export").bytes())
print("none.mnt:", rep.summary().replace(" ", "_"))
print("none.tooweak:", stats()["rpc.auth_tooweak"] - s4["rpc.auth_tooweak"])
null_ok("part4")
PY
rc=$?
diag "$(cat "$OUT")"
is "$rc" 0 "the client ran to the end"
warm=$(md5 "$EXPORT_DIR/warm.bin")
is "$(val "$OUT" warm.md5)" "$warm" "warm.bin read through the daemon"

# 1
is "$(val "$OUT" other.status)" NFS3_OK "a READ of a cached file while a READ of 0x7fffffff bytes waits upstream"
is "$(val "$OUT" other.md5)" "$warm" "with the file's bytes"
is "$(val "$OUT" big.pending_after_other)" 1 "both answered while the huge READ is still waiting ($(val "$OUT" other.ms) ms)"
is "$(val "$OUT" wrap.status)" NFS3_OK "a READ with count 0xffffffff of the cached file"
is "$(val "$OUT" wrap.md5)" "$warm" "is the whole file"
like_status() { [[ "$1" =~ ^($2)$ ]]; }
like_status "$(val "$OUT" big.status)" "NFS3_OK|NFS3ERR_JUKEBOX"
ok $? "the huge READ is answered in the end ($(val "$OUT" big.status))"
num_ok "$(val "$OUT" hits_delta)" -ge 2 "both cached READs were served locally"
is "$(val "$OUT" part1.null)" accepted_SUCCESS "NULL after part 1"

# 2
is "$(val "$OUT" reload_384k)" 1 "server.partial_max = 384k by a reload"
is "$(val "$OUT" partial_closed)" 3 "conn.partial_closed: the three oldest partial records"
num_ok "$(val "$OUT" partial_bytes)" -le 393216 "conn.partial_bytes within server.partial_max"
is "$(val "$OUT" part2.states)" "closed,closed,closed,open,open,open" "the connections whose records began first were closed"
is "$(val "$OUT" part2.writes)" "3:NFS3_OK,4:NFS3_OK,5:NFS3_OK" "the others' 120,000-byte WRITEs complete"
for i in 3 4 5 7 8; do
    want=$(head -c $((120000 - 200)) /dev/zero | tr '\0' "\\$(printf '%03o' $((65 + i)))" | md5sum | cut -d' ' -f1)
    is "$(md5 "$EXPORT_DIR/part$i")" "$want" "part$i upstream holds the WRITE's bytes"
done
is "$(val "$OUT" lower.partial_bytes_before)" $((3 * (110000 - 4))) "three partial records of 110,000 bytes held (record marks aside)"
is "$(val "$OUT" reload_256k)" 1 "server.partial_max = 256k by a reload"
is "$(val "$OUT" lower.partial_closed)" 1 "the reload closes one connection at once"
is "$(val "$OUT" lower.states)" "closed,open,open" "the one whose record began first"
is "$(val "$OUT" lower.writes)" "7:NFS3_OK,8:NFS3_OK" "the others' WRITEs complete"
is "$(val "$OUT" part2.partial_bytes_after)" 0 "no partial record held afterwards"
is "$(val "$OUT" part2_held.null)" accepted_SUCCESS "NULL while partial records are held"
is "$(val "$OUT" part2.null)" accepted_SUCCESS "NULL after part 2"

# 3
is "$(val "$OUT" nul.lookup)" accepted_GARBAGE_ARGS 'LOOKUP "victim\0JUNK": GARBAGE_ARGS'
is "$(val "$OUT" nul.create)" accepted_GARBAGE_ARGS 'CREATE "made\0x": GARBAGE_ARGS'
is "$(val "$OUT" nul.symlink)" NFS3ERR_INVAL 'SYMLINK to "abc\0def": NFS3ERR_INVAL'
is "$(val "$OUT" nul.mnt)" accepted_GARBAGE_ARGS 'MNT "/export\0x": GARBAGE_ARGS'
for p in LOOKUP CREATE SYMLINK; do
    is "$(val "$OUT" nul.upstream_$p)" 0 "no $p went upstream"
done
is "$(val "$OUT" slash.lookup)" accepted_GARBAGE_ARGS 'LOOKUP "../export/victim": GARBAGE_ARGS'
is "$(val "$OUT" slash.create)" accepted_GARBAGE_ARGS 'CREATE "../outside": GARBAGE_ARGS'
is "$(val "$OUT" nul.garbage_args)" 5 "rpc.garbage_args counts the five"
[ ! -e "$EXPORT_DIR/made" ] && [ ! -e "$EXPORT_DIR/ln" ] && [ ! -e "$EXPORT_DIR/../outside" ]
ok $? "none of made, ln, ../outside exists upstream"
is "$(val "$OUT" part3.null)" accepted_SUCCESS "NULL after part 3"

# 4
is "$(val "$OUT" none.null)" accepted_SUCCESS "AUTH_NONE NULL answered"
is "$(val "$OUT" none.mntnull)" accepted_SUCCESS "AUTH_NONE MOUNT NULL answered"
is "$(val "$OUT" none.dump)" accepted_SUCCESS "AUTH_NONE MOUNT DUMP answered"
is "$(val "$OUT" none.export)" accepted_SUCCESS "AUTH_NONE MOUNT EXPORT answered"
is "$(val "$OUT" none.getattr)" denied_AUTH_ERROR_AUTH_TOOWEAK "AUTH_NONE GETATTR: AUTH_TOOWEAK"
is "$(val "$OUT" none.lookup)" denied_AUTH_ERROR_AUTH_TOOWEAK "AUTH_NONE LOOKUP: AUTH_TOOWEAK"
is "$(val "$OUT" none.mnt)" denied_AUTH_ERROR_AUTH_TOOWEAK "AUTH_NONE MNT: AUTH_TOOWEAK"
is "$(val "$OUT" none.tooweak)" 3 "rpc.auth_tooweak counts them"
is "$(val "$OUT" part4.null)" accepted_SUCCESS "NULL after part 4"

no_sanitizer_report "$T_TMP/nfscached.log"; ok $? "no sanitizer report in the daemon log"
done_testing
