"""What the fuzzing scripts of this folder share: whether atheris is here, and one libFuzzer campaign run in a child
process (`SCRIPT --run ARGS... FLAGS... CORPUS`) with its summary line: executions, coverage, crashes."""

from __future__ import annotations

import re
import subprocess
import sys
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
