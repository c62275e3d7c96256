"""What fresh memory costs on this machine, by how long it sat free: a check before trusting 8M / 2M ratios.

On a VM whose balloon device reports free pages to the host (virtio-balloon ``free page reporting``), memory the
guest freed a few seconds ago has been handed back to the host; touching it again faults on the host too. With
transparent huge pages a first touch also zeroes 2 MiB at a time. Measured on the bench machine (kernel time per
GiB touched): 0.09 s right after a free, 0.3-0.5 s after 3 s, ~1 s after 6 s, 1.8 s for memory never touched
before. A workload that faults in 0.5-1 GiB of fresh memory (an 8M-row read's result, a repetition that keeps the
previous one's rows) therefore moves by up to a second with what ran before it, in any engine: the pyarrow floor's
8M full read ranged 0.40-0.93 s within one run.

pyarrow's default pool (mimalloc) adds to it: it reserves 1 GiB arenas marked ``MADV_HUGEPAGE`` and hands freed
4 MiB pieces back with ``MADV_DONTNEED``, so a workload that frees and allocates hundreds of MiB again (an 8M-row
merge read's batches and result) faults huge pages in again and again. Measured: the first 8M merge read after
the table's write, the input rows still held, took 2.2-2.5 s with 2.4-2.6 s of kernel time under mimalloc, 1.4 s
with 0.6 s under the system allocator (``ARROW_DEFAULT_MEMORY_POOL=system``). ``make bench`` keeps pyarrow's
default, what users get; the report lists the pool among the machine facts.

Usage::

    python -m bench.memory_warmth [--mib 1024] [--gaps 0.05,3,6]

Prints the wall and kernel (system) seconds of touching ``--mib`` MiB of new memory after each idle gap.
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_PAGE = 4096
_BALLOON_DEVICE_ID = 0x0005  # virtio device id of a memory balloon
_BALLOON_F_REPORTING = 5  # VIRTIO_BALLOON_F_REPORTING: free page reporting


@dataclass(frozen=True, slots=True)
class Touch:
    gap_s: float
    wall_s: float
    system_s: float


def touch(mib: int) -> tuple[float, float]:
    """Wall and kernel seconds of allocating ``mib`` MiB and writing one byte per page."""
    t0, s0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
    buf = np.empty(mib << 20, dtype=np.uint8)
    buf[::_PAGE] = 1
    wall, system = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_stime - s0
    del buf
    return wall, system


def measure(mib: int, gaps: list[float]) -> list[Touch]:
    """One touch to start from, then one after each idle gap (the previous touch's memory freed before it)."""
    touch(mib)
    out = []
    for gap in gaps:
        time.sleep(gap)  # the idle time being measured, not a synchronization
        wall, system = touch(mib)
        out.append(Touch(gap, wall, system))
    return out


def machine_facts(sys_root: Path = Path("/sys")) -> dict[str, str]:
    """Transparent huge page mode and whether a balloon device reports free pages ('unknown' when not Linux)."""
    facts = {}
    thp = sys_root / "kernel/mm/transparent_hugepage/enabled"
    facts["transparent huge pages"] = thp.read_text().strip() if thp.exists() else "unknown"
    reporting = "no balloon device"
    for device in sorted((sys_root / "bus/virtio/devices").glob("*")):
        try:
            if int((device / "device").read_text(), 16) != _BALLOON_DEVICE_ID:
                continue
            bits = (device / "features").read_text().strip()
        except (OSError, ValueError):
            continue
        reporting = "yes" if len(bits) > _BALLOON_F_REPORTING and bits[_BALLOON_F_REPORTING] == "1" else "no"
    facts["balloon free page reporting"] = reporting
    return facts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--gaps", default="0.05,3,6", help="idle seconds before each touch, comma-separated")
    args = parser.parse_args(argv)
    for key, value in machine_facts().items():
        print(f"{key}: {value}")
    for t in measure(args.mib, [float(g) for g in args.gaps.split(",")]):
        print(f"after {t.gap_s:5.2f} s free: {args.mib} MiB touched in {t.wall_s:.3f} s wall, "
              f"{t.system_s:.3f} s kernel")


if __name__ == "__main__":
    main()
