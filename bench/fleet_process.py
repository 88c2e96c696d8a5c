"""A command measured as a process tree, for `python -m bench fleet` (Linux: reads `/proc`).

`drone-sync run` over a fleet is one process that starts one `drone-sync run --workspace`
process per workspace, so neither the parent's own figures nor `ru_maxrss` (the largest single
process, not the sum) say what the fleet costs. Here:

- wall time: from just before the start to the exit of the root process;
- CPU: user + system of the root and every descendant it reaped (`os.wait4` on the root: the
  fleet waits for each workspace's process, so their CPU is in its children's usage);
- peak RSS of the tree: every 50 ms the tree is walked from the root (parents read from
  `/proc/<pid>/stat`) and its processes' RSS summed; the peak is the highest sum. A sum of RSS
  counts shared pages (libraries) once per process, so the proportional set size (PSS, from
  `smaps_rollup`), which splits them, is summed beside it.

Processes that are not ours (the simulators, the PostgreSQL server) are measured apart by
`cpu_seconds_of`, before and after. Their memory can be sampled with the command's: each is
named with the root of its own tree (`beside`), walked at the same instants, so the peak of the
sum over the same samples is what the machine held at once, not a sum of peaks taken at
different times.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE_SECONDS = 0.05
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """`/proc/<pid>/stat` after the command name (which may hold spaces), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds_of(pid: int, *, with_children: bool = False) -> float:
    """User + system CPU of a live process (and of the children it reaped, if asked): for the
    processes that are not ours, read before and after each measurement."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    # fields[0] is the state: utime, stime, cutime, cstime are stat's 14th to 17th fields
    ticks = int(fields[11]) + int(fields[12])
    if with_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _TICKS


def machine_busy_seconds() -> float:
    """CPU seconds every process on the machine has used so far (all cores, not idle or
    waiting on I/O), from `/proc/stat`: before and after a measurement, the difference less
    ours and the simulators' is what other work took from the same cores."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (sum(fields[:8]) - fields[3] - fields[4]) / _TICKS


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def tree_pids(root: int, children: Mapping[int, list[int]] | None = None) -> list[int]:
    """The root and every live descendant (from `children`, one reading of `/proc` that several
    trees may share, or a fresh one)."""
    children = _children_map() if children is None else children
    pids, queue = [], [root]
    while queue:
        pid = queue.pop()
        pids.append(pid)
        queue.extend(children.get(pid, []))
    return pids


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return 0
    return 0


@dataclass
class TreePeak:
    """The highest sums seen over the tree's samples, and over it with the trees beside it."""

    rss_kb: int = 0
    pss_kb: int = 0
    processes: int = 0
    samples: int = 0
    root_rss_kb: int = 0
    """The root process's own peak (the fleet's coordinator, or the single run itself)."""
    root_cpu_seconds: float = 0.0
    """The root's own CPU at its last sample (without its children's)."""
    beside_rss_kb: dict[str, int] = field(default_factory=dict)
    """Each tree beside the command's (by its name): its own peak RSS."""
    whole_rss_kb: int = 0
    """The peak of the command's tree plus every tree beside it, summed at each sample."""
    whole_pss_kb: int = 0

    def sample(self, root: int, beside: Mapping[str, int] | None = None) -> None:
        children = _children_map()
        pids = tree_pids(root, children)
        self.root_rss_kb = max(self.root_rss_kb, _rss_kb(root))
        self.root_cpu_seconds = max(self.root_cpu_seconds, cpu_seconds_of(root))
        rss = sum(_rss_kb(pid) for pid in pids)
        pss = sum(_pss_kb(pid) for pid in pids)
        self.rss_kb = max(self.rss_kb, rss)
        self.pss_kb = max(self.pss_kb, pss)
        for name, other in (beside or {}).items():
            other_pids = [pid for pid in tree_pids(other, children) if pid not in pids]
            other_rss = sum(_rss_kb(pid) for pid in other_pids)
            self.beside_rss_kb[name] = max(self.beside_rss_kb.get(name, 0), other_rss)
            rss += other_rss
            pss += sum(_pss_kb(pid) for pid in other_pids)
        self.whole_rss_kb = max(self.whole_rss_kb, rss)
        self.whole_pss_kb = max(self.whole_pss_kb, pss)
        self.processes = max(self.processes, len(pids))
        self.samples += 1


@dataclass
class Measured:
    """One command's figures, and what it printed as JSON events."""

    exit_code: int
    wall_seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    peak_pss_mb: float
    largest_process_rss_mb: float
    processes: int
    samples: int
    root_peak_rss_mb: float
    root_cpu_seconds: float
    tree_peak_rss_mb: float
    """The command's tree and the trees beside it, summed at each sample: the peak sum."""
    tree_peak_pss_mb: float
    beside_peak_rss_mb: dict[str, float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    output_tail: str = ""

    def summary(self) -> dict[str, Any]:
        """The command's final `summary` event (empty if it printed none)."""
        return next((e for e in reversed(self.events) if e.get("event") == "summary"), {})


def measure_command(
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 7200.0,
    *,
    beside: Mapping[str, int] | None = None,
) -> Measured:
    """Runs `command` to its end, sampling its process tree (and the trees rooted at `beside`'s
    pids with it); JSON lines on its stdout are kept as events, everything else (stderr too) as
    the output's tail."""
    cwd.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    started = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    stream = process.stdout
    reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    reader.start()
    peak = TreePeak()
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            break
        if time.monotonic() - started > timeout:
            process.kill()
            continue
        peak.sample(process.pid, beside)
        time.sleep(SAMPLE_SECONDS)
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    reader.join(timeout=10)
    stream.close()
    events = []
    for line in lines:
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return Measured(
        exit_code=process.returncode,
        wall_seconds=round(wall, 3),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
        peak_rss_mb=round(peak.rss_kb / 1024, 1),
        peak_pss_mb=round(peak.pss_kb / 1024, 1),
        largest_process_rss_mb=round(usage.ru_maxrss / 1024, 1),
        processes=peak.processes,
        samples=peak.samples,
        root_peak_rss_mb=round(peak.root_rss_kb / 1024, 1),
        root_cpu_seconds=round(peak.root_cpu_seconds, 2),
        tree_peak_rss_mb=round(peak.whole_rss_kb / 1024, 1),
        tree_peak_pss_mb=round(peak.whole_pss_kb / 1024, 1),
        beside_peak_rss_mb={k: round(v / 1024, 1) for k, v in peak.beside_rss_kb.items()},
        events=events,
        output_tail="".join(line for line in lines if not line.startswith("{"))[-3000:],
    )
