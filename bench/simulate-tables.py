#!/usr/bin/env python3
"""The tables of BENCHMARKS.md, "Hardware path profiler (simulated)", from
the raw JSON that bench/simulate.sh writes.

    python3 bench/simulate-tables.py target/sim-results

Means are arithmetic over the programs, as the thesis averages its
overlap percentages.
"""
import json
import os
import sys

PROGRAMS = ["zlib", "bzip2", "zstd", "lz4", "sqlite", "lua"]


def load(d, prog, name):
    path = os.path.join(d, f"{prog}-{name}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def proc_time(d, prog, name):
    """Wall, user + system seconds and peak RSS (KiB) of /usr/bin/time."""
    path = os.path.join(d, f"{prog}-{name}.time")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        wall, user, system, rss = f.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss)


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}"


def overlaps(doc, i=0):
    """(complete, dynamic) of result i."""
    if doc is None:
        return None, None
    r = doc["results"][i]
    d = r.get("dynamic_overlap")
    return r["complete_overlap"], (d["mean"] if d else None)


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def mean_cell(xs, fmt=None):
    """The bold mean of a column, with the number of programs when some
    have no figure (means over different programs do not compare)."""
    have = [x for x in xs if x is not None]
    if not have:
        return "-"
    text = fmt(mean(have)) if fmt else pct(mean(have))
    if len(have) < len(xs):
        text += f" ({len(have)} of {len(xs)})"
    return f"**{text}**"


def row(cells):
    return "| " + " | ".join(cells) + " |"


def table(head, rows):
    out = [row(head), row(["---"] * len(head))]
    out += [row(r) for r in rows]
    return "\n".join(out)


def headline(d, progs):
    names = ["frequency", "instructions", "mispredictions", "loop", "call"]
    head = ["program", "branches", "paths (exact)", "windows"]
    for n in names:
        head += [f"{n} complete", f"{n} dynamic"]
    rows, cols = [], {n: ([], []) for n in names}
    for p in progs:
        f = load(d, p, "frequency")
        if f is None:
            continue
        r = f["results"][0]
        dyn = r.get("dynamic_overlap") or {"per_window": []}
        cells = [p, f"{f['branches']:,}", f"{len(r['exact_profile']):,}", str(len(dyn["per_window"]))]
        for n in names:
            c, dy = overlaps(load(d, p, n))
            cols[n][0].append(c)
            cols[n][1].append(dy)
            cells += [pct(c), pct(dy)]
        rows.append(cells)
    m = ["**mean**", "", "", ""]
    for n in names:
        m += [mean_cell(cols[n][0]), mean_cell(cols[n][1])]
    rows.append(m)
    thesis = ["thesis (SPEC2000)", "", "", "100 M instrs", "88", "95.5", "-", "-", "78.4", "91.2", "78.35", "-", "84.10", "-"]
    rows.append(thesis)
    return table(head, rows)


def caches(d, progs):
    """The cache-miss metrics (thesis 5.5: L2 misses 96 % complete, 98 %
    dynamic at 512 x 4), with the model's miss rates and the run's cost."""
    head = ["program", "accesses", "L1 miss %", "L2 miss %", "L1 complete", "L1 dynamic",
            "L2 complete", "L2 dynamic", "paths with L2 misses", "wall s (L2 run)"]
    rows, cols = [], [[] for _ in range(4)]
    for p in progs:
        l1, l2 = load(d, p, "l1_misses"), load(d, p, "l2_misses")
        if l2 is None:
            continue
        k = l2["results"][0]["caches"]
        acc = k["accesses"]
        figures = list(overlaps(l1)) + list(overlaps(l2))
        for c, x in zip(cols, figures):
            c.append(x)
        nz = sum(1 for h in l2["results"][0]["exact_profile"] if h["weight"] > 0)
        t = proc_time(d, p, "l2_misses")
        rows.append([p, f"{acc:,}", pct(k["l1_misses"] / acc if acc else None),
                     pct(k["l2_misses"] / acc if acc else None)]
                    + [pct(x) for x in figures] + [f"{nz:,}", f"{t[0]:.0f}" if t else "-"])
    rows.append(["**mean**", "", "", ""] + [mean_cell(c) for c in cols] + ["", ""])
    rows.append(["thesis (SPEC2000)", "", "", "", "-", "-", "96", "98", "", ""])
    return table(head, rows)


def distinct(d, progs):
    """Distinct paths and how concentrated each metric is."""
    head = ["program", "metric", "distinct paths", "paths for 90 %", "HPT hits %", "evictions"]
    rows = []
    for p in progs:
        for n in ["frequency", "instructions", "mispredictions", "l1_misses", "l2_misses",
                  "loop", "call"]:
            doc = load(d, p, n)
            if doc is None:
                continue
            r = doc["results"][0]
            w = [h["weight"] for h in r["exact_profile"]]
            total, acc, k = sum(w), 0, 0
            for x in w:
                if total == 0 or acc >= 0.9 * total:
                    break
                acc += x
                k += 1
            nz = sum(1 for x in w if x > 0)
            h = r["hpt"]
            hits = h["hits"] / h["lookups"] if h["lookups"] else None
            rows.append([p, n, f"{nz:,}", f"{k:,}", pct(hits), f"{h['evictions']:,}"])
    return table(head, rows)


def overhead(d, progs):
    head = ["program"] + [f"queue {q}" for q in range(9)]
    rows, cols = [], [[] for _ in range(9)]
    for p in progs:
        f = load(d, p, "frequency")
        if f is None:
            continue
        t = {x["queue_length"]: x["overhead"] for x in f["results"][0]["timing"]}
        rows.append([p] + [f"{100 * t[q]:.2f} %" for q in range(9)])
        for q in range(9):
            cols[q].append(t[q])
    rows.append(["**mean**"] + [f"**{100 * mean(c):.2f} %**" for c in cols])
    rows.append(["thesis (SPEC2000, MinneSPEC)", "8.04 %", "", "", "", "0.6 %", "", "", "", ""])
    return table(head, rows)


def speed(d, progs):
    head = [
        "program", "branches", "uninstrumented wall / CPU (s)", "simulated run wall / CPU (s)",
        "ratio wall / CPU", "traced program CPU (s)", "simulator CPU (s)", "simulator M events/s",
        "sweep run wall (s)", "sweep simulator M events x configs/s",
    ]
    rows = []
    for p in progs:
        f, none = load(d, p, "frequency"), load(d, p, "none")
        if f is None or none is None:
            continue
        base, base_cpu = none["execute_s"], none["execute_cpu_s"]
        sim_s, run_cpu, cpu = f["seconds"], f["cpu_seconds"], f["simulator_cpu_seconds"]
        cells = [
            p, f"{f['branches']:,}", f"{base:.2f} / {base_cpu:.2f}", f"{sim_s:.1f} / {run_cpu:.1f}",
            f"{sim_s / base:.0f}x / {run_cpu / base_cpu:.0f}x", f"{run_cpu - cpu:.1f}",
            f"{cpu:.1f}", f"{f['branches'] / cpu / 1e6:.1f}",
        ]
        s = load(d, p, "sweep")
        if s is not None:
            n = len(s["results"])
            cells += [f"{s['seconds']:.1f}", f"{s['branches'] * n / s['simulator_cpu_seconds'] / 1e6:.1f}"]
        else:
            cells += ["-", "-"]
        rows.append(cells)
    return table(head, rows)


def speed_default(d, progs):
    """The simulator alone on the default configuration (one queue length):
    branch events per second of the feeding thread's CPU in the simulators."""
    head = ["program", "branches", "simulator CPU (s)", "simulator M events/s", "whole run CPU (s)"]
    rows = []
    for p in progs:
        f = load(d, p, "default")
        if f is None:
            continue
        cpu = f["simulator_cpu_seconds"]
        rows.append([p, f"{f['branches']:,}", f"{cpu:.2f}", f"{f['branches'] / cpu / 1e6:.1f}",
                     f"{f['cpu_seconds']:.1f}"])
    return table(head, rows)


def label(r):
    h = r["config"]["hpt"]
    return (h["entries"], h["ways"], h["index"], h["replacement"])


def sweep(d, progs):
    """Mean complete overlap over the programs per configuration."""
    acc = {}
    dyn = {}
    for p in progs:
        s = load(d, p, "sweep")
        if s is None:
            continue
        for r in s["results"]:
            acc.setdefault(label(r), []).append(r["complete_overlap"])
            dd = r.get("dynamic_overlap")
            dyn.setdefault(label(r), []).append(dd["mean"] if dd else None)
    if not acc:
        return "", {}
    out = []
    for index in ["xor", "address"]:
        for repl in ["lfu", "lru"]:
            head = [f"entries \\ ways ({index}, {repl})", "1", "2", "4", "8", "16", "32"]
            rows = []
            for e in [128, 256, 512, 1024, 2048, 4096]:
                rows.append([str(e)] + [pct(mean(acc.get((e, w, index, repl), [None]))) for w in [1, 2, 4, 8, 16, 32]])
            out.append(table(head, rows))
    return "\n\n".join(out), acc


def sweep_per_program(d, progs, configs):
    head = ["configuration"] + progs + ["mean"]
    rows = []
    for (e, w, index, repl) in configs:
        cells = [f"{e}x{w} {index} {repl}"]
        xs = []
        for p in progs:
            s = load(d, p, "sweep")
            x = None
            if s is not None:
                for r in s["results"]:
                    if label(r) == (e, w, index, repl):
                        x = r["complete_overlap"]
            xs.append(x)
            cells.append(pct(x))
        cells.append(mean_cell(xs))
        rows.append(cells)
    return table(head, rows)


def policies(d, progs):
    head = ["program"]
    names = [("lfu", "frequency", "mispredictions"), ("space_saving", "space_saving", "space_saving-mispredictions"),
             ("frequent", "frequent", "frequent-mispredictions")]
    for n, _, _ in names:
        head += [f"{n}: freq complete", "dynamic", "mispred complete", "dynamic"]
    head += ["lru: freq complete", "dynamic"]
    rows, cols = [], [[] for _ in range(len(head) - 1)]
    for p in progs:
        cells = [p]
        vals = []
        for _, f, m in names:
            c, dy = overlaps(load(d, p, f))
            mc, md = overlaps(load(d, p, m))
            vals += [c, dy, mc, md]
        lru = (None, None)
        s = load(d, p, "sweep")
        if s is not None:
            for r in s["results"]:
                if label(r) == (512, 4, "xor", "lru"):
                    dd = r.get("dynamic_overlap")
                    lru = (r["complete_overlap"], dd["mean"] if dd else None)
        vals += list(lru)
        for i, v in enumerate(vals):
            cols[i].append(v)
        rows.append(cells + [pct(v) for v in vals])
    rows.append(["**mean**"] + [mean_cell(c) for c in cols])
    return table(head, rows)


def raw(d):
    """One line per run: the figures every table above is made of."""
    head = ["run", "exit", "branches", "wall (s)", "CPU (s)", "simulator CPU (s)", "configs",
            "complete", "dynamic", "lookups", "hits", "evictions", "rejections"]
    rows = []
    for f in sorted(os.listdir(d)):
        if not f.endswith(".json") or f.endswith("-none.json"):
            continue
        with open(os.path.join(d, f)) as fh:
            doc = json.load(fh)
        r = doc["results"][0]
        h = r["hpt"]
        dd = r.get("dynamic_overlap")
        rows.append([f[:-5], doc["exit"], str(doc["branches"]), f"{doc['seconds']:.2f}",
                     f"{doc['cpu_seconds']:.2f}", f"{doc['simulator_cpu_seconds']:.2f}",
                     str(len(doc["results"])), f"{r['complete_overlap']:.4f}",
                     f"{dd['mean']:.4f}" if dd else "-", str(h["lookups"]), str(h["hits"]),
                     str(h["evictions"]), str(h.get("rejections", 0))])
    return table(head, rows)


def main():
    d = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "--raw":
        print(raw(d))
        return
    progs = [p for p in PROGRAMS if load(d, p, "frequency") is not None]
    timed = [p for p in PROGRAMS if load(d, p, "default") is not None]
    if timed:
        print("## Simulator speed: the default configuration\n")
        print(speed_default(d, timed))
        print()
    cached = [p for p in PROGRAMS if load(d, p, "l2_misses") is not None]
    if cached:
        print("## Cache misses per path: 512 x 4 xor LFU, BL paths (overlap %)\n")
        print(caches(d, cached))
        print()
    if not progs:
        return
    print("## Headline: 512 x 4 xor LFU, BL paths (overlap %)\n")
    print(headline(d, progs))
    print("\n## Distinct paths and concentration per metric\n")
    print(distinct(d, progs))
    print("\n## Modelled overhead by branch-queue length\n")
    print(overhead(d, progs))
    print("\n## Speed\n")
    print(speed(d, progs))
    print("\n## Replacement policies at 512 x 4 xor (overlap %)\n")
    print(policies(d, progs))
    grids, _ = sweep(d, progs)
    if grids:
        swept = [p for p in progs if load(d, p, "sweep") is not None]
        print(f"\n## Sweep: mean complete overlap over {', '.join(swept)} (%)\n")
        print(grids)
        print("\n## Sweep: selected configurations per program (complete overlap %)\n")
        sel = [(e, 4, "xor", "lfu") for e in [128, 256, 512, 1024, 2048, 4096]]
        sel += [(512, 4, "address", "lfu"), (512, 4, "xor", "lru"), (512, 1, "xor", "lfu"), (512, 32, "xor", "lfu")]
        print(sweep_per_program(d, swept, sel))


if __name__ == "__main__":
    main()
