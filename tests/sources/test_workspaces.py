"""Workspaces from dlt's config: names, inheritance, the settings a workspace must have itself,
and errors that name the workspace's own setting."""

from __future__ import annotations

import json

import pytest

from drone_ops_sync.sources.drone_ops import ConfigError, SourceConfig, read_workspace_config
from drone_ops_sync.sources.drone_ops.internal import (
    DEFAULT_WORKSPACE,
    configured_names,
    selected_names,
    workspace_dataset,
)

ROOT = "SOURCES__DRONE_OPS__"


def read_workspaces() -> dict[str, SourceConfig]:
    """Every configured workspace with its checked settings, as a fleet run reads them: all
    are checked before anything runs, the first bad one raising."""
    return {name: read_workspace_config(name) for name in selected_names(None)}


@pytest.fixture()
def fleet(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Top level (the default workspace) plus `acme` and `zen`, all from the environment."""
    monkeypatch.setenv(ROOT + "BASE_URL", "http://127.0.0.1:9001")
    monkeypatch.setenv(ROOT + "API_KEY", "key-default")
    monkeypatch.setenv(ROOT + "MAX_WORKERS", "6")
    monkeypatch.setenv(
        ROOT + "WORKSPACES",
        json.dumps(
            {
                "zen": {"base_url": "http://127.0.0.1:9003", "max_workers": 3},
                "acme": {"base_url": "http://127.0.0.1:9002"},
            }
        ),
    )
    monkeypatch.setenv(ROOT + "WORKSPACES__ACME__API_KEY", "key-acme")
    monkeypatch.setenv(ROOT + "WORKSPACES__ZEN__API_KEY", "key-zen")
    return monkeypatch


def test_without_named_workspaces_the_default_is_the_only_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ROOT + "BASE_URL", "http://127.0.0.1:9001")
    monkeypatch.setenv(ROOT + "API_KEY", "key-default")
    assert configured_names() == (DEFAULT_WORKSPACE,)
    ((name, only),) = read_workspaces().items()
    assert name == DEFAULT_WORKSPACE and only.base_url == "http://127.0.0.1:9001"
    assert workspace_dataset("drone_ops", DEFAULT_WORKSPACE) == "drone_ops"


def test_named_workspaces_inherit_all_but_their_address_and_key(fleet: pytest.MonkeyPatch) -> None:
    assert configured_names() == ("default", "acme", "zen")
    by_name = read_workspaces()
    assert by_name["acme"].base_url == "http://127.0.0.1:9002"
    assert by_name["acme"].api_key == "key-acme"
    assert by_name["acme"].max_workers == 6  # the top level's
    assert by_name["zen"].max_workers == 3  # its own
    assert by_name["default"].api_key == "key-default"
    assert workspace_dataset("drone_ops", "acme") == "drone_ops_acme"


def test_a_named_workspace_never_borrows_the_top_level_key(fleet: pytest.MonkeyPatch) -> None:
    fleet.delenv(ROOT + "WORKSPACES__ZEN__API_KEY")
    with pytest.raises(ConfigError) as raised:
        read_workspace_config("zen")
    assert str(raised.value) == (
        "sources.drone_ops.workspaces.zen.api_key: is not set: add it to .dlt/secrets.toml or"
        " set SOURCES__DRONE_OPS__WORKSPACES__ZEN__API_KEY"
    )
    # the others are still readable on their own
    assert read_workspace_config("acme").api_key == "key-acme"


def test_a_bad_value_names_the_workspace_setting(fleet: pytest.MonkeyPatch) -> None:
    fleet.setenv(ROOT + "WORKSPACES__ACME__MAX_WORKERS", "lots")
    with pytest.raises(ConfigError) as raised:
        read_workspace_config("acme")
    assert str(raised.value).startswith("sources.drone_ops.workspaces.acme.max_workers: 'lots'")
    fleet.setenv(ROOT + "WORKSPACES__ACME__BASE_URL", "http://api.example.com")
    fleet.delenv(ROOT + "WORKSPACES__ACME__MAX_WORKERS")
    with pytest.raises(ConfigError, match=r"^sources\.drone_ops\.workspaces\.acme\.base_url: "):
        read_workspace_config("acme")


def test_without_a_top_level_url_the_fleet_has_no_default(fleet: pytest.MonkeyPatch) -> None:
    fleet.delenv(ROOT + "BASE_URL")
    assert configured_names() == ("acme", "zen")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("Acme", "lowercase"),
        ("marts", "reserved"),
        ("eu_staging", "reserved"),
        ("all", "reserved"),
        ("9lives", "start with a letter"),
    ],
)
def test_names_that_cannot_be_a_schema_are_refused(
    fleet: pytest.MonkeyPatch, name: str, problem: str
) -> None:
    fleet.setenv(ROOT + "WORKSPACES", json.dumps({name: {"base_url": "http://127.0.0.1:1"}}))
    with pytest.raises(ConfigError, match=problem):
        read_workspaces()


def test_selection_by_flag(fleet: pytest.MonkeyPatch) -> None:
    assert selected_names(None) == ("default", "acme", "zen")
    assert selected_names(["all"]) == ("default", "acme", "zen")
    assert selected_names(["zen", "acme", "zen"]) == ("zen", "acme")
    with pytest.raises(ConfigError, match=r"^--workspace: 'north' is not configured"):
        selected_names(["north"])


def test_workspaces_that_are_not_a_table_are_refused(fleet: pytest.MonkeyPatch) -> None:
    fleet.setenv(ROOT + "WORKSPACES", "acme,zen")
    with pytest.raises(ConfigError, match="is not JSON"):
        configured_names()
    fleet.setenv(ROOT + "WORKSPACES", '["acme"]')
    with pytest.raises(ConfigError, match="table of workspaces by name"):
        configured_names()


def test_a_refused_key_names_the_workspace_setting(fleet: pytest.MonkeyPatch) -> None:
    """The 401 message of a named workspace points at its own key, not the top-level one."""
    import httpx

    from drone_ops_sync.sources.drone_ops import AuthError
    from drone_ops_sync.sources.drone_ops.internal import check_access

    refuse = httpx.MockTransport(lambda request: httpx.Response(401, json={"message": "no"}))
    with pytest.raises(AuthError) as raised:
        check_access(read_workspace_config("acme"), transport=refuse)
    assert "sources.drone_ops.workspaces.acme.api_key" in str(raised.value)
    assert "SOURCES__DRONE_OPS__WORKSPACES__ACME__API_KEY" in str(raised.value)
    with pytest.raises(AuthError, match=r"check sources\.drone_ops\.api_key \(env"):
        check_access(read_workspace_config(DEFAULT_WORKSPACE), transport=refuse)


def test_an_unreachable_or_wrong_api_names_the_workspace_address(
    fleet: pytest.MonkeyPatch,
) -> None:
    """Like the key: a named workspace's base_url is never inherited, so a message pointing at
    the top-level `sources.drone_ops.base_url` would send its user to the wrong setting (it
    did: seen on a fleet with one workspace's API down)."""
    import httpx

    from drone_ops_sync.sources.drone_ops import NotFoundError, UnreachableError
    from drone_ops_sync.sources.drone_ops.internal import check_access

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    acme = read_workspace_config("acme")
    with pytest.raises(UnreachableError, match=r"check sources\.drone_ops\.workspaces\.acme\."):
        check_access(acme, transport=httpx.MockTransport(refuse))
    missing = httpx.MockTransport(lambda request: httpx.Response(404, json={"message": "no"}))
    with pytest.raises(NotFoundError) as raised:
        check_access(acme, transport=missing)
    assert "check sources.drone_ops.workspaces.acme.base_url" in str(raised.value)
    with pytest.raises(UnreachableError, match=r"check sources\.drone_ops\.base_url and"):
        check_access(
            read_workspace_config(DEFAULT_WORKSPACE), transport=httpx.MockTransport(refuse)
        )
