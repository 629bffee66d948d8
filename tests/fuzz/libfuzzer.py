"""What the fuzzing scripts of this folder share: whether atheris is here, one libFuzzer campaign run in a child
process (`SCRIPT --run ARGS... FLAGS... CORPUS`) with its summary line: executions, coverage, crashes, and the
scripts' command line (`main`: --target, --seconds, --work, --libfuzzer)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path


def have_atheris(what: str) -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        print(f"fuzz {what}: atheris is not installed (pip install -e '.[dev]' on Linux x86-64); skipped")
        return False
    return True


def campaign(what: str, script: str, args: list[str], work: Path, seconds: int, max_len: int,
             extra: list[str] | None = None, env: dict[str, str] | None = None, seeds: int | None = None) -> int:
    """Fuzz for `seconds` from the corpus in `work/corpus`; crashes land in `work`. Prints one line; the status."""
    flags = [f"-max_total_time={seconds}", f"-max_len={max_len}", "-rss_limit_mb=4096", "-timeout=20",
             f"-artifact_prefix={work}/", "-print_final_stats=1", *(extra or []), str(work / "corpus")]
    r = subprocess.run([sys.executable, script, "--run", *args, *flags], capture_output=True, text=True, env=env)
    done = [line for line in r.stderr.splitlines() if re.match(r"#\d+\s+DONE", line)]
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stderr)
    crashes = sorted(str(c) for c in work.glob("crash-*")) + sorted(str(c) for c in work.glob("timeout-*"))
    print(f"fuzz {what}: {'' if seeds is None else f'{seeds} seeds, '}{runs[1] if runs else '?'} executions in "
          f"{seconds} s; {done[-1].split(None, 2)[2] if done else 'no final line'}; {len(crashes)} crashes {crashes}")
    if r.returncode != 0:
        print(r.stderr[-6000:])
    return r.returncode


def main(doc: str, targets: Iterable[str], campaign: Callable[[str, int, Path, list[str]], int], name: str,
         argv: list[str] | None = None) -> int:
    """A fuzzing script's command line: `campaign(target, seconds, work, libfuzzer_flags)` for the target named (or
    every one), in `--work` or a temporary folder; the statuses or-ed."""
    targets = list(targets)
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--target", choices=[*targets, "all"], default="all")
    p.add_argument("--seconds", type=int, default=60, help="how long to fuzz each target (default 60)")
    p.add_argument("--work", help="the folder of the corpora and any crash (default: a temporary one)")
    p.add_argument("--libfuzzer", nargs=argparse.REMAINDER, default=[], help="libFuzzer's flags, as they are")
    a = p.parse_args(argv)
    if not have_atheris(f"{name}{a.target}"):
        return 0
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix=f"cvmc-fuzz-{name.replace(' ', '-')}"))
    status = 0
    for target in targets if a.target == "all" else [a.target]:
        status |= campaign(target, a.seconds, work / target, a.libfuzzer)
    return status
