"""The one config checker: every file phrases unknown keys, types and bounds the same way, at their lines.

Each file's own tests check its rules; these check the shared phrasing and that the files not covered
elsewhere (config/cireil.toml) report every problem at once with FILE:LINE.
"""

from __future__ import annotations

import pytest

from cireil.runtime.base import params
from cireil.runtime.base.didyoumean import did_you_mean
from cireil.runtime.config.checker import Checker, expectation, label, unknown_key
from cireil.runtime.config.tomlsource import TomlSource
from cireil.runtime.recorder.settings import SettingsError, load_settings


def check(text: str, fields: dict, where: tuple = ("t",)) -> tuple[dict | None, list[str]]:
    source = TomlSource.parse("config/x.toml", text)
    checker = Checker(source)
    clean = checker.table(where, source.data.get(where[0], {}) if where else source.data, fields)
    return clean, [str(i) for i in checker.issues]


def test_unknown_keys_are_phrased_one_way_with_did_you_mean_or_the_expected_keys():
    assert unknown_key("timout", ["timeout", "url"]) == "unknown key 'timout' (did you mean 'timeout'?)"
    assert unknown_key("zzz", ["timeout", "url"], ("servers", "a")) == (
        "unknown key 'zzz' in [servers.a] (expected: timeout, url)"
    )
    assert unknown_key("x", ["a"], ("mounts", 0)) == "unknown key 'x' in mounts[0] (expected: a)"
    assert unknown_key("x", [], ("t",)) == "unknown key 'x' in [t] (expected: no keys)"
    assert unknown_key("binaries", ["a"], ("exec",), hint=" (see sandbox.toml)") == (
        "unknown key 'binaries' in [exec] (see sandbox.toml)"
    )
    assert did_you_mean("maxTurn", ["maxTurns", "models"]) == "maxTurns"
    assert did_you_mean("qqq", ["maxTurns"]) is None


def test_labels_are_written_as_toml_writes_the_key():
    assert label("exec", "timeout") == "exec.timeout"
    assert label("local", "models", "gpt-4.1", "reasoning") == 'local.models."gpt-4.1".reasoning'
    assert label("mounts", 0, "mode") == "mounts[0].mode"
    assert label('a"b') == '"a\\"b"'


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (params.Boolean(), "true or false"),
        (params.Integer(minimum=1), "a whole number >= 1"),
        (
            params.Integer(minimum=1000, description="a whole number of milliseconds"),
            "a whole number of milliseconds >= 1000",
        ),
        (params.Number(minimum=0.1, maximum=1), "a number from 0.1 to 1"),
        (params.String(min_length=1), "a non-empty string"),
        (params.String(enum=("ro", "rw")), "one of 'ro', 'rw'"),
    ],
)
def test_what_a_field_accepts_is_said_in_words(spec, words):
    assert expectation(spec) == words


def test_a_table_reports_every_problem_at_its_line_and_keeps_the_good_values():
    fields = {
        "on": params.Boolean(default=False),
        "count": params.Integer(minimum=1, default=3),
        "name": params.String(min_length=1),
        "mode": params.String(enum=("ro", "rw"), default="ro"),
    }
    clean, issues = check('[t]\non = "yes"\ncount = 0\nmdoe = "rw"\n', fields)
    assert issues == [
        "config/x.toml:4: unknown key 'mdoe' in [t] (did you mean 'mode'?)",
        "config/x.toml:2: 't.on' must be true or false, not \"yes\"",
        "config/x.toml:3: 't.count' must be a whole number >= 1, not 0",
        "config/x.toml:1: 't.name' is required",
    ]
    assert clean == {"mode": "ro"}
    clean, issues = check('[t]\nname = "n"\n', fields)
    assert issues == [] and clean == {"on": False, "count": 3, "name": "n", "mode": "ro"}


def test_a_field_check_speaks_after_the_label():
    fields = {"path": params.String(min_length=1, check=lambda v: None if v.startswith("/") else "must be absolute")}
    assert check('[t]\npath = "x"\n', fields)[1] == ["config/x.toml:2: 't.path' must be absolute"]
    assert check("[t]\npath = 3\n", fields)[1] == ["config/x.toml:2: 't.path' must be a non-empty string, not 3"]


def test_a_table_that_is_not_a_table():
    assert check("t = [1]\n", {"a": params.Boolean()}) == (None, ["config/x.toml:1: 't' must be a table, not an array"])


def test_a_table_written_only_through_subtables_is_found_at_the_first():
    source = TomlSource.parse("config/x.toml", "# top\n\n[a.b]\nx = 1\n")
    assert source.issue(("a",), "m").line == 3


# -- config/cireil.toml --------------------------------------------------------------------------------


def write(tmp_path, text: str):
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "cireil.toml").write_text(text)
    return tmp_path


def test_cireil_toml_reports_every_problem_at_once_with_its_line(tmp_path):
    text = (
        "[recording]\n"
        "enabled = 1\n"
        "max_turns = -3\n"
        "max_mbs = 5\n"
        '[prices."m"]\n'
        "input = 1\n"
        "[prices.n]\n"
        'input = "x"\n'
        "output = 2\n"
        "[colours]\n"
    )
    with pytest.raises(SettingsError) as info:
        load_settings(write(tmp_path, text))
    assert [str(i) for i in info.value.issues] == [
        "config/cireil.toml:10: unknown key 'colours' (expected: recording, prices, limits)",
        "config/cireil.toml:4: unknown key 'max_mbs' in [recording] (did you mean 'max_mb'?)",
        "config/cireil.toml:2: 'recording.enabled' must be true or false, not 1",
        "config/cireil.toml:3: 'recording.max_turns' must be a whole number >= 0, not -3",
        "config/cireil.toml:5: 'prices.m.output' is required",
        "config/cireil.toml:8: 'prices.n.input' must be a number of USD per million tokens >= 0, not \"x\"",
    ]


def test_cireil_toml_good_values_and_defaults(tmp_path):
    assert load_settings(tmp_path).max_turns == 1000  # no file: the defaults
    settings = load_settings(write(tmp_path, '[recording]\nmax_mb = 1.5\n[prices."a/b"]\ninput = 1\noutput = 2.5\n'))
    assert settings.enabled and settings.max_bytes == int(1.5 * 2**20)
    assert (settings.prices["a/b"].input, settings.prices["a/b"].output) == (1.0, 2.5)


def test_cireil_toml_syntax_error_has_its_line(tmp_path):
    with pytest.raises(SettingsError, match=r"^config/cireil\.toml:2: invalid TOML"):
        load_settings(write(tmp_path, "[recording]\nenabled = \n"))
