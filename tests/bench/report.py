#!/usr/bin/env python3
"""tests/bench/report.py: results and report of tests/bench/run.sh.

  report.py add RESULTS.jsonl --id ID ... --json-file F   one nfsbench run
  report.py aggregate RESULTS.jsonl --id ID --parts PREFIX ...  parallel runs as one
  report.py note RESULTS.jsonl --id ID --scenario S --extra JSON  a free record
  report.py report RESULTS.jsonl --params P --elapsed E --srcdir D --out DIR [--merge PREV]
        writes DIR/BENCHMARKS.md, DIR/bench/results.json, DIR/bench/*.png; with
        --merge, the scenarios this run did not run keep their records of
        PREV (an earlier results.json)
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

PROCS = ["READ", "WRITE", "COMMIT", "GETATTR", "LOOKUP", "ACCESS"]
# the namespace scenarios' upstream calls, shown one by one; the rest as "other"
META_PROCS = ["READDIRPLUS", "LOOKUP", "ACCESS", "GETATTR", "READ"]
GAUGES = ["cache.metadata.entries", "cache.objects", "cache.objects.resident"]
SCENARIOS = ["S1", "S2", "S3", "S4", "S5", "S6", "S7", "MEM", "META"]
TARGETS = ["direct", "nfscached", "proxy"]
TNAME = {"direct": "direct", "nfscached": "nfscached", "proxy": "PROXY_V4"}


def read_stats(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    try:
                        out[p[0]] = int(p[1])
                    except ValueError:
                        pass
    except OSError:
        return None
    return out


def stat_delta(s0, s1):
    if s0 is None or s1 is None:
        return None
    return {k: s1[k] - s0.get(k, 0) for k in s1
            if k.startswith(("upstream.", "cache.", "nfs3.calls.", "mount3.calls."))
            and k not in GAUGES and s1[k] - s0.get(k, 0) != 0}


def append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                recs.append(json.loads(line))
    return recs


def common_args(p):
    p.add_argument("results")
    p.add_argument("--id", required=True)
    p.add_argument("--scenario", default="")
    p.add_argument("--target", default="")
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--phase", default="")
    p.add_argument("--variant", default="")
    p.add_argument("--wall", type=float, default=None, help="ms")
    p.add_argument("--extra", default="{}")
    p.add_argument("--cpu0", type=float)
    p.add_argument("--cpu1", type=float)
    p.add_argument("--stats0")
    p.add_argument("--stats1")
    p.add_argument("--clk-tck", type=float, default=100)


def base_record(a):
    rec = {"id": a.id, "scenario": a.scenario, "target": a.target, "delay_ms": a.delay,
           "phase": a.phase, "variant": a.variant,
           "wall_s": a.wall / 1000 if a.wall is not None else None}
    try:
        rec["extra"] = json.loads(a.extra) if a.extra else {}
    except ValueError:
        rec["extra"] = {"raw": a.extra}
    if a.stats0 or a.stats1:
        s0, s1 = read_stats(a.stats0), read_stats(a.stats1)
        d = stat_delta(s0, s1)
        if d is not None:
            rec["counters"] = d
            rec["upstream_calls"] = {p: d.get("upstream.calls." + p, 0) for p in PROCS}
            rec["upstream_calls_total"] = sum(v for k, v in d.items() if k.startswith("upstream.calls."))
            rec["gauges"] = {k: s1[k] for k in GAUGES if k in s1}
    if a.cpu0 is not None and a.cpu1 is not None:
        rec["cpu_s"] = (a.cpu1 - a.cpu0) / a.clk_tck
    return rec


def cmd_add(a):
    rec = base_record(a)
    rec["rc"] = a.rc
    rec["cmd"] = a.cmd
    try:
        with open(a.json_file) as f:
            rec["result"] = json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        rec["result"] = None
    if a.rss:
        rec["rss_kb"] = int(a.rss)
    r = rec["result"]
    if r and "cpu_s" in rec and r.get("requests"):
        rec["cpu_us_per_call"] = rec["cpu_s"] * 1e6 / r["requests"]
    append(a.results, rec)


def cmd_aggregate(a):
    parts = [r for r in load(a.results) if r["id"].startswith(a.parts)]
    rec = base_record(a)
    rec["rc"] = max([r.get("rc", 1) for r in parts] or [1])
    rec["parts"] = [r["id"] for r in parts]
    res = [r["result"] for r in parts if r.get("result")]
    if res:
        secs = rec["wall_s"] or max(x["seconds"] for x in res)
        tot = {k: sum(x.get(k, 0) for x in res) for k in ("requests", "reads", "writes", "bytes", "errors")}
        lat = {"p50": sorted(x["lat_us"]["p50"] for x in res)[len(res) // 2],
               "p95": max(x["lat_us"]["p95"] for x in res),
               "p99": max(x["lat_us"]["p99"] for x in res),
               "max": max(x["lat_us"]["max"] for x in res),
               "mean": sum(x["lat_us"]["mean"] * x["requests"] for x in res) / max(tot["requests"], 1)}
        rec["result"] = dict(tot, workload=res[0]["workload"], block=res[0]["block"], seconds=secs,
                             mb_s=tot["bytes"] / 1e6 / secs, iops=tot["requests"] / secs, lat_us=lat,
                             note="%d parallel processes; seconds = wall time of all; "
                                  "p50 = median of parts, p95/p99/max = worst part" % len(res))
    else:
        rec["result"] = None
    append(a.results, rec)


def cmd_note(a):
    append(a.results, base_record(a))


# ---------------------------------------------------------------- report

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def machine(srcdir):
    m = {"nproc": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                m["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                m["mem_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    v = {}
    v["nfscached_git"] = sh("git -C '%s' describe --always --dirty --tags 2>/dev/null" % srcdir)
    try:
        cfg = open(os.path.join(srcdir, "config.h")).read()
        mm = re.search(r'#define PACKAGE_VERSION "([^"]*)"', cfg)
        v["nfscached"] = mm.group(1) if mm else "?"
    except OSError:
        v["nfscached"] = "?"
    for pkg in ("nfs-ganesha", "nfs-ganesha-proxy-v4", "libnfs13"):
        v[pkg] = sh("dpkg-query -W -f='${Version}' %s 2>/dev/null" % pkg) or "?"
    m["os"] = sh(". /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\"")
    try:
        m["loadavg_at_end"] = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        pass
    return m, v


def speed(r):
    """throughput figure used for ratios: MB/s when bytes moved, else IOPS"""
    res = r.get("result") if r else None
    if not res:
        return None
    return res["mb_s"] if res.get("bytes") else res.get("iops")


def ratio(a, b):
    sa, sb = speed(a), speed(b)
    if not sa or not sb:
        return None
    return sa / sb


def fmt(x, nd=1):
    if x is None:
        return "–"
    if isinstance(x, float):
        if abs(x) >= 100:
            return "%.0f" % x
        return ("%%.%df" % nd) % x
    return str(x)


def fx(x):
    return "–" if x is None else ("%.2fx" % x if x < 10 else "%.1fx" % x)


def find(recs, **kw):
    for r in recs:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def bench_recs(recs, scen):
    return [r for r in recs if r["scenario"] == scen and r.get("target") and "result" in r
            and r.get("phase") not in ("part", "prewarm")]


def ref_for(recs, r, target):
    """the run of TARGET comparable with R: same scenario, delay, phase, variant"""
    var = r["variant"]
    if r["scenario"] == "S2":
        var = "default"
    elif target != "nfscached":
        var = var.split(" ")[0]     # "walk meta=no" is compared with direct's "walk"
    return find(recs, scenario=r["scenario"], target=target, delay_ms=r["delay_ms"],
                phase=r["phase"], variant=var)


def table(recs, scen):
    rows = bench_recs(recs, scen)
    order = {t: i for i, t in enumerate(TARGETS)}
    rows.sort(key=lambda r: (r["delay_ms"], r["variant"], r["phase"], order.get(r["target"], 9)))
    out = ["| delay | variant | phase | target | MB/s | IOPS | p50 µs | p99 µs | s | vs direct | vs PROXY_V4 | upstream READ/WRITE/COMMIT/GETATTR/LOOKUP/ACCESS | CPU µs/call |",
           "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        res = r.get("result") or {}
        lat = res.get("lat_us", {})
        vd = ratio(r, ref_for(recs, r, "direct")) if r["target"] != "direct" else None
        vp = ratio(r, ref_for(recs, r, "proxy")) if r["target"] != "proxy" else None
        up = r.get("upstream_calls")
        ups = "/".join(str(up.get(p, 0)) for p in PROCS) if up else ""
        err = "" if r.get("rc", 0) == 0 else " **(exit %s)**" % r.get("rc")
        out.append("| %g ms | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["delay_ms"], r["variant"], r["phase"], TNAME.get(r["target"], r["target"]), err,
            fmt(res.get("mb_s")), fmt(res.get("iops"), 0), fmt(lat.get("p50"), 0), fmt(lat.get("p99"), 0),
            fmt(res.get("seconds"), 2), fx(vd), fx(vp), ups, fmt(r.get("cpu_us_per_call"))))
    return "\n".join(out)


def table_meta(recs, scen):
    """S7: times per pass, upstream calls per pass, metadata entries, RSS"""
    rows = bench_recs(recs, scen)
    order = {t: i for i, t in enumerate(TARGETS)}
    rows.sort(key=lambda r: (r["delay_ms"], r["variant"].split(" ")[0], r["variant"],
                             r["phase"], order.get(r["target"], 9)))
    out = ["| delay | variant | phase | target | s | ms/file | calls (ls-R: entries) | p50 µs | vs direct | vs PROXY_V4 "
           "| upstream calls: all (READDIRPLUS/LOOKUP/ACCESS/GETATTR/READ) | metadata entries | RSS MiB |",
           "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        res = r.get("result") or {}
        lat = res.get("lat_us", {})
        vd = ratio(r, ref_for(recs, r, "direct")) if r["target"] != "direct" else None
        vp = ratio(r, ref_for(recs, r, "proxy")) if r["target"] != "proxy" else None
        c = r.get("counters")
        ups = ""
        if c is not None:
            ups = "%d (%s)" % (r.get("upstream_calls_total", 0),
                               "/".join(str(c.get("upstream.calls." + p, 0)) for p in META_PROCS))
        files = res.get("files_walked")
        msf = res["seconds"] * 1000 / files if files and res.get("seconds") else None
        calls = res.get("requests")
        g = r.get("gauges") or {}
        rss = r.get("rss_kb")
        err = "" if r.get("rc", 0) == 0 else " **(exit %s)**" % r.get("rc")
        out.append("| %g ms | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["delay_ms"], r["variant"], r["phase"], TNAME.get(r["target"], r["target"]), err,
            fmt(res.get("seconds"), 2), fmt(msf, 2), fmt(calls), fmt(lat.get("p50"), 0) if lat.get("p50") else "–",
            fx(vd), fx(vp), ups, fmt(g.get("cache.metadata.entries")),
            fmt(rss / 1024.0) if rss else "–"))
    return "\n".join(out)


def targets_check(recs):
    """the performance targets: (name, measured, met)"""
    out = []

    def g(**kw):
        return find(recs, **kw)

    def add(name, val, ok, how):
        out.append((name, "–" if val is None else how % val, None if val is None else ok))

    # S1
    for j in ("j1", "j16"):
        w5 = g(scenario="S1", target="nfscached", delay_ms=5.0, phase="warm", variant=j)
        d0 = g(scenario="S1", target="direct", delay_ms=0.0, phase="warm", variant=j)
        r = ratio(d0, w5)
        add("S1 warm at 5 ms within 1.25x of direct at 0 ms (%s)" % j, r,
            r is not None and r <= 1.25, "direct 0 ms / nfscached 5 ms = %.2fx")
    w5 = g(scenario="S1", target="nfscached", delay_ms=5.0, phase="warm", variant="j1")
    d5 = g(scenario="S1", target="direct", delay_ms=5.0, phase="warm", variant="j1")
    r = ratio(w5, d5)
    add("S1 warm at 5 ms ≥10x faster than direct, one call in flight", r,
        r is not None and r >= 10, "%.1fx")
    # a cold cache never slower than no cache: S1 cold at 5 ms and on loopback
    for dl, j, want in ((5.0, "j1", 1.5), (5.0, "j16", 1.2), (0.0, "j1", 0.8), (0.0, "j16", 0.95)):
        c = g(scenario="S1", target="nfscached", delay_ms=dl, phase="cold", variant=j)
        d = g(scenario="S1", target="direct", delay_ms=dl, phase="cold", variant=j)
        r = ratio(c, d)
        add("S1 cold at %g ms ≥%gx of direct (%s)" % (dl, want, j), r, r is not None and r >= want, "%.2fx")
    c = g(scenario="S3", target="nfscached", delay_ms=5.0, phase="cold", variant="rndrw")
    r = ratio(c, ref_for(recs, c, "direct")) if c else None
    add("S3 cold at 5 ms ≥1.0x of direct", r, r is not None and r >= 1.0, "%.2fx")
    d = g(scenario="S2", target="direct", delay_ms=5.0, phase="write", variant="default")
    for var, want in (("partial_yes", 5), ("commit_local", 20)):
        c = g(scenario="S2", target="nfscached", delay_ms=5.0, phase="write", variant=var)
        r = ratio(c, d)
        add("S2 write phase (its COMMIT included) at 5 ms ≥%gx faster than direct (%s)" % (want, var), r,
            r is not None and r >= want, "%.2fx")
    c = g(scenario="S4", target="nfscached", delay_ms=5.0, phase="all", variant="4x8")
    r = ratio(c, ref_for(recs, c, "direct")) if c else None
    add("S4 at 5 ms ≥3x faster than direct", r, r is not None and r >= 3, "%.2fx")
    w0 = g(scenario="S1", target="nfscached", delay_ms=0.0, phase="warm", variant="j1")
    mbs = speed(w0) if w0 else None
    add("S1 warm j1 at 0 ms ≥ 2 GB/s", mbs, mbs is not None and mbs >= 2000, "%.0f MB/s")
    cp = g(scenario="CP", id="CP.summary")
    cpx = (cp.get("extra") or {}) if cp else {}
    r = (cpx["nfscached_ms"] / cpx["direct_ms"]
         if cpx.get("nfscached_ms") is not None and cpx.get("direct_ms") else None)
    add("warm nfs-cp of %s MiB at 0 ms ≤0.8x of straight ganesha's time" % cpx.get("size_mib", 64), r, r is not None and r <= 0.8,
        "%%.2fx (%s ms vs %s ms)" % (cpx.get("nfscached_ms"), cpx.get("direct_ms")))
    # S2
    for dl in (5.0, 0.0):
        y = g(scenario="S2", target="nfscached", delay_ms=dl, phase="read", variant="partial_yes")
        n = g(scenario="S2", target="nfscached", delay_ms=dl, phase="read", variant="partial_no")
        if not y or not n:
            continue
        yr = (y.get("upstream_calls") or {}).get("READ")
        nr = (n.get("upstream_calls") or {}).get("READ")
        r = yr / nr if yr is not None and nr else (0.0 if yr == 0 and nr else None)
        add("S2 upstream READs (read phase), partial on ≤ 0.72x of off, %g ms" % dl, r,
            r is not None and r <= 0.72, "%%.2fx (%s vs %s)" % (yr, nr))
        r = ratio(y, n)
        add("S2 read phase ≥1.35x faster with partial pages, %g ms" % dl, r,
            r is not None and r >= 1.35, "%.2fx")
    # S1-S3 vs PROXY_V4 at 5 ms warm
    for scen, phase, var in (("S1", "warm", "j1"), ("S1", "warm", "j16"), ("S2", "read", "partial_yes"),
                             ("S3", "warm", "rndrw")):
        a = g(scenario=scen, target="nfscached", delay_ms=5.0, phase=phase, variant=var)
        b = g(scenario=scen, target="proxy", delay_ms=5.0, phase=phase,
              variant="default" if scen == "S2" else var)
        r = ratio(a, b)
        add("%s %s (%s) at 5 ms ≥10x faster than PROXY_V4" % (scen, phase, var), r,
            r is not None and r >= 10, "%.1fx")
    # S6, S7 (the namespace cache), at 5 ms
    for var, phase, want in (("walk", "warm", 20), ("walk", "cold", 1.5), ("ls-R", "warm", 10)):
        a = g(scenario="S7", target="nfscached", delay_ms=5.0, phase=phase, variant=var)
        r = ratio(a, ref_for(recs, a, "direct")) if a else None
        add("S7 %s %s at 5 ms ≥%gx faster than direct" % (var, phase, want), r,
            r is not None and r >= want, "%.1fx")
    for phase, want in (("warm", 5), ("cold", 1.0)):
        a = g(scenario="S6", target="nfscached", delay_ms=5.0, phase=phase, variant="tree")
        r = ratio(a, ref_for(recs, a, "direct")) if a else None
        add("S6 %s at 5 ms ≥%gx faster than direct" % (phase, want), r, r is not None and r >= want, "%.2fx")
    # MEM: the largest size run (the targets are for 1,000,000 objects: a
    # smaller run shows its figures, "not measured")
    mems = [r for r in recs if r["scenario"] == "MEM" and r["id"].endswith(".summary")
            and (r.get("extra") or {}).get("files")]
    if mems:
        big = max(mems, key=lambda r: r["extra"]["files"])
        x = big["extra"]
        full = x["files"] >= 1000000
        rss = x.get("rss_after_reread_kb")
        v = rss / 1024 if rss is not None else None
        add("MEM VmRSS after re-reading 1,000,000 objects (metadata = no) ≤ 96 MiB", v,
            (v <= 96) if full and v is not None else None, "%%.1f MiB at %d objects" % x["files"])
        ms = x.get("start_to_status_ms")
        add("MEM start-up (exec to status answering) with 1,000,000 objects ≤ 1 s", ms,
            (ms <= 1000) if full and ms is not None else None, "%%d ms at %d objects" % x["files"])
    reads = [r["extra"].get("restart_reread_upstream_reads") for r in mems]
    reads = [n for n in reads if n is not None]
    add("MEM re-read after a clean restart: 0 upstream READs", max(reads) if reads else None,
        bool(reads) and max(reads) == 0, "%%d (most over %d sizes)" % len(reads))
    m = g(scenario="META", id="META.summary")
    bpe = (m.get("extra") or {}).get("bytes_per_entry") if m else None
    add("namespace cache: cache.metadata_max = 1,000,000 entries well under 512 MiB", bpe,
        bpe is not None and bpe * 1e6 < 256 * 2 ** 20,
        "%%d bytes per entry: %.0f MiB per million" % ((bpe or 0) * 1e6 / 2 ** 20))
    # S5
    for dl in (0.0, 5.0):
        for j in ("j1", "j16"):
            r5 = g(scenario="S5", target="nfscached", delay_ms=dl, phase="warm", variant=j)
            p99 = r5["result"]["lat_us"]["p99"] if r5 and r5.get("result") else None
            add("S5 cached 4 KiB randread p99 ≤ 150 µs (%s, %g ms)" % (j, dl), p99,
                p99 is not None and p99 <= 150, "%.0f µs")
    return out


def gnuplot(script, cwd):
    if not shutil.which("gnuplot"):
        return False
    r = subprocess.run(["gnuplot"], input=script, text=True, cwd=cwd, capture_output=True)
    if r.returncode != 0:
        sys.stderr.write("gnuplot: " + r.stderr[-500:] + "\n")
    return r.returncode == 0


def plots(recs, outdir):
    made = []
    for scen in SCENARIOS:
        rows = bench_recs(recs, scen)
        if not rows or scen in ("S7", "META"):
            continue
        groups = []
        for r in rows:
            g = "%s %s %gms" % (r["variant"] if scen != "S2" or r["target"] != "nfscached" else
                                r["variant"].replace("partial_", "pp="), r["phase"], r["delay_ms"])
            if scen == "S2":
                g = "%s %gms" % (r["phase"], r["delay_ms"])
            if g not in groups:
                groups.append(g)
        series = []
        for r in rows:
            s = TNAME.get(r["target"], r["target"])
            if scen == "S2" and r["target"] == "nfscached":
                s += " " + r["variant"].replace("partial_", "partial=")
            if s not in series:
                series.append(s)
        data = {}
        for r in rows:
            g = ("%s %gms" % (r["phase"], r["delay_ms"]) if scen == "S2" else
                 "%s %s %gms" % (r["variant"], r["phase"], r["delay_ms"]))
            s = TNAME.get(r["target"], r["target"])
            if scen == "S2" and r["target"] == "nfscached":
                s += " " + r["variant"].replace("partial_", "partial=")
            data[(g, s)] = speed(r) or 0
        groups = sorted(set(g for g, _ in data), key=lambda g: (float(g.split()[-1][:-2]), g))
        unit = "MB/s" if any((r.get("result") or {}).get("bytes") for r in rows) else "IOPS"
        dat = os.path.join(outdir, "%s.dat" % scen)
        with open(dat, "w") as f:
            f.write("group " + " ".join('"%s"' % s for s in series) + "\n")
            for g in groups:
                f.write('"%s" ' % g + " ".join("%.3f" % data.get((g, s), 0) for s in series) + "\n")
        png = "%s-throughput.png" % scen.lower()
        ok = gnuplot("""set terminal pngcairo size 1000,500 font ",10"
set output '%s'
set title '%s throughput (%s, higher is better; log scale)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.1:*]
set ylabel '%s'
set xtics rotate by -30
set key top right
set grid ytics
plot for [i=2:%d] '%s.dat' using i:xtic(1) title columnheader(i)
""" % (png, scen, unit, unit, len(series) + 1, scen), outdir)
        os.unlink(dat)
        if ok:
            made.append((scen, png))
    # latency percentiles: S5 and S2's read phase
    lrows = [r for r in recs if r.get("result") and r["scenario"] in ("S5", "S1", "S2")
             and r.get("phase") in ("warm", "read") and r.get("target")]
    if lrows:
        dat = os.path.join(outdir, "lat.dat")
        with open(dat, "w") as f:
            f.write('run p50 p95 p99\n')
            for r in lrows:
                l = r["result"]["lat_us"]
                name = "%s %s %s %s %gms" % (r["scenario"], TNAME.get(r["target"]), r["variant"],
                                             r["phase"], r["delay_ms"])
                f.write('"%s" %.1f %.1f %.1f\n' % (name, max(l["p50"], 1), max(l["p95"], 1), max(l["p99"], 1)))
        ok = gnuplot("""set terminal pngcairo size 1400,600 font ",9"
set output 'latency.png'
set title 'Latency percentiles per call (µs, log scale, lower is better)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'µs'
set xtics rotate by -40 font ",8"
set grid ytics
set bmargin 12
plot for [i=2:4] 'lat.dat' using i:xtic(1) title columnheader(i)
""", outdir)
        os.unlink(dat)
        if ok:
            made.append(("latency", "latency.png"))
    return made


DESC = {
    "S1": "Sequential read of one file made directly in the export, 1 MiB blocks, -j 1 and -j 16; "
          "cold = first read after a start with an empty cache (nfscached) or a restart (PROXY_V4), "
          "warm = the second read.",
    "S2": "W1: a fresh file made in the export; random 1 KiB-aligned 1 KiB writes (randwrite -j 16, seed 1), "
          "then random 1 KiB reads (randread -j 16, seed 2). nfscached with cache.partial_pages=yes and =no.",
    "S3": "W2: randrw, 2 KiB blocks, read ratio 0.5, -j 16 on a fresh file: cold (fresh target), then warm "
          "(after a sequential read of the whole file through the target).",
    "S4": "W3: sequential write, 4 files written at once by 4 nfsbench processes with -j 8 each (32 calls in "
          "flight), UNSTABLE writes and one COMMIT per file (timed). The extra column flush_ms is "
          "`nfscachectl flush` after the run.",
    "S5": "4 KiB random reads of a file already read whole through the target (warm), -j 1 and -j 16. "
          "CPU µs/call = nfscached utime+stime (/proc/PID/stat) during the run / calls.",
    "S6": "W4: every file of a tree made in the export read whole (`tree`, -j 4 files at once), cold then warm. "
          "The tree's mtimes are set a day back (an unchanged tree: the namespace cache trusts attributes "
          "acregmax/acdirmax = 60 s rather than (now − mtime) / 10). \"meta=no\" (with S6_AB=1): nfscached "
          "with `cache.metadata=no`.",
    "MEM": "Memory and start-up with many cached objects, at two sizes (`MEM_FILES`, `MEM_FILES_LARGE`): "
           "a tree of 64-byte files (100 a directory) made in the export, the cache filled through NFS only "
           "(`nfsbench -w tree -j 16` through nfscached; nothing else writes the cache directory). Per size: "
           "fill (a fresh nfscached, `cache.metadata = no`, the default `resident_max`), reread (warm, the same "
           "daemon), restart (a clean stop and a start on the same cache: `start_to_status_ms` is exec to "
           "`nfscachectl status` answering; then the tree read again while its objects are not resident, with "
           "its upstream READs), meta (a start with `cache.metadata = yes` and the tree read again; bytes per "
           "namespace entry = (its VmRSS growth − restart's) / `cache.metadata.entries`).",
    "S7": "A fresh client walking a tree of small files with one call in flight (`nfsbench -w walk -j 1`: "
          "READDIRPLUS of each directory, then LOOKUP, ACCESS, GETATTR and READ of each file, raw NFSv3 calls "
          "after an untimed MNT), and `nfs-ls -R` of the same tree (timed as a whole, its mount included). "
          "cold = the first client after a start of the target (nfscached: empty caches), warm = a second "
          "fresh client. The tree's mtimes are set a day back, as S6's. \"meta=no\": nfscached with `cache.metadata=no`. Upstream calls are per pass "
          "(mount included); metadata entries (`cache.metadata.entries`) and VmRSS are nfscached's after the "
          "pass. PROXY_V4 at 5 ms walks only the first files (see ms/file and the ratios, which compare rates).",
    "META": "Memory per namespace cache entry: a tree of tiny files walked without READs (`nfsbench -w walk -N "
            "-j 4`) through a fresh nfscached with `cache.metadata=yes`, then `=no`; bytes per entry = "
            "(VmRSS growth with − VmRSS growth without) / `cache.metadata.entries`.",
}


def merge_previous(path, recs, params, elapsed):
    """records, elapsed times and scale of the scenarios this run did not run,
    from an earlier results.json; each record keeps the date of its run"""
    try:
        prev = json.load(open(path))
    except (OSError, ValueError):
        return {}
    ran = set(params.get("scenarios", "").split()) or set(r["scenario"] for r in recs)
    when = "%s (git %s)" % (prev.get("date", "?"), (prev.get("versions") or {}).get("nfscached_git", "?"))
    kept = set()
    for r in prev.get("runs", []):
        if r.get("scenario") in ran:
            continue
        r.setdefault("measured", when)
        recs.append(r)
        kept.add(r["scenario"])
    done = set(e[0] for e in elapsed)
    for k, sec in (prev.get("elapsed_s") or {}).items():
        if k in kept and k not in done:
            elapsed.append((k, sec))
    earlier = dict(prev.get("params_earlier") or {})
    earlier.update({k: v for k, v in (prev.get("params") or {}).items()})
    return earlier if kept else {}


def cmd_report(a):
    recs = load(a.results)
    params = json.load(open(a.params)) if a.params and os.path.exists(a.params) else {}
    elapsed = []
    if a.elapsed and os.path.exists(a.elapsed):
        for line in open(a.elapsed):
            p = line.split()
            if len(p) == 2:
                elapsed.append((p[0], int(p[1])))
    earlier = merge_previous(a.merge, recs, params, elapsed) if a.merge else {}
    order = {sc: i for i, sc in enumerate(SCENARIOS)}
    elapsed.sort(key=lambda e: order.get(e[0], 99))
    m, v = machine(a.srcdir)
    bdir = os.path.join(a.out, "bench")
    os.makedirs(bdir, exist_ok=True)
    for f in os.listdir(bdir):
        if f.endswith(".png"):
            os.unlink(os.path.join(bdir, f))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    json.dump({"date": now, "machine": m, "versions": v, "params": params, "params_earlier": earlier,
               "elapsed_s": dict(elapsed), "total_s": a.total, "runs": recs},
              open(os.path.join(bdir, "results.json"), "w"), indent=1, sort_keys=True)
    made = plots(recs, bdir)
    L = []
    L.append("# nfscached benchmarks\n")
    L.append("Generated by `tests/bench/run.sh%s` (`make bench`) on %s; do not edit: every run "
             "rewrites this file, `doc/bench/results.json` (raw results) and `doc/bench/*.png`.\n"
             % (" --quick" if params.get("quick") else "", now))
    if params.get("quick"):
        L.append("**This is a `--quick` smoke run: tiny sizes, the numbers mean little.**\n")
    L.append("## Machine and versions\n")
    L.append("- CPU: %s, %s cores (nproc); memory %s GiB; kernel %s; %s" %
             (m.get("cpu", "?"), m.get("nproc"), m.get("mem_gib", "?"), m.get("kernel"), m.get("os", "")))
    L.append("- nfscached %s (git %s); nfs-ganesha %s (FSAL VFS upstream, FSAL PROXY_V4 peer %s); libnfs %s" %
             (v.get("nfscached"), v.get("nfscached_git"), v.get("nfs-ganesha"), v.get("nfs-ganesha-proxy-v4"),
              v.get("libnfs13")))
    L.append("- load average (1, 5, 15 min) at the start %s, at the end %s (other work on the machine "
             "shares its cores: compare ratios measured in one run)" %
             (params.get("loadavg_at_start", "?"), m.get("loadavg_at_end", "?")))
    L.append("- elapsed: %s; total %s s%s\n" % (", ".join("%s %d s" % e for e in elapsed), a.total,
                                                " (this run)" if earlier else ""))
    L.append("## Setup\n")
    L.append("""Everything runs on loopback on one machine. The upstream is nfs-ganesha (FSAL VFS, NFSv3 and
NFSv4, `Attr_Expiration_Time = 0`) exporting a directory under /tmp (on disk). In front of it,
`tests/bench/delay-relay` delays every byte by the given one-way delay (0 ms also goes through
the relay, so both delays have the same hops). Three targets, all through the relay:

- **direct**: the client talks to the upstream (through the relay) itself;
- **nfscached**: `./nfscached` (write_mode writeback, cache dir under /tmp) whose upstream is the relay;
- **PROXY_V4**: a second ganesha with FSAL PROXY_V4 (NFSv4.1 to the relay; export
  `Attr_Expiration_Time = 0` so that it reads fresh data; it has no data cache).

The client is `tests/bench/nfsbench` (libnfs async, NFSv3). MB/s are 10^6 bytes per second;
latency is per READ/WRITE call. "vs direct" and "vs PROXY_V4" are throughput ratios (MB/s, or IOPS
when no data moves) against the same scenario, phase and delay (>1: nfscached faster). Upstream
calls are the `upstream.calls.*` counters of nfscached (`nfscachectl stats` before and after).
The direct target has no cache of its own: its "cold" and "warm" are simply the first and second
run (the upstream's page cache and ganesha's metadata cache stay warm).
""")
    if params.get("nfscached_asan_build"):
        L.append("**nfscached was an ASan/UBSan build (`configure --enable-asan`) in this run: "
                 "its CPU time and latency are inflated; rebuild without it for real figures.**\n")
    L.append("Scale of this run: `%s`\n" % json.dumps(params, sort_keys=True))
    olds = sorted(set(r["measured"] for r in recs if r.get("measured")))
    if olds:
        L.append("Sections marked \"earlier run\" were not run this time (`BENCH_SCENARIOS`): their numbers "
                 "come from %s, scale `%s`.\n" % (", ".join(olds), json.dumps(earlier, sort_keys=True)))
    L.append("## Targets\n")
    L.append("| target | measured | met |")
    L.append("|---|---|---|")
    for name, val, ok in targets_check(recs):
        L.append("| %s | %s | %s |" % (name, val, "not measured" if ok is None else ("**met**" if ok else "**not met**")))
    L.append("")
    for scen in SCENARIOS:
        rows = [r for r in recs if r["scenario"] == scen]
        if not rows:
            continue
        L.append("## %s\n" % scen)
        L.append(DESC.get(scen, "") + "\n")
        olds = sorted(set(r["measured"] for r in rows if r.get("measured")))
        if olds:
            L.append("*Earlier run: measured %s.*\n" % ", ".join(olds))
        if bench_recs(recs, scen):
            L.append((table_meta(recs, scen) if scen == "S7" else table(recs, scen)) + "\n")
        extras = [r for r in rows if r.get("extra")]
        for r in extras:
            L.append("- `%s`: %s" % (r["id"], ", ".join("%s = %s" % kv for kv in sorted(r["extra"].items()))))
        if scen in ("MEM", "META"):
            for r in rows:
                if r.get("rss_kb"):
                    L.append("- `%s`: nfscached VmRSS after the run %d KiB" % (r["id"], r["rss_kb"]))
        if extras or scen in ("MEM", "META"):
            L.append("")
        for s, png in made:
            if s == scen:
                L.append("![%s throughput](bench/%s)\n" % (scen, png))
    if any(s == "latency" for s, _ in made):
        L.append("## Latency percentiles\n")
        L.append("![latency](bench/latency.png)\n")
    bad = [r["id"] for r in recs if r.get("rc", 0) != 0]
    if bad:
        L.append("## Failed runs\n")
        L.append("nfsbench exited non-zero (some call failed or it timed out) in: " +
                 ", ".join("`%s`" % b for b in bad) + "\n")
    with open(os.path.join(a.out, "BENCHMARKS.md"), "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("add")
    common_args(p)
    p.add_argument("--rc", type=int, default=0)
    p.add_argument("--cmd", default="")
    p.add_argument("--json-file", required=True)
    p.add_argument("--rss", default="")
    p.set_defaults(fn=cmd_add)
    p = sub.add_parser("aggregate")
    common_args(p)
    p.add_argument("--parts", required=True)
    p.set_defaults(fn=cmd_aggregate)
    p = sub.add_parser("note")
    common_args(p)
    p.set_defaults(fn=cmd_note)
    p = sub.add_parser("report")
    p.add_argument("results")
    p.add_argument("--params")
    p.add_argument("--elapsed")
    p.add_argument("--total", type=int, default=0)
    p.add_argument("--srcdir", default=".")
    p.add_argument("--out", required=True)
    p.add_argument("--merge")
    p.set_defaults(fn=cmd_report)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
