"""Lets dlt's own command line and dashboard (`dlt pipeline <name> info|trace|...`) find each
warehouse's pipeline without `--pipelines-dir` (docs/dlt-tooling.md).

dlt's tooling looks only in its own folder, while a run keeps the working folder beside its
warehouse; a symlink there named like the pipeline (one name per warehouse) bridges the two.
Another warehouse's sync never re-points it, and a real folder of that name is never replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

import dlt

from .target import Target


def link_for_dlt_cli(target: Target) -> str | None:
    """Points `<dlt's pipelines folder>/<pipeline name>` at this target's working folder;
    returns a note when it cannot (the run itself is never affected)."""
    name = target.pipeline_name()
    working = target.working_dir().resolve()
    if not working.is_dir():
        return None
    # where `dlt pipeline <name> ...` looks for pipelines when given no flag
    link = Path(dlt.current.run_context().get_data_entity("pipelines")) / name
    try:
        if link.is_symlink() and link.resolve() == working:
            return None
        if link.exists() and not link.is_symlink():
            return (
                f"dlt's tooling: {link} is a pipeline folder of its own, so `dlt pipeline"
                f" {name}` shows that one; for this warehouse add"
                f" --pipelines-dir {working.parent}"
            )
        link.parent.mkdir(parents=True, exist_ok=True)
        staged = link.with_name(f".{name}.link-{os.getpid()}")
        staged.unlink(missing_ok=True)
        staged.symlink_to(working, target_is_directory=True)
        os.replace(staged, link)
    except OSError as exc:
        return f"dlt's tooling: could not link {link} to {working}: {exc.strerror or exc}"
    return None
