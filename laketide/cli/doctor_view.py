"""``laketide doctor``: findings as a table or JSON; exit 3 when one is severe (or any, with --fail-on)."""

from __future__ import annotations

import argparse
from typing import Any

from laketide.cli.args import duration_ms
from laketide.cli.render import Output
from laketide.inspect.doctor import SEVERE, DoctorSettings, diagnose

__all__ = ["EXIT_FINDINGS", "run_doctor"]

EXIT_FINDINGS = 3


def run_doctor(args: argparse.Namespace, table: Any) -> int:
    settings = DoctorSettings(orphan_age_ms=duration_ms(args.orphan_age, "--orphan-age"),
                              dv_fill=args.dv_threshold)
    findings = diagnose(table, settings)
    severe = [f for f in findings if f.severity == SEVERE]
    failing = findings if args.fail_on == "warning" else severe
    out = Output(as_json=args.json)
    if args.json:
        out.json({"table": table.name, "findings": [f.to_json() for f in findings], "severe": len(severe)})
    elif not findings:
        out.console.print(f"[green]{table.name}: no findings[/]")
    else:
        from rich.table import Table as RichTable

        t = RichTable(title=f"{table.name}: {len(findings)} findings ({len(severe)} severe)", show_lines=True)
        for name in ("severity", "check", "subject", "value (limit)", "finding", "fix"):
            t.add_column(name, overflow="fold")
        for f in findings:
            colour = "red" if f.severity == SEVERE else "yellow"
            t.add_row(f"[{colour}]{f.severity}[/]", f.check, f.subject, f"{f.value:g} ({f.threshold:g})", f.message,
                      f.fix)
        out.console.print(t)
    return EXIT_FINDINGS if failing else 0
