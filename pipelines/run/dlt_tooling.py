"""Lets dlt's own command line (`dlt pipeline drone_ops info|trace|schema|load-package`) find
the pipeline of the warehouse drone-sync last ran, without `--pipelines-dir`.

A run keeps dlt's working folder beside its warehouse (`.dlt_pipelines/<file>/drone_ops`), so
two warehouses never share pending packages. dlt's command line looks only in its default
folder (`~/.dlt/pipelines`, `/var/dlt/pipelines` as root, or `$DLT_DATA_DIR/pipelines`). A
symlink there, `drone_ops`, bridges the two: it points at the working folder of the latest
run, so the tooling shows the warehouse that was synced last, wherever it lives. A real folder
of that name (a pipeline of someone else's) is never replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

import dlt

from .target import PIPELINE_NAME, Target


def dlt_cli_folder() -> Path:
    """Where `dlt pipeline <name> ...` looks for pipelines when given no flag."""
    return Path(dlt.current.run_context().get_data_entity("pipelines"))


def link_for_dlt_cli(target: Target) -> str | None:
    """Points `<dlt's pipelines folder>/drone_ops` at this target's working folder; returns a
    note when it cannot (the run itself is never affected)."""
    working = (target.resolved_pipelines_dir() / PIPELINE_NAME).resolve()
    if not working.is_dir():
        return None
    link = dlt_cli_folder() / PIPELINE_NAME
    try:
        if link.is_symlink() and link.resolve() == working:
            return None
        if link.exists() and not link.is_symlink():
            return (
                f"dlt's tooling: {link} is a pipeline folder of its own, so `dlt pipeline"
                f" {PIPELINE_NAME}` shows that one; for this warehouse add"
                f" --pipelines-dir {working.parent}"
            )
        link.parent.mkdir(parents=True, exist_ok=True)
        staged = link.with_name(f".{PIPELINE_NAME}.link-{os.getpid()}")
        staged.unlink(missing_ok=True)
        staged.symlink_to(working, target_is_directory=True)
        os.replace(staged, link)
    except OSError as exc:
        return f"dlt's tooling: could not link {link} to {working}: {exc.strerror or exc}"
    return None
