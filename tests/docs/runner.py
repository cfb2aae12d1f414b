"""Running a page's examples as a reader would, from an empty directory.

Each page gets a fresh temporary directory: ``work/`` is the current directory of every block
(so the files a page writes land there, and ``scripts/``, ``sql/`` and ``benchmarks/retrieval/``
are copied in, as in a checkout), ``home/`` is ``HOME`` and holds ``HOTMEM_HOME``, ``tmp/`` is
``TMPDIR``. The project's environment comes first on ``PATH`` (``hotmem``, ``hotmem-eval``,
``python``), and ``uv run`` finds the project through ``UV_PROJECT`` and runs in that same
environment without syncing (``UV_NO_SYNC``), so a page's ``uv run hotmem ...`` runs as it does
in a synced checkout, with its files written to ``work/`` and never to the checkout.

Blocks run in page order and each must succeed: a ``bash`` block as one ``bash -e -o pipefail``
script, a ``python`` block as one script, a ``console`` block as one shell session, command by
command. Output is checked where the page shows it (``blocks.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.docs.blocks import RUNNABLE, Block, blocks_of, commands_of, matches

__all__ = ["ROOT", "PageRun", "run_page"]

ROOT = Path(__file__).resolve().parents[2]
#: What a page may read from the checkout, copied into its directory.
CHECKOUT_PARTS = ("scripts", "sql", "benchmarks/retrieval")
#: A block that runs longer than this fails.
TIMEOUT = 600
_MARK = "@@doc-test-command-{}@@"


class ExampleFailed(AssertionError):
    """A block failed or printed something else than the page shows."""


@dataclass(frozen=True, slots=True)
class PageRun:
    """What running a page left: the names it created in its directory."""

    page: Path
    created: frozenset[str]


def _environment(base: Path) -> dict[str, str]:
    uv = shutil.which("uv") or os.environ.get("UV")
    if uv is None:
        raise ExampleFailed("uv is not on PATH: the pages run 'uv run ...' (see .ci/run)")
    path = [str(Path(sys.executable).parent), str(Path(uv).parent), os.environ.get("PATH", "")]
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HOTMEM", "UV_", "PYTHON")) and key != "VIRTUAL_ENV"
    }
    env.update(
        PATH=os.pathsep.join(path),
        HOME=str(base / "home"),
        HOTMEM_HOME=str(base / "home" / ".hotmem"),
        TMPDIR=str(base / "tmp"),
        UV_PROJECT=str(ROOT),
        UV_PROJECT_ENVIRONMENT=sys.prefix,
        VIRTUAL_ENV=sys.prefix,
        UV_NO_SYNC="1",
        UV_OFFLINE="1",
        UV_CACHE_DIR=str(base / "home" / ".cache" / "uv"),
        PYTHONUNBUFFERED="1",
        COLUMNS="100",
        LC_ALL="C.UTF-8",
    )
    return env


def _prepare(base: Path) -> Path:
    for name in ("work", "home", "tmp", "scripts-of-the-page"):
        (base / name).mkdir()
    work = base / "work"
    for part in CHECKOUT_PARTS:
        shutil.copytree(ROOT / part, work / part)
    return work


def _failure(block: Block, what: str, output: str, expected: str | None = None) -> ExampleFailed:
    text = f"{block.where}: {what}\n--- the block ---\n{block.code}--- its output ---\n{output}"
    if expected is not None:
        text += f"--- the page shows ---\n{expected}"
    return ExampleFailed(text)


def _execute(argv: list[str], work: Path, env: dict[str, str]) -> tuple[int, str]:
    completed = subprocess.run(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        check=False,
    )
    return completed.returncode, completed.stdout.decode("utf-8", "backslashreplace")


def _run_script(block: Block, base: Path, work: Path, env: dict[str, str]) -> None:
    if RUNNABLE[block.language] == "python":
        script = base / "scripts-of-the-page" / f"line-{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        code, output = _execute([sys.executable, str(script)], work, env)
    else:
        code, output = _execute(["bash", "-e", "-o", "pipefail", "-c", block.code], work, env)
    if code != 0:
        raise _failure(block, f"exited {code}", output)
    if block.output is not None and not matches(block.output, output):
        raise _failure(
            block, f"the output differs from line {block.output_line}", output, block.output
        )


def _run_console(block: Block, work: Path, env: dict[str, str]) -> None:
    commands = commands_of(block)
    script = ["exec 2>&1", "set -o pipefail"]
    for number, command in enumerate(commands):
        script.append(command.text)
        script.append(f'__rc=$?; printf "\\n{_MARK.format(number)} %d\\n" "$__rc"; (exit $__rc)')
    code, output = _execute(["bash", "-c", "\n".join(script)], work, env)
    rest = output
    for number, command in enumerate(commands):
        mark = _MARK.format(number)
        if mark not in rest:
            raise _failure(block, f"line {command.line}: the session ended (exit {code})", output)
        printed, rest = rest.split(mark, 1)
        status_text, rest = rest.split("\n", 1) if "\n" in rest else (rest, "")
        status = int(status_text.strip())
        acknowledged = number + 1 < len(commands) and commands[number + 1].text.strip() == "echo $?"
        if status != 0 and not acknowledged:
            what = f"line {command.line}: {command.text!r} exited {status} (show it: $ echo $?)"
            raise _failure(block, what, printed)
        if not matches(command.output, printed):
            what = f"line {command.line}: {command.text!r} printed something else"
            raise _failure(block, what, printed, command.output)


def run_page(page: Path, base: Path) -> PageRun:
    """Run every runnable block of ``page`` in order, in a fresh directory under ``base``.

    Raises:
        ExampleFailed: a block failed, or its output is not the one the page shows.
    """
    work = _prepare(base)
    env = _environment(base)
    for block in blocks_of(page):
        if not block.runs:
            continue
        if RUNNABLE[block.language] == "console":
            _run_console(block, work, env)
        else:
            _run_script(block, base, work, env)
    copied = {part.split("/")[0] for part in CHECKOUT_PARTS}
    return PageRun(page, frozenset(p.name for p in work.iterdir()) - copied)
