"""Output of the encoding benchmark: the header, aligned text or Markdown tables, JSON, a plot."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left: int = 1  # leading columns aligned left (labels); the rest are figures

    def render(self, markdown: bool) -> str:
        return _markdown(self) if markdown else _text(self)


def _text(t: Table) -> str:
    cols = list(zip(t.headers, *t.rows))
    widths = [max(len(c) for c in col) for col in cols]

    def line(cells: list[str]) -> str:
        out = [c.ljust(w) if i < t.left else c.rjust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    bar = "-" * len(line(t.headers))
    body = [line(r) for r in t.rows]
    notes = [f"  {n}" for n in t.notes]
    return "\n".join([f"== {t.title}", line(t.headers), bar, *body, *notes, ""])


def _markdown(t: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    sep = "|" + "|".join(["---" if i < t.left else "---:" for i in range(len(t.headers))]) + "|"
    notes = [f"- {n}" for n in t.notes]
    parts = [f"### {t.title}", "", line(t.headers), sep, *[line(r) for r in t.rows]]
    if notes:
        parts += ["", *notes]
    return "\n".join([*parts, ""])


# ---------------------------------------------------------------- formatting helpers


def fmt_rate(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def group_notes(entries: list[tuple[str, str, str]], total: int) -> list[str]:
    """(who, where, message) entries as one note per (who, message), listing where."""
    groups: dict[tuple[str, str], list[str]] = {}
    for who, where, msg in entries:
        groups.setdefault((who, msg), []).append(where)
    out = []
    for (who, msg), wheres in groups.items():
        scope = f"all {total}" if len(wheres) == total > 1 else ", ".join(wheres)
        out.append(f"{who}: {msg} [{scope}]")
    return out


# ---------------------------------------------------------------- header


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _git_head() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(benchlib.PROJECT_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(benchlib.PROJECT_ROOT), "status", "--porcelain", "--", "rust",
             "python"], capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return out.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine_info(peers: list[Any], env_notes: dict[str, str]) -> dict[str, Any]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "ferrotok_git": _git_head(),
        "packages": {p.name: p.version() if p.installed() else None for p in peers},
        "env": env_notes,
    }


def header_text(info: dict[str, Any], config: dict[str, Any], markdown: bool) -> str:
    pk = ", ".join(f"{k} {v or 'not installed'}" for k, v in info["packages"].items())
    settings = ", ".join(f"{k}={v}" for k, v in config.items() if k not in ("json", "plot"))
    items = [
        ("date", info["date"]),
        ("machine", f"{info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
                    f"load average at start {_loadavg(info['loadavg'])}"),
        ("python", f"{info['python']} on {info['platform']}"),
        ("ferrotok", f"git {info['ferrotok_git']}"),
        ("packages", pk),
        ("data", f"{info['env'].get('data_dir')}; tiktoken cache "
                 f"{info['env'].get('tiktoken_cache')}"),
        ("settings", settings),
    ]
    if markdown:
        return "\n".join(["## ferrotok encoding benchmark", "",
                          *[f"- **{k}**: `{v}`" for k, v in items], ""])
    return "\n".join(["ferrotok encoding benchmark", *[f"  {k:9}{v}" for k, v in items], ""])


def footer_text(elapsed: float, markdown: bool) -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    line = f"total time {elapsed:.0f} s; load average at end {_loadavg(load)}"
    return f"_{line}_" if markdown else line


def _loadavg(load: Any) -> str:
    return " ".join(f"{x:.2f}" for x in load) if load else "?"


# ---------------------------------------------------------------- json and plot


def save_json(path: str, results: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, default=str)
    print(f"results saved to {path}", file=sys.stderr)


def save_plot(path: str, results: dict[str, Any]) -> None:
    """Bar charts of single-thread MB/s per cell and of the batch rows (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot: matplotlib is not installed (pip install matplotlib); no plot",
              file=sys.stderr)
        return
    panels = [p for p in (_single_panel(results), _batch_panel(results)) if p]
    if not panels:
        print("--plot: nothing to plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(panels), 1, figsize=(14, 4.5 * len(panels)), squeeze=False)
    for ax, (title, labels, series) in zip(axes[:, 0], panels):
        _bars(ax, title, labels, series)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot saved to {path}", file=sys.stderr)


def _single_panel(results: dict[str, Any]) -> tuple[str, list[str], dict[str, list]] | None:
    cells = results.get("single") or []
    if not cells:
        return None
    labels = [f"{c['encoding']}\n{c['corpus']}" for c in cells]
    names = _series_names(cells, results)
    series = {n: [_exact_rate(c["results"].get(n)) for c in cells] for n in names}
    return "single thread, ~4 KB docs, ids as lists (MB/s, log scale)", labels, series


def _batch_panel(results: dict[str, Any]) -> tuple[str, list[str], dict[str, list]] | None:
    cells = results.get("batch") or []
    if not cells:
        return None
    labels = [f"{c['encoding']}\n{c['corpus']}" for c in cells]
    names = _series_names(cells, results)
    series = {n: [_exact_rate(c["results"].get(n)) for c in cells] for n in names}
    return f"batch, {results['config']['threads']} threads (MB/s, log scale)", labels, series


def _series_names(cells: list[dict[str, Any]], results: dict[str, Any]) -> list[str]:
    """Result names of all cells, in the order of the encoder table (ferrotok first)."""
    order = list(results["machine"]["packages"])
    names: list[str] = []
    for c in cells:
        names += [n for n in c["results"] if n not in names]
    rank = {n: order.index(n.split()[0]) if n.split()[0] in order else len(order) for n in names}
    return sorted(names, key=lambda n: rank[n])


def _exact_rate(r: dict[str, Any] | None) -> float:
    if not r or r.get("error") or r.get("ndiff"):
        return 0.0
    return r.get("mbps") or 0.0


def _bars(ax: Any, title: str, labels: list[str], series: dict[str, list]) -> None:
    n = max(1, len(series))
    width = 0.8 / n
    for i, (name, ys) in enumerate(series.items()):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [y if y > 0 else float("nan") for y in ys], width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_yscale("log")
    top = max((y for ys in series.values() for y in ys if y > 0), default=0.0)
    if top > 0:
        ax.set_ylim(top=top * 3)  # room above the tallest bar for the legend
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=min(n, 7))
