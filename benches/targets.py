"""The speed issue's targets, checked against one run's results and shown as PASS/FAIL tables."""

from __future__ import annotations

from typing import Any

from report import Table, fmt_ratio

BIG = ("cl100k_base", "o200k_base")
GOALS = {  # speed ratios unless lower is better
    "vs fastest exact peer": 1.5,  # cl100k/o200k cells
    "vs tiktoken": 10.0,  # cl100k/o200k cells
    "vs tiktoken r50k/p50k": 8.0,
    "vs tiktoken custom": 3.0,
    "batch / own 1 thread": 1.8,
    "flat / fastest peer flat": 1.0,
    "decode_bytes GB/s": 1.0,
    "cold load / tiktoken's": 1.0,  # time, lower is better
    "memory / tiktoken's": 1.0,  # RSS added, lower is better
    "time / fastest exact peer": 2.0,  # adversarial
    "linearity (whole/half)": 2.3,  # adversarial
}
LOWER_IS_BETTER = {"time / fastest exact peer", "linearity (whole/half)",
                   "cold load / tiktoken's", "memory / tiktoken's"}
HEADERS = {  # several goals share a column
    "vs tiktoken": "vs tiktoken >=10x (r50k/p50k >=8x, custom >=3x)",
    "vs tiktoken r50k/p50k": "vs tiktoken >=10x (r50k/p50k >=8x, custom >=3x)",
    "vs tiktoken custom": "vs tiktoken >=10x (r50k/p50k >=8x, custom >=3x)",
}


def check(target: str, section: str, cell: str, value: float | None,
          detail: str | None = None) -> dict[str, Any]:
    goal = GOALS.get(target)
    lower = target in LOWER_IS_BETTER
    if goal is None:
        verdict = "INFO"
    elif value is None:
        verdict = "N/A"
    else:
        verdict = "PASS" if (value <= goal if lower else value >= goal) else "FAIL"
    return {"section": section, "target": target, "cell": cell, "value": value, "goal": goal,
            "lower": lower, "verdict": verdict, "detail": detail}


def evaluate(res: dict[str, Any]) -> list[dict[str, Any]]:
    return [*_single(res.get("single", [])), *_batch(res.get("batch", [])),
            *_adversarial(res.get("adversarial", [])), *_decode(res.get("decode", [])),
            *_load(res.get("load"))]


def _single(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        where = f"{c['encoding']}/{c['corpus']}"
        if c["encoding"] in BIG:
            out.append(check("vs fastest exact peer", "single", where, c["vs_best_peer"],
                             c["best_peer"]))
            out.append(check("vs tiktoken", "single", where, c["vs_tiktoken"]))
        elif c["encoding"] == "custom":
            out.append(check("vs tiktoken custom", "single", where, c["vs_tiktoken"]))
        else:
            out.append(check("vs tiktoken r50k/p50k", "single", where, c["vs_tiktoken"]))
        ft = c["results"].get("ferrotok", {})
        exact = "ndiff" in ft and not ft["ndiff"]
        x = check("ids == tiktoken", "single", where, None,
                  None if exact else f"{ft.get('ndiff', '?')}/{c['docs']} docs differ")
        x["verdict"] = "PASS" if exact else "FAIL"
        out.append(x)
    return out


def _batch(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        where = f"{c['encoding']}/{c['corpus']}"
        out.append(check("batch / own 1 thread", "batch", where, c["batch_speedup"]))
        out.append(check("flat / fastest peer flat", "batch", where,
                         c["flat_vs_best_peer_flat"], c["best_peer_flat"]))
    return out


def _adversarial(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in files:
        where = f"{f['encoding']}/{f['file']}"
        out.append(check("time / fastest exact peer", "adversarial", where,
                         f["vs_best_peer_time"], f["best_peer"]))
        lin = f["results"].get("ferrotok", {}).get("linearity")
        out.append(check("linearity (whole/half)", "adversarial", where, lin))
    return out


def tables(checks: list[dict[str, Any]]) -> list[Table]:
    """One table per section: a row per cell, a column per target ('figure VERDICT')."""
    out = []
    for section in ("single", "batch", "adversarial", "decode", "load"):
        rows = [x for x in checks if x["section"] == section]
        if rows:
            out.append(_table(section, rows))
    counts = {v: sum(1 for x in checks if x["verdict"] == v) for v in ("PASS", "FAIL", "N/A")}
    if out:
        out[-1].notes.append("all targets: " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    return out


def _table(section: str, rows: list[dict[str, Any]]) -> Table:
    headers: list[str] = []
    cells: list[str] = []
    for x in rows:
        headers += [_header(x["target"])] if _header(x["target"]) not in headers else []
        cells += [x["cell"]] if x["cell"] not in cells else []
    t = Table(f"targets: {section}", ["cell", *headers])
    by = {(x["cell"], _header(x["target"])): x for x in rows}
    for cell in cells:
        t.rows.append([cell, *(_fmt(by.get((cell, h))) for h in headers)])
    return t


def _header(target: str) -> str:
    goal = GOALS.get(target)
    if target in HEADERS or goal is None:
        return HEADERS.get(target, target)
    unit = "" if target.endswith("GB/s") else "x"
    return f"{target} {'<=' if target in LOWER_IS_BETTER else '>='}{goal}{unit}"


def _fmt(x: dict[str, Any] | None) -> str:
    if x is None:
        return ""
    if x["target"] == "ids == tiktoken":
        return "PASS" if x["verdict"] == "PASS" else f"FAIL ({x['detail']})"
    if x["target"].endswith("GB/s") and x["value"] is not None:
        fig = f"{x['value']:.2f} GB/s"
    else:
        fig = fmt_ratio(x["value"])
    if x["detail"] and x["value"] is not None:
        fig += f" ({x['detail'].split()[0]})"
    return fig if x["verdict"] == "INFO" else f"{fig} {x['verdict']}"


def _decode(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        where = f"{c['encoding']}/{c['corpus']}"
        for how in ("per doc", "one list"):
            r = c["results"].get(f"ferrotok {how}", {})
            out.append(check("decode_bytes GB/s", "decode", f"{where} ({how})", r.get("gbps")))
    return out


def _load(load: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not load or "median" not in load:
        return []
    ft, tt = load["median"].get("ferrotok"), load["median"].get("tiktoken")
    if not ft or not tt:
        return []
    where = load["encoding"]
    # Memory in use after a first real document where the run has one: ferrotok builds some
    # tables there, at first use, that a bare `get_encoding` leaves out.
    rss = "rss_doc_delta" if "rss_doc_delta" in ft and "rss_doc_delta" in tt else "rss_delta"
    return [
        check("cold load / tiktoken's", "load", where, ft["load_s"] / tt["load_s"]),
        check("memory / tiktoken's", "load", where, ft[rss] / tt[rss]),
    ]
