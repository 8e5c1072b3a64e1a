#!/usr/bin/env python3
"""Where a pass's time goes, per test file: ``scripts/file_times.py PASS.xml... [--top N]``.

Reads the JUnit XML that ``make test`` has each pytest run write (``.test-junit/<pass>.xml``) and
prints, per pass, the files by their summed test time (setup, call and teardown: a module's shared
server counts in its first test's setup). With ``--dist loadfile`` a file runs on one worker, so a
file near the pass's wall time is the one to split or make cheaper.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for report in args.reports:
        if not report.exists():
            continue
        seconds: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for case in ET.parse(report).iter("testcase"):
            name = _module(case.get("classname", "?"))
            seconds[name] += float(case.get("time", 0))
            counts[name] += 1
        total = sum(seconds.values())
        print(f"== {report.stem}: {total:.0f} s of tests in {len(seconds)} files; the {args.top} longest ==")
        for name, spent in sorted(seconds.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"{spent:8.1f} s  {counts[name]:4d} tests  {name}")
    return 0


def _module(classname: str) -> str:
    """``tests.test_x`` of ``tests.test_x`` and of ``tests.test_x.TestCase``."""
    parts = classname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[: i + 1])
    return classname


if __name__ == "__main__":
    sys.exit(main())
