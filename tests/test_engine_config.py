"""config/engine.toml: providers, models, API keys (literal, lists, environment variables), every error's line."""

from __future__ import annotations

import pytest

from cireil.runtime.config.tomlsource import TomlSource
from cireil.runtime.engine.config import (
    ENGINE_FILE,
    KeySource,
    MissingApiKey,
    ModelConfig,
    load_engine_config,
    parse_engine_config,
)
from cireil.runtime.errors import ConfigError
from conftest import make_agent

FULL = """\
# the local model
[providers.local]
kind = "openai"
apiBase = "http://127.0.0.1:8000/v1"
apiKey = "sk-one"
defaultModel = "gpt-4o-mini"
isGlobalDefault = true
maxGenerationRetries = 4
maxTurns = 12
customHeaders = { "X-Foo" = "bar" }
useToolChoiceAuto = true

[providers.local.models."gpt-4o-mini"]
contextWindow = 128000
contextBudget = 0.5
contextHardBudget = 0.9
maxImagesPerRequest = 8
reasoning = "low"
reasoningBudget = 2048
supportsVision = false
supportsVideo = true
toolFailThreshold = 1

[providers.remote]
apiBase = "https://api.example.com/v1"
apiKey = ["sk-a", { env = "CIREIL_TEST_KEY" }]
defaultModel = "big"
"""


def parse(text: str):
    return parse_engine_config(TomlSource.parse(ENGINE_FILE, text))


def errors(text: str) -> list[str]:
    config, issues = parse(text)
    found = [str(i) for i in issues if i.severity == "error"]
    assert (config is None) == bool(found)
    return found


def provider(extra: str = "", name: str = "local") -> str:
    return f'[providers.{name}]\napiBase = "http://127.0.0.1:8000/v1"\ndefaultModel = "m"\n{extra}'


def test_full_file():
    config, issues = parse(FULL)
    assert issues == []
    assert config.default == "local"
    local = config.providers["local"]
    assert (local.kind, local.api_base, local.default_model) == ("openai", "http://127.0.0.1:8000/v1", "gpt-4o-mini")
    assert [k.resolve({}) for k in local.api_keys] == ["sk-one"]
    assert (local.max_generation_retries, local.max_turns, local.use_tool_choice_auto) == (4, 12, True)
    assert local.custom_headers == {"X-Foo": "bar"}
    assert local.model_config("gpt-4o-mini") == ModelConfig(
        context_window=128000,
        context_budget=0.5,
        context_hard_budget=0.9,
        max_images_per_request=8,
        reasoning="low",
        reasoning_budget=2048,
        supports_vision=False,
        supports_video=True,
        tool_fail_threshold=1,
    )
    remote = config.providers["remote"]
    assert remote.api_keys[0].resolve({}) == "sk-a"
    assert remote.api_keys[1].env == "CIREIL_TEST_KEY"
    assert remote.api_keys[1].where == "config/engine.toml:26"
    assert remote.api_keys[1].resolve({"CIREIL_TEST_KEY": "sk-b"}) == "sk-b"


def test_defaults_and_unlisted_model():
    config, issues = parse(provider())
    assert issues == []
    local = config.providers["local"]
    assert config.default == "local"  # the only provider is the default without isGlobalDefault
    assert [k.resolve({}) for k in local.api_keys] == ["not-needed"]
    assert (local.max_generation_retries, local.max_turns, local.use_tool_choice_auto) == (2, 30, False)
    assert local.custom_headers == {}
    cfg = local.model_config("anything")
    assert cfg == ModelConfig()
    assert (cfg.context_window, cfg.context_budget, cfg.context_hard_budget) == (None, 0.6, 0.85)
    assert (cfg.reasoning, cfg.reasoning_budget, cfg.supports_vision, cfg.supports_video) == (True, 16384, True, False)
    assert cfg.tool_fail_threshold == 3


def test_secret_not_in_repr():
    config, _ = parse(provider('apiKey = "sk-very-secret"\n'))
    assert "sk-very-secret" not in repr(config)
    assert config.providers["local"].api_keys[0].describe() == "(literal key)"


def test_env_key_unset_is_not_a_load_error_but_fails_on_use():
    config, issues = parse(provider('apiKey = { env = "CIREIL_SURELY_UNSET" }\n'))
    assert issues == []
    key = config.providers["local"].api_keys[0]
    with pytest.raises(MissingApiKey) as info:
        key.resolve({})
    assert str(info.value).startswith("config/engine.toml:4: apiKey names the environment variable CIREIL_SURELY_UNSET")
    assert key.describe() == "$CIREIL_SURELY_UNSET"


def test_env_key_read_from_process_environment(monkeypatch):
    monkeypatch.setenv("CIREIL_TEST_ENGINE_KEY", "sk-from-env")
    assert KeySource(env="CIREIL_TEST_ENGINE_KEY").resolve() == "sk-from-env"


@pytest.mark.parametrize(
    ("extra", "line", "expected"),
    [
        ('kind = "anthropic"\n', 4, "kind 'anthropic' is not supported by cireil yet; only 'openai' is"),
        ('kind = "openai-codex"\n', 4, "kind 'openai-codex' is not supported"),
        ('kind = "gemini"\n', 4, "unknown kind 'gemini'"),
        ("maxTurn = 3\n", 4, "unknown key 'maxTurn' in [providers.local] (did you mean 'maxTurns'?)"),
        ("zzz = 3\n", 4, "unknown key 'zzz' in [providers.local] (expected: kind, apiBase"),
        ("maxTurns = 0\n", 4, "providers.local.maxTurns must be a whole number >= 1, not 0"),
        ("maxTurns = true\n", 4, "maxTurns must be a whole number >= 1, not True"),
        ("maxGenerationRetries = -1\n", 4, "maxGenerationRetries must be a whole number >= 0"),
        ('useToolChoiceAuto = "yes"\n', 4, "useToolChoiceAuto must be true or false"),
        ("isGlobalDefault = 1\n", 4, "isGlobalDefault must be true or false"),
        ("apiKey = 5\n", 4, 'apiKey must be a string, { env = "VARIABLE" }, or a list of those, not 5'),
        ("apiKey = []\n", 4, "the list is empty"),
        ('apiKey = { name = "X" }\n', 4, "got a table with keys name"),
        ('apiKey = ["a", { env = "" }]\n', 4, "apiKey must be a string"),
        ('customHeaders = { "Bad Header" = "x" }\n', 4, "'Bad Header' is not a valid HTTP header name"),
        ("customHeaders = { X-A = 1 }\n", 4, "header 'X-A' must be a one-line string"),
        ('availableModels = "m"\n', 4, "availableModels must be a list of model names"),
    ],
)
def test_provider_errors(extra, line, expected):
    found = errors(provider(extra))
    assert len(found) == 1, found
    assert found[0].startswith(f"config/engine.toml:{line}: ")
    assert expected in found[0]


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ('[providers.local]\ndefaultModel = "m"\n', 1, "providers.local.apiBase is required"),
        ('[providers.local]\napiBase = "http://h/v1"\n', 1, "providers.local.defaultModel is required"),
        (
            '[providers.local]\napiBase = "ftp://h/v1"\ndefaultModel = "m"\n',
            2,
            "apiBase must be an http:// or https://",
        ),
        ('[providers.local]\napiBase = "http://"\ndefaultModel = "m"\n', 2, "apiBase must be an http:// or https://"),
        ('[providers.local]\napiBase = "http://h"\ndefaultModel = ""\n', 3, "defaultModel must be a non-empty string"),
        ("# nothing\n", None, "no providers"),
        ("[providers]\n", 1, "no providers"),
        ('providers = "x"\n', 1, "'providers' must be a table"),
        ("[provider.local]\n", 1, "unknown key 'provider' (did you mean 'providers'?)"),
        ('[providers]\nlocal = "x"\n', 2, "providers.local must be a table"),
    ],
)
def test_file_errors(text, line, expected):
    found = errors(text)
    assert any(expected in f for f in found), found
    match = next(f for f in found if expected in f)
    assert match.startswith(f"config/engine.toml:{line}: " if line else "config/engine.toml: ")


@pytest.mark.parametrize(
    ("model_line", "expected"),
    [
        ("contextWindow = 0", "contextWindow must be a whole number >= 1, not 0"),
        ("contextWindow = 1.5", "contextWindow must be a whole number >= 1"),
        ("contextBudget = 0", "contextBudget must be a number in (0, 1], not 0"),
        ("contextBudget = 1.5", "contextBudget must be a number in (0, 1]"),
        ("contextHardBudget = 0.5", "contextHardBudget (0.5) must not be below contextBudget (0.6)"),
        ("maxImagesPerRequest = -1", "maxImagesPerRequest must be a whole number >= 0"),
        ('reasoning = "mid"', "reasoning must be true, false or one of 'xhigh', 'high', 'medium'"),
        ("reasoning = 1", "reasoning must be true, false or one of"),
        ("reasoningBudget = 0", "reasoningBudget must be a whole number >= 1"),
        ('supportsVision = "no"', "supportsVision must be true or false"),
        ("supportsVideo = 0", "supportsVideo must be true or false"),
        ("toolFailThreshold = 0", "toolFailThreshold must be a whole number >= 1, not 0"),
        ("contextWindw = 5", "unknown key 'contextWindw' in [providers.local.models.\"gpt-4.1\"] (did you mean"),
    ],
)
def test_model_errors(model_line, expected):
    text = provider() + f'\n[providers.local.models."gpt-4.1"]\n# a model\n{model_line}\n'
    found = errors(text)
    assert len(found) == 1, found
    assert found[0].startswith("config/engine.toml:7: "), found
    assert expected in found[0]


@pytest.mark.parametrize("level", ["xhigh", "high", "medium", "low", "minimal", "none"])
def test_reasoning_levels(level):
    config, issues = parse(provider() + f'[providers.local.models.m]\nreasoning = "{level}"\n')
    assert issues == []
    assert config.providers["local"].model_config("m").reasoning == level


def test_reasoning_false():
    config, _ = parse(provider() + "[providers.local.models.m]\nreasoning = false\n")
    assert config.providers["local"].model_config("m").reasoning is False


def test_several_providers_need_one_default():
    found = errors(provider(name="a") + "\n" + provider(name="b"))
    assert found == [
        "config/engine.toml:1: 2 providers and none has isGlobalDefault = true; mark exactly one as the default"
    ]


def test_two_defaults_refused_at_the_second():
    text = provider("isGlobalDefault = true\n", name="a") + "\n" + provider("isGlobalDefault = true\n", name="b")
    found = errors(text)
    assert found == ["config/engine.toml:9: only one provider may have isGlobalDefault = true; 'a' already has it"]


def test_default_among_several():
    text = provider(name="a") + "\n" + provider("isGlobalDefault = true\n", name="b")
    config, issues = parse(text)
    assert issues == []
    assert config.default == "b"
    assert config.default_provider.name == "b"


def test_all_errors_reported_together():
    text = provider("maxTurns = 0\nbogus = 1\n") + "[providers.local.models.m]\ncontextBudget = 2\n"
    found = errors(text)
    assert sorted(f.split(":")[1] for f in found) == ["4", "5", "7"]
    assert len(found) == 3


def test_upstream_keys_warned_not_refused():
    config, issues = parse(provider('useJpegForImages = true\nuseFilesApi = "kimi"\n'))
    assert config is not None
    assert [str(i) for i in issues] == [
        "config/engine.toml:4: warning: provider 'local': useJpegForImages has no effect in cireil",
        "config/engine.toml:5: warning: provider 'local': useFilesApi has no effect in cireil",
    ]


def test_load_missing_file(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "engine.toml").unlink()
    with pytest.raises(ConfigError) as info:
        load_engine_config(agent)
    message = str(info.value)
    assert message.startswith("config/engine.toml: required file is missing; agent turns need a model provider")
    assert "apiBase" in message


def test_load_valid_and_invalid_files(tmp_path):
    agent = make_agent(tmp_path)
    (agent / ENGINE_FILE).write_text(FULL)
    assert load_engine_config(agent).default == "local"
    (agent / ENGINE_FILE).write_text(provider("maxTurns = 0\n"))
    with pytest.raises(ConfigError) as info:
        load_engine_config(agent)
    assert [str(i) for i in info.value.issues] == [
        "config/engine.toml:4: providers.local.maxTurns must be a whole number >= 1, not 0"
    ]
    (agent / ENGINE_FILE).write_text("[providers.local\n")
    with pytest.raises(ConfigError) as info:
        load_engine_config(agent)
    assert str(info.value).startswith("config/engine.toml:1: invalid TOML")
