"""The audit's human and machine reports from a :class:`~.findings.Summary` (pure, no Spark).

- :func:`summary_json`: ``summary.json``, the machine-readable verdict and counts;
- :func:`terminal_table`: what the command prints (counts per kind, then a sample of findings);
- :func:`html_report`: ``report.html``, one self-contained page (no script, no external file):
  the verdict, the counts, bar charts drawn as inline SVG (findings per kind, under-replicated
  entries per bookie, or lag per cluster for the geo audit) and the sample of findings.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from magnetar.audit.findings import Summary

_BAR_HEIGHT = 22
_LABEL_WIDTH = 220
_CHART_WIDTH = 640


def summary_json(summary: Summary) -> str:
    return json.dumps(summary.to_json(), indent=2, sort_keys=False) + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    cells = [[str(c) for c in header], *[["" if c is None else str(c) for c in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]  # fmt: skip
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def terminal_table(summary: Summary, columns: Sequence[str], sample_rows: int = 20) -> str:
    lines = [f"{summary.audit} audit of {summary.target}: {summary.verdict.upper()}"]
    for key, value in summary.scanned.items():
        lines.append(f"  {key}: {value}")
    if summary.findings:
        lines.append("")
        counts = [(k, c.findings, c.entries) for k, c in sorted(summary.findings.items())]
        lines += _table(["kind", "findings", "entries"], counts)
    if summary.sample:
        lines.append("")
        shown = summary.sample[:sample_rows]
        lines += _table(columns, [[row.get(c) for c in columns] for row in shown])
        if summary.total_findings > len(shown):
            lines.append(f"... {summary.total_findings - len(shown)} more in the findings dataset")
    return "\n".join(lines) + "\n"


def bar_chart(title: str, values: Mapping[str, float], unit: str) -> str:
    """A horizontal bar chart as inline SVG (an empty-state line when there is nothing)."""
    esc = html.escape
    if not values or not any(values.values()):
        return f"<h3>{esc(title)}</h3><p class='none'>none</p>"
    top = max(values.values()) or 1
    height = _BAR_HEIGHT * len(values) + 10
    bars = []
    for row, (label, value) in enumerate(sorted(values.items())):
        y = row * _BAR_HEIGHT + 5
        width = max(1.0, (_CHART_WIDTH - _LABEL_WIDTH - 80) * value / top)
        bars.append(
            f"<text x='{_LABEL_WIDTH - 6}' y='{y + 15}' text-anchor='end'>{esc(label)}</text>"
            f"<rect x='{_LABEL_WIDTH}' y='{y + 3}' width='{width:.1f}' height='{_BAR_HEIGHT - 6}'"
            f" fill='#c0392b'/>"
            f"<text x='{_LABEL_WIDTH + width + 6:.1f}' y='{y + 15}'>{value:g} {esc(unit)}</text>"
        )
    return (
        f"<h3>{esc(title)}</h3><svg xmlns='http://www.w3.org/2000/svg' width='{_CHART_WIDTH}' "
        f"height='{height}' font-family='sans-serif' font-size='12'>{''.join(bars)}</svg>"
    )


def html_report(
    summary: Summary, columns: Sequence[str], charts: Sequence[tuple[str, Mapping[str, float], str]]
) -> str:
    esc = html.escape
    data: dict[str, Any] = summary.to_json()
    colour = "#1e8449" if summary.verdict == "pass" else "#c0392b"
    scanned = "".join(
        f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in summary.scanned.items()
    )
    counts = "".join(
        f"<tr><td>{esc(k)}</td><td>{c.findings}</td><td>{c.entries}</td></tr>"
        for k, c in sorted(summary.findings.items())
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc('' if r.get(c) is None else str(r.get(c)))}</td>"
                         for c in columns) + "</tr>"
        for r in summary.sample
    )  # fmt: skip
    plots = "".join(bar_chart(title, values, unit) for title, values, unit in charts)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Magnetar {esc(summary.audit)} audit</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}} .none{{color:#777}}</style>
</head><body>
<h1>Magnetar {esc(summary.audit)} audit: <span style="color:{colour}">{summary.verdict.upper()}
</span></h1>
<p>Target: {esc(summary.target)}; {data["totalFindings"]} findings; took
{data["durationSeconds"]} s; exit code {data["exitCode"]}.</p>
<table>{scanned}</table>
<h2>Findings per kind</h2>
<table><tr><th>kind</th><th>findings</th><th>entries</th></tr>{counts}</table>
<h2>Plots</h2>{plots}
<h2>Sample of findings</h2>
<table><tr>{head}</tr>{rows}</table>
<p>The full list is the Parquet dataset beside this page.</p>
</body></html>
"""
