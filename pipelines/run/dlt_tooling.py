"""Lets dlt's own command line and dashboard (`dlt pipeline <name> info|trace|schema|
load-package|show`) find each warehouse's pipeline without `--pipelines-dir`.

A run keeps dlt's working folder beside its warehouse (`.dlt_pipelines/<file>/<name>`), so
two warehouses never share pending packages. dlt's tooling looks only in its own folder
(`~/.dlt/pipelines`, `/var/dlt/pipelines` as root, or `$DLT_DATA_DIR/pipelines`). A symlink
there, named like the pipeline (`Target.pipeline_name`: one name per warehouse), bridges the
two. Because the name is the warehouse's, another warehouse's sync never re-points it; a
real folder of that name (a pipeline of someone else's) is never replaced.

Older versions kept one machine-wide link, `drone_ops`; when it still points at this
warehouse's old working folder (adopted by `old_layout.py`), it is removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import dlt

from .old_layout import old_link_target
from .target import OLD_PIPELINE_NAME, Target


def dlt_cli_folder() -> Path:
    """Where `dlt pipeline <name> ...` looks for pipelines when given no flag."""
    return Path(dlt.current.run_context().get_data_entity("pipelines"))


def link_for_dlt_cli(target: Target) -> str | None:
    """Points `<dlt's pipelines folder>/<pipeline name>` at this target's working folder;
    returns a note when it cannot (the run itself is never affected)."""
    name = target.pipeline_name()
    working = target.working_dir().resolve()
    if not working.is_dir():
        return None
    folder = dlt_cli_folder()
    _remove_old_link(folder / OLD_PIPELINE_NAME, old_link_target(target))
    link = folder / name
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


def _remove_old_link(link: Path, old_working: Path) -> None:
    """Removes the old machine-wide `drone_ops` link if it points at this warehouse's old
    working folder (now adopted under the new name, so the link dangles); a link to another
    warehouse is that warehouse's to clean up on its next sync."""
    try:
        if link.is_symlink() and Path(os.readlink(link)) == old_working.resolve():
            link.unlink()
    except OSError:
        return
