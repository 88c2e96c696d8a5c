"""A sync in a child process, so a test can kill it at a moment it chooses from outside.

`python -m tests.chaos.child SPEC.json` runs `run_sync` as the spec says and writes what it
returned (or raised) to the spec's `out` file. `SyncChild` starts one with its own temp dir
(`TMPDIR`) and output files, and stops it only through its own process handle.

No hook in product code: the kill moment is chosen by watching the pipeline folder, the DuckDB
WAL and the simulator's request counter (`watch.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.zygote import Zygote

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Spec:
    database: Path
    pipelines_dir: Path
    overrides: dict[str, Any]
    out: Path
    dataset: str = "drone_ops"
    allow_mass_delete: bool = False

    def dump(self, path: Path) -> None:
        path.write_text(
            json.dumps(
                {
                    "database": str(self.database),
                    "pipelines_dir": str(self.pipelines_dir),
                    "overrides": self.overrides,
                    "out": str(self.out),
                    "dataset": self.dataset,
                    "allow_mass_delete": self.allow_mass_delete,
                }
            ),
            encoding="utf-8",
        )


def child_env(tmpdir: Path) -> dict[str, str]:
    """The environment of a child: no user sync settings, the repo importable, its own
    temp dir (so leftovers of a killed run are visible and belong to this test only)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SOURCES__", "DESTINATION__", "PYTEST_"))
    }
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    env["TMPDIR"] = str(tmpdir)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_zygote(workdir: Path) -> Zygote:
    """A zygote with the sync imported, whose children run a spec at once."""
    tmpdir = workdir / "systmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    preload = ["drone_ops_sync.pipelines.run.sync", "drone_ops_sync.sources.drone_ops"]
    return Zygote(workdir, [*preload, "tests.chaos.child"], child_env(tmpdir))


class SyncChild:
    """One child process running a sync (forked by a `Zygote`, or a fresh interpreter), or any
    `python -m` command line (`argv`)."""

    def __init__(
        self,
        workdir: Path,
        spec: Spec | None = None,
        argv: list[str] | None = None,
        env: dict[str, str] | None = None,
        name: str = "child",
        zygote: Zygote | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.tmpdir = workdir / "systmp"
        self.tmpdir.mkdir(exist_ok=True)
        self.log = workdir / f"{name}.log"
        self.spec = spec
        self.signalled: int | None = None
        self._zygote = zygote if spec is not None else None
        self.process: subprocess.Popen[bytes] | None = None
        self.started = time.monotonic()
        spec_path = workdir / f"{name}.spec.json"
        if spec is not None:
            spec.dump(spec_path)
        if self._zygote is not None:
            self.pid = self._zygote.spawn(
                {
                    "entry": "tests.chaos.child:main",
                    "argv": ["zygote", str(spec_path)],
                    "cwd": str(workdir),
                    "env_update": {"TMPDIR": str(self.tmpdir)},
                    "stdout": str(self.log),
                    "stderr": str(self.log),
                    "setsid": True,
                }
            )
            return
        environment = child_env(self.tmpdir)
        environment.update(env or {})
        if spec is not None:
            command = [sys.executable, "-m", "tests.chaos.child", str(spec_path)]
        else:
            assert argv is not None
            command = [sys.executable, "-m", *argv]
        with self.log.open("w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                command,
                cwd=workdir,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid = self.process.pid

    def alive(self) -> bool:
        if self._zygote is not None:
            return self._zygote.exit_code(self.pid) is None
        assert self.process is not None
        return self.process.poll() is None

    def send(self, sig: int) -> bool:
        """Sends `sig` to this child only; False when it had already exited."""
        if not self.alive():
            return False
        if self.process is not None:
            self.process.send_signal(sig)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
        self.signalled = sig
        return True

    def wait(self, timeout: float) -> int | None:
        """The exit code (negative: the signal), or None when it did not exit in time."""
        if self._zygote is not None:
            return self._zygote.wait(self.pid, timeout)
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """Kills it if it still runs (always by its own pid or handle)."""
        if not self.alive():
            return
        self.send(signal.SIGKILL)
        if self.wait(30) is None:
            raise RuntimeError(f"child {self.pid} survived SIGKILL")

    def result(self) -> dict[str, Any] | None:
        """What run_sync returned or raised; None if the child wrote nothing (killed)."""
        if self.spec is None or not self.spec.out.is_file():
            return None
        data: dict[str, Any] = json.loads(self.spec.out.read_text(encoding="utf-8"))
        return data

    def output(self, tail: int = 4000) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return text[-tail:]


def _outcome_dict(outcome: Any) -> dict[str, Any]:
    return {
        "ok": bool(outcome.ok),
        "run_id": outcome.report.run_id,
        "load_error": outcome.load_error,
        "notes": list(outcome.notes),
        "tables": {
            name: {
                "status": result.status,
                "error": result.error,
                "new": result.new,
                "changed": result.changed,
                "retired": result.retired,
            }
            for name, result in outcome.report.tables.items()
        },
    }


def _is_named(exc: BaseException) -> bool:
    """Whether the error is one the sync raises on purpose (a message meant for a person)."""
    try:
        from drone_ops_sync.sources.drone_ops import DroneOpsError
    except Exception:
        return False
    return isinstance(exc, DroneOpsError)


def main(argv: list[str] | None = None) -> int:
    """Runs the spec named by `argv[1]` (the command line when not given)."""
    argv = sys.argv if argv is None else argv
    # a child inherits an ignored SIGINT from some test runners; a user's Ctrl-C is not ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raw = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out = Path(raw["out"])
    started = time.monotonic()
    try:
        from drone_ops_sync.pipelines.run.target import Target
        from drone_ops_sync.pipelines.session import run_sync
        from drone_ops_sync.sources.drone_ops import read_source_config

        outcome = run_sync(
            Target(
                database=Path(raw["database"]),
                pipelines_dir=Path(raw["pipelines_dir"]),
                dataset=raw["dataset"],
            ),
            config=read_source_config(raw["overrides"]),
            allow_mass_delete=raw["allow_mass_delete"],
        )
        result = _outcome_dict(outcome)
    except BaseException as exc:
        result = {
            "named": _is_named(exc),
            "raised": type(exc).__name__,
            "module": type(exc).__module__,
            "message": str(exc),
            "traceback": traceback.format_exc()[-4000:],
        }
    result["seconds"] = round(time.monotonic() - started, 3)
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(result), encoding="utf-8")
    partial.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
