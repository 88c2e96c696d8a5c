"""Suite-wide isolation: dlt's data folder lives in pytest's temporary folder.

As root dlt ignores HOME and uses /var/dlt; a run started in-process by a test (the CLI's
`main`, the demo) would otherwise leave its `drone_ops` link for dlt's tooling, or a server
destination's working folder, on the machine. Subprocess runs get their own folder from
tests/pipelines/cli_helpers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _dlt_data_dir_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLT_DATA_DIR", str(tmp_path_factory.mktemp("dlt-data")))
        yield
