"""A server process's own CPU time and context switches, read from ``/proc``, for per-request figures.

Why: on this shared 2-core machine requests per second move with the neighbours' load (the same
code gave 0.66 and 1.14 of a ratio a minute apart), while the CPU a server spends per request
moves far less: the server is pinned to one core, and ``/proc/<pid>/stat`` counts its own time
only, every thread included. The context switches (summed over the process's threads) show what
costs a thread hop beyond CPU. On 2026-11-28 a change that cut a sync call's CPU in process doubled
its switches per request under ``wrk`` and lost 2-15 % req/s. With no caller waiting, it lost as much
at the same switch count (docs/performance.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Clock ticks per second of ``/proc/<pid>/stat``'s utime and stime.
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Reading:
    cpu_s: float
    voluntary: int
    involuntary: int

    def per_request(self, later: Reading, requests: int) -> tuple[float, float]:
        """CPU µs a request and context switches a request between this reading and ``later``."""
        n = max(1, requests)
        switches = (later.voluntary - self.voluntary) + (later.involuntary - self.involuntary)
        return (later.cpu_s - self.cpu_s) * 1e6 / n, switches / n


def read(pid: int) -> Reading | None:
    """The process's CPU seconds (all threads) and context switches so far; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        voluntary = involuntary = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                status = (task / "status").read_text()
            except OSError:  # a thread that just ended
                continue
            for line in status.splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary += int(line.split()[1])
    except OSError:
        return None
    # After the ")" of the command name: state is field 0, utime field 11, stime field 12 (stat(5) 14 and 15).
    return Reading((int(fields[11]) + int(fields[12])) / TICKS, voluntary, involuntary)


def family(pid: int) -> list[int]:
    """``pid`` and its children (gunicorn's or uvicorn's workers), from ``/proc``."""
    pids = [pid]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        if ppid == pid:
            pids.append(int(entry.name))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds so far of ``pids`` (every thread), 0 for one that is gone."""
    return sum(r.cpu_s for r in (read(p) for p in pids) if r is not None)
