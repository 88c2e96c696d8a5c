"""The rules of `pipelines/observe/` that need no run: which URLs may be sent to, how an age
is read, what the textfile looks like for odd table names, and that a receiver that answers
badly or not at all is one warning, never an exception."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from drone_ops_sync.pipelines.observe.lineage import lineage_targets
from drone_ops_sync.pipelines.observe.metrics import previous_successes, render
from drone_ops_sync.pipelines.observe.status import human_age, parse_max_age
from drone_ops_sync.pipelines.observe.transport import checked_url, post_json
from drone_ops_sync.sources.drone_ops import ConfigError

from .cli_helpers import closed_loopback_port
from .receiver import running_receiver
from .test_observe_e2e import parse_textfile


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/T/B/x",
        "http://127.0.0.1:9/x",
        "http://localhost/x",
        "http://[::1]/",
    ],
)
def test_https_anywhere_and_http_only_to_loopback(url: str) -> None:
    assert checked_url("runtime.slack_incoming_hook", url) == url


@pytest.mark.parametrize(
    "url", ["http://hooks.example.com/T/B/x", "http://10.0.0.1/x", "ftp://127.0.0.1/", "hook"]
)
def test_other_urls_are_a_config_error_naming_the_setting(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        checked_url("runtime.slack_incoming_hook", url)
    assert "runtime.slack_incoming_hook" in str(raised.value)
    assert "/T/B/x" not in str(raised.value)


def test_lineage_url_is_checked_the_same_way() -> None:
    assert lineage_targets({}) is None
    with pytest.raises(ConfigError, match="OPENLINEAGE_URL"):
        lineage_targets({"OPENLINEAGE_URL": "http://marquez.example.com"})
    targets = lineage_targets({"OPENLINEAGE_URL": "http://127.0.0.1:5000/"})
    assert targets is not None and targets.url == "http://127.0.0.1:5000/api/v1/lineage"


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("45m", 2700), ("2h", 7200), ("1d", 86400), ("30", 30)]
)
def test_max_age_reads_units(text: str, seconds: float) -> None:
    assert parse_max_age(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5m", "soon", "5 weeks", ""])
def test_bad_max_age_names_the_flag(text: str) -> None:
    with pytest.raises(ConfigError, match="--max-age"):
        parse_max_age(text)


def test_ages_read_as_people_say_them() -> None:
    assert [human_age(s) for s in (5, 190, 2700, 7500, 90000)] == [
        "5s",
        "3m 10s",
        "45m",
        "2h 5m",
        "1d 1h",
    ]


def test_textfile_escapes_labels_and_reads_back_its_last_successes(tmp_path: Path) -> None:
    row = {"status": "success", "new": 1, "changed": 2, "retired": 3, "requests": 4, "retries": 0}
    summary = {"exit_code": 0, "seconds": 1.5, "tables": {'we"ird\\name': row}}
    text = render(summary, {"projects": 100.0}, now=200.0)
    assert 'drone_sync_last_run_rows{table="we\\"ird\\\\name",kind="retired"} 3' in text
    plain = parse_textfile(render({**summary, "tables": {"jobs": row}}, {}, now=200.0))
    assert plain[("drone_sync_last_run_duration_seconds", frozenset())] == 1.5
    assert (
        plain[("drone_sync_last_success_timestamp_seconds", frozenset({("table", "jobs")}))] == 200
    )
    path = tmp_path / "m.prom"
    path.write_text(text)
    assert previous_successes(path) == {"projects": 100.0, 'we"ird\\name': 200.0}


def test_undeliverable_posts_are_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    closed = f"http://127.0.0.1:{closed_loopback_port()}/hook"
    assert post_json(closed, {"text": "x"}, what="alert") is False
    with running_receiver(status=500) as receiver:
        assert post_json(receiver.url, {"text": "x"}, what="alert") is False
        assert len(receiver.received()) == 1, "one attempt, no retries"
    with running_receiver() as receiver:
        assert post_json(receiver.url, {"text": "x"}, what="alert") is True
        assert receiver.received()[0].body == {"text": "x"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and all("alert not delivered" in w for w in warnings), warnings
    assert not any("127.0.0.1" in w for w in warnings), warnings


UNITS = ("seconds", "bytes", "ratio", "celsius", "meters", "volts", "amperes", "joules", "grams")
"""Prometheus' base units: a value in one of them says so as the name's suffix."""
NOT_BASE_UNITS = ("milliseconds", "ms", "minutes", "hours", "days", "kilobytes", "megabytes")


def test_every_metric_of_the_textfile_follows_prometheus_naming_conventions() -> None:
    """Parsed by Prometheus' own client library, not by our reader: each family has HELP and a
    type; a gauge (a per-run value, written afresh each run) does not end in `_total`, which
    promises a counter; a counter does; a unit is a base unit, in the plural, as the suffix;
    and a name says what it measures besides its unit (not `drone_sync_seconds`)."""
    row = {"status": "success", "new": 1, "changed": 2, "retired": 3, "requests": 4, "retries": 1}
    summary = {"exit_code": 0, "seconds": 1.5, "tables": {"projects": row, "jobs": row}}
    families = list(text_string_to_metric_families(render(summary, {"users": 100.0}, now=200.0)))
    assert families, "the textfile holds no metric"
    for family in families:
        name, kind = family.name, family.type
        assert name.startswith("drone_sync_"), name
        assert family.documentation.strip(), f"{name} has no HELP"
        assert kind in ("gauge", "counter"), (name, kind)
        sample_names = {sample.name for sample in family.samples}
        assert sample_names, f"{name} has no sample"
        if kind == "gauge":
            assert not name.endswith("_total"), f"gauge {name} ends in _total, kept for counters"
            assert sample_names == {name}, (name, sample_names)
        else:
            assert sample_names == {f"{name}_total"}, f"counter {name}: {sample_names}"
        words = name.removeprefix("drone_sync_").split("_")
        for unit in UNITS:
            if unit in words:
                assert words[-1] == unit, f"{name}: the unit {unit} is not the suffix"
                assert len(words) > 1, f"{name} says its unit but not what it measures"
        assert not set(words) & set(NOT_BASE_UNITS), f"{name} is not in a base unit"
    names = {family.name for family in families}
    assert not {"drone_sync_requests_total", "drone_sync_retries_total"} & names
    assert "drone_sync_seconds" not in names
