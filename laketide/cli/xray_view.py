"""``laketide xray``: the x-ray as text (rich), JSON or a picture."""

from __future__ import annotations

import argparse
import datetime as _dt
import os
from typing import Any

from laketide.cli.args import parse_partition
from laketide.cli.render import Output
from laketide.exceptions import InvalidOptionError
from laketide.inspect.xray import TableXRay, dv_fill, xray

__all__ = ["render_text", "run_xray"]


def run_xray(args: argparse.Namespace, table: Any) -> None:
    if args.out is not None:
        ext = os.path.splitext(args.out)[1].lower()
        if ext not in (".png", ".svg"):
            raise InvalidOptionError(f"xray --out {args.out}: the picture must be a .png or .svg file")
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            raise InvalidOptionError(f"xray --out {args.out}: directory {parent} does not exist")
    partition = parse_partition(table, args.partition) if args.partition else None
    x = xray(table, partition=partition, bucket=args.bucket)
    out = Output(as_json=args.json)
    drawn = None
    if args.out is not None:
        try:
            from laketide.inspect.xray_plot import save_xray
        except ImportError:  # pragma: no cover - matplotlib is an extra
            raise InvalidOptionError("xray --out needs matplotlib: pip install 'laketide[xray]'") from None
        drawn = save_xray(x, args.out)
    if args.json:
        data = x.to_json()
        if args.out is not None:
            data["picture"] = {"path": args.out, "bucket_panels": drawn}
        out.json(data)
        return
    render_text(out, x)
    if args.out is not None:
        more = f" (first {drawn} of {len(x.buckets)} buckets)" if drawn is not None and drawn < len(x.buckets) else ""
        out.console.print(f"wrote {args.out}{more}")


def _size(n: int) -> str:
    return f"{n:,} B"


def render_text(out: Output, x: TableXRay) -> None:
    from rich.tree import Tree

    root = Tree(f"[bold]{x.table}[/] at snapshot {x.snapshot_id}: {len(x.buckets)} buckets")
    for b in x.buckets:
        where = f"{b.partition} " if b.partition else ""
        node = root.add(f"[bold]{where}bucket {b.bucket}[/]: {len(b.files)} files, {len(b.runs)} sorted runs, "
                        f"{_size(sum(r.size for r in b.runs))}")
        for i, run in enumerate(b.runs):
            label = f"L{run.level} run {i}" if run.level == 0 else f"L{run.level}"
            run_node = node.add(f"[cyan]{label}[/]: {len(run.files)} files, {_size(run.size)}")
            for f in run.files:
                m = f.entry.file
                fill = dv_fill(f)
                dv = f"  dv {fill:.0%}" if fill is not None else ""
                keys = f"  keys [{f.min_key} .. {f.max_key}]" if f.min_key or f.max_key else ""
                run_node.add(f"{m.file_name}  {_size(m.file_size)}  {m.row_count:,} rows{keys}  "
                             f"seq [{m.min_sequence_number} .. {m.max_sequence_number}]{dv}")
    out.console.print(root)
    from rich.table import Table as RichTable

    t = RichTable(title="snapshot timeline")
    for name in ("snapshot", "kind", "time (UTC)", "files +", "files -", "records +", "records -"):
        t.add_column(name)
    for p in x.timeline:
        when = _dt.datetime.fromtimestamp(p.time_millis / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        style = "blue" if p.commit_kind == "COMPACT" else None
        t.add_row(str(p.snapshot_id), p.commit_kind, when, str(p.files_added), str(p.files_deleted),
                  f"{p.records_added:,}", f"{p.records_deleted:,}", style=style)
    out.console.print(t)
