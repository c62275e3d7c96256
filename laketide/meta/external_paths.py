"""Where a new data file goes when ``data-file.external-paths`` sends data files outside the table directory.

The file lands at ``<external root>/<relative bucket path>/<file name>``; the full path is recorded in the file's
``DataFileMeta.external_path`` (readers never derive it). One provider per (partition, bucket) writer, as in Java:
round-robin starts at a random root and then cycles; entropy-inject also cycles, from the second root, and adds
hash directories; weight-robin draws a root at random with the configured weights.

Paimon: fs.ExternalPathProvider, fs.RoundRobinExternalPathProvider, fs.EntropyInjectExternalPathProvider,
fs.WeightedExternalPathProvider, AbstractFileStore#createExternalPaths
"""

from __future__ import annotations

import bisect
import itertools
import random
import re
import threading
from collections.abc import Sequence

from laketide.exceptions import InvalidOptionError
from laketide.options import CoreOptions, ExternalPathStrategy

__all__ = ["ExternalPathProvider", "entropy_dirs", "external_roots", "murmur3_32"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


def external_roots(options: CoreOptions, *, table_name: str = "") -> tuple[str, ...]:
    """The roots new data files may be written under: none when the option is unset or the strategy is ``none``.

    Java refuses a root without a scheme, and with ``specific-fs`` keeps only the roots of that scheme.
    """
    raw = options.data_file_external_paths
    strategy = options.external_path_strategy
    if not raw or strategy is ExternalPathStrategy.NONE:
        return ()
    where = f"Table {table_name}: " if table_name else ""
    specific = options.external_specific_fs
    if strategy is ExternalPathStrategy.SPECIFIC_FS and not specific:
        raise InvalidOptionError(f"{where}'data-file.external-paths.strategy' = 'specific-fs' needs "
                                 f"'data-file.external-paths.specific-fs' (the scheme to use, e.g. s3)")
    roots = []
    for part in raw.split(","):
        root = part.strip().rstrip("/")
        m = _SCHEME.match(root)
        if m is None:
            raise InvalidOptionError(f"{where}'data-file.external-paths' entry {part.strip()!r} has no scheme; "
                                     f"write it as a URI (file:///data/x, s3://bucket/x)")
        if ".." in root.split("/"):
            raise InvalidOptionError(f"{where}'data-file.external-paths' entry {part.strip()!r} contains '..'")
        if strategy is not ExternalPathStrategy.SPECIFIC_FS or m.group(1).lower() == (specific or "").lower():
            roots.append(root)
    if not roots:
        raise InvalidOptionError(f"{where}'data-file.external-paths' leaves no external path for strategy "
                                 f"{strategy.value!r} (specific-fs {specific!r})")
    weights = options.external_path_weights
    if strategy is ExternalPathStrategy.WEIGHTED and weights is not None and len(roots) >= 2 \
            and len(weights) != len(roots):
        raise InvalidOptionError(f"{where}'data-file.external-paths.weights' has {len(weights)} weights for "
                                 f"{len(roots)} external paths; give one per path")
    return tuple(roots)


class ExternalPathProvider:
    """Hands out the external path of each new file of one (partition, bucket) writer."""

    def __init__(self, strategy: ExternalPathStrategy, roots: Sequence[str], relative_bucket_path: str,
                 weights: Sequence[int] | None = None, *, rng: random.Random | None = None) -> None:
        self.roots = tuple(roots)
        self.relative = relative_bucket_path
        self._rng = rng or random.Random()
        self._lock = threading.Lock()  # writers of one bucket may roll files from several threads
        self._entropy = strategy is ExternalPathStrategy.ENTROPY_INJECT
        self._cumulative: list[int] | None = None
        if strategy is ExternalPathStrategy.WEIGHTED and weights is not None and len(self.roots) >= 2:
            self._cumulative = list(itertools.accumulate(weights))
        # Java: round-robin starts at a random root; entropy-inject at 0. Both advance before choosing.
        self._position = 0 if self._entropy else self._rng.randrange(len(self.roots))

    def next_path(self, file_name: str) -> str:
        if self._cumulative is not None:
            draw = self._rng.random() * self._cumulative[-1]
            root = self.roots[bisect.bisect_right(self._cumulative, draw)]
            return f"{root}/{self.relative}/{file_name}"
        with self._lock:
            self._position = (self._position + 1) % len(self.roots)
            root = self.roots[self._position]
        if self._entropy:
            return f"{root}/{self.relative}/{entropy_dirs(file_name)}/{file_name}"
        return f"{root}/{self.relative}/{file_name}"


def entropy_dirs(file_name: str) -> str:
    """The last 20 bits of murmur3_32(name) in binary, split ``4/4/4/8`` (EntropyInjectExternalPathProvider)."""
    bits = format(murmur3_32(file_name.encode("utf-8")) | 0x80000000, "032b")[-20:]
    return f"{bits[0:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit (Guava's ``Hashing.murmur3_32()``), unsigned. File names are short: plain Python."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h
