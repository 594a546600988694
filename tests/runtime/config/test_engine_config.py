"""config/engine.toml in the original CireilClaw's shape (upstream-formats.md §2): top-level provider tables,
strict keys, every error's line, the provider/model/model-table choice of §2.9, key lists and headers."""

from __future__ import annotations

import pytest

from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.engine_config import (
    ENGINE_FILE,
    KeySource,
    MissingApiKey,
    ModelConfig,
    load_engine_config,
    parse_engine_config,
)
from cireil.runtime.config.tomlsource import TomlSource
from conftest import make_agent

# The example of upstream-formats.md §2.1, as the original's users write it.
REFERENCE = """\
[openrouter]
apiBase = "https://openrouter.ai/api/v1"
apiKey = ["sk-or-v1-aaaa", "sk-or-v1-bbbb"]      # pooled
defaultModel = "moonshotai/kimi-k2"
isGlobalDefault = true
availableModels = ["moonshotai/kimi-k2", "qwen/qwen3-coder"]

[openrouter.models."moonshotai/kimi-k2"]
contextWindow = 131072
reasoning = "medium"
maxImagesPerRequest = 4

[openrouter.customHeaders]
X-Team = "garden"
X-Trace = ["a", "b"]

[local]
apiBase = "http://127.0.0.1:8080/v1"              # apiKey defaults to "not-needed"
defaultModel = "qwen3-8b"

[local.models.qwen3-8b]
supportsVision = false
toolFailThreshold = 5
"""

FULL = """\
# the local model
[local]
kind = "openai"
apiBase = "http://127.0.0.1:8000/v1"
apiKey = "sk-one"
authId = "work"
defaultModel = "gpt-4o-mini"
isGlobalDefault = true
maxGenerationRetries = 4
maxTurns = 12
customHeaders = { "X-Foo" = "bar" }
useToolChoiceAuto = true
useJpegForImages = false
useFilesApi = false
availableModels = "analyze"

[local.models."gpt-4o-mini"]
contextWindow = 128000
contextBudget = 0.5
contextHardBudget = 0.9
maxImagesPerRequest = 8
reasoning = "low"
reasoningBudget = 0
supportsVision = false
supportsVideo = true
toolFailThreshold = 1

[remote]
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


def provider(extra: str = "", name: str = "local", default: bool = True) -> str:
    flag = "isGlobalDefault = true\n" if default else ""
    return f'[{name}]\napiBase = "http://127.0.0.1:8000/v1"\ndefaultModel = "m"\n{flag}{extra}'


def test_the_reference_example_loads():
    config, issues = parse(REFERENCE)
    assert issues == []
    assert config.default == "openrouter"
    router = config.providers["openrouter"]
    assert [k.resolve({}) for k in router.api_keys] == ["sk-or-v1-aaaa", "sk-or-v1-bbbb"]
    assert router.available_models == ["moonshotai/kimi-k2", "qwen/qwen3-coder"]
    assert router.custom_headers == {"X-Team": "garden", "X-Trace": ["a", "b"]}
    assert router.model_config("moonshotai/kimi-k2") == ModelConfig(
        context_window=131072, reasoning="medium", max_images_per_request=4
    )
    local = config.providers["local"]
    assert [k.resolve({}) for k in local.api_keys] == ["not-needed"]
    assert local.model_config("qwen3-8b") == ModelConfig(supports_vision=False, tool_fail_threshold=5)
    assert (local.kind, local.auth_id, local.available_models, local.is_global_default) == (
        "openai",
        "default",
        "analyze",
        False,
    )


def test_full_file():
    config, issues = parse(FULL)
    assert issues == []
    assert config.default == "local"
    local = config.providers["local"]
    assert (local.kind, local.api_base, local.default_model) == ("openai", "http://127.0.0.1:8000/v1", "gpt-4o-mini")
    assert [k.resolve({}) for k in local.api_keys] == ["sk-one"]
    assert (local.max_generation_retries, local.max_turns, local.use_tool_choice_auto) == (4, 12, True)
    assert (local.auth_id, local.use_jpeg_for_images, local.use_files_api) == ("work", False, False)
    assert local.custom_headers == {"X-Foo": "bar"}
    assert local.model_config("gpt-4o-mini") == ModelConfig(
        context_window=128000,
        context_budget=0.5,
        context_hard_budget=0.9,
        max_images_per_request=8,
        reasoning="low",
        reasoning_budget=0,
        supports_vision=False,
        supports_video=True,
        tool_fail_threshold=1,
    )
    remote = config.providers["remote"]
    assert remote.api_keys[0].resolve({}) == "sk-a"
    assert remote.api_keys[1].env == "CIREIL_TEST_KEY"
    assert remote.api_keys[1].where == "config/engine.toml:30"
    assert remote.api_keys[1].resolve({"CIREIL_TEST_KEY": "sk-b"}) == "sk-b"


def test_defaults_and_unlisted_model():
    config, issues = parse(provider())
    assert issues == []
    local = config.providers["local"]
    assert [k.resolve({}) for k in local.api_keys] == ["not-needed"]
    assert (local.max_generation_retries, local.max_turns, local.use_tool_choice_auto) == (2, 30, False)
    assert local.custom_headers == {}
    cfg = local.model_config("anything")
    assert cfg == ModelConfig()
    assert (cfg.context_window, cfg.context_budget, cfg.context_hard_budget) == (None, 0.6, 0.85)
    assert (cfg.reasoning, cfg.reasoning_budget, cfg.supports_vision, cfg.supports_video) == (True, 16384, True, False)
    assert cfg.tool_fail_threshold == 3


@pytest.mark.parametrize(
    "name", ["moonshotai/kimi-k2", "gpt-4.1", "llama3:8b", "ünïcode model", 'quote"inside', "a.b/c:d"]
)
def test_quoted_model_names(name):
    quoted = '"' + name.replace('"', '\\"') + '"'
    config, issues = parse(provider() + f"\n[local.models.{quoted}]\n# here\ncontextWindow = 5000\n")
    assert issues == []
    assert config.providers["local"].model_config(name).context_window == 5000
    found = errors(provider() + f"\n[local.models.{quoted}]\n# here\ncontextWindw = 5000\n")
    assert found[0].startswith("config/engine.toml:8: unknown key 'contextWindw' in [local.models.")


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
    assert str(info.value).startswith("config/engine.toml:5: apiKey names the environment variable CIREIL_SURELY_UNSET")
    assert key.describe() == "$CIREIL_SURELY_UNSET"


def test_env_key_read_from_process_environment(monkeypatch):
    monkeypatch.setenv("CIREIL_TEST_ENGINE_KEY", "sk-from-env")
    assert KeySource(env="CIREIL_TEST_ENGINE_KEY").resolve() == "sk-from-env"


def test_every_kind_of_the_original_is_spoken_and_keeps_its_auth_id():
    config, issues = parse(provider('kind = "openai-codex"\nauthId = "me"\n'))
    assert issues == []
    chosen = config.providers["local"]
    assert (chosen.kind, chosen.auth_id, chosen.line) == ("openai-codex", "me", 5)
    # its login is checked at load and each turn (tests/runtime/engine/test_codex.py)
    assert chosen.unsupported() is None
    assert parse(provider('kind = "anthropic"\n'))[0].providers["local"].unsupported() is None
    assert parse(provider())[0].providers["local"].unsupported() is None


# Each row: what the original refuses (upstream-formats.md §2.8), and the line cireil names.
@pytest.mark.parametrize(
    ("extra", "line", "expected"),
    [
        ("foo = 3\n", 5, "unknown key 'foo' in [local] (expected: apiBase, apiKey, authId"),
        ("maxTurn = 3\n", 5, "unknown key 'maxTurn' in [local] (did you mean 'maxTurns'?)"),
        ('kind = "anthropic-oauth"\n', 5, "'local.kind' must be one of 'openai', 'anthropic', 'openai-codex', not"),
        ('kind = "gemini"\n', 5, 'not "gemini"'),
        ("apiKey = []\n", 5, "'local.apiKey' must list at least one key, not []"),
        ("apiKey = 5\n", 5, "'local.apiKey' must be a non-empty string, a list of them, or { env"),
        ('apiKey = ""\n', 5, "'local.apiKey' must be a non-empty string"),
        ('apiKey = ["a", ""]\n', 5, "'local.apiKey' must be a non-empty string"),
        ('apiKey = { name = "X" }\n', 5, "not a table with keys name"),
        ('apiKey = ["a", { env = "" }]\n', 5, "'local.apiKey' must be a non-empty string"),
        ('authId = ""\n', 5, "'local.authId' must be a non-empty string"),
        ("maxTurns = 0\n", 5, "'local.maxTurns' must be a whole number >= 1, not 0"),
        ("maxTurns = true\n", 5, "maxTurns' must be a whole number >= 1, not true"),
        ("maxTurns = 2.5\n", 5, "maxTurns' must be a whole number >= 1"),
        ("maxGenerationRetries = -1\n", 5, "maxGenerationRetries' must be a whole number >= 0"),
        ('useToolChoiceAuto = "yes"\n', 5, "useToolChoiceAuto' must be true or false"),
        ("useJpegForImages = 1\n", 5, "useJpegForImages' must be true or false"),
        ("useFilesApi = true\n", 5, "'local.useFilesApi' must be \"kimi\" or false, not true"),
        ('useFilesApi = "openai"\n', 5, 'must be "kimi" or false'),
        ('customHeaders = { "Bad Header" = "x" }\n', 5, 'customHeaders."Bad Header"\' is not a valid header name'),
        ("customHeaders = { X-A = 1 }\n", 5, "customHeaders.X-A' must be a non-empty one-line string"),
        ('customHeaders = { X-A = "" }\n', 5, "customHeaders.X-A' must be a non-empty one-line string"),
        ("customHeaders = { X-A = [] }\n", 5, "customHeaders.X-A' must be"),
        ('customHeaders = { X-A = "a\\r\\nX-Evil: 1" }\n', 5, "customHeaders.X-A' must be a non-empty one-line string"),
        ('customHeaders = "x"\n', 5, "'local.customHeaders' must be a table"),
        ('availableModels = "m"\n', 5, "'local.availableModels' must be \"analyze\" or a non-empty list"),
        ("availableModels = []\n", 5, "non-empty list of model names, not []"),
        ('availableModels = [""]\n', 5, "non-empty list of model names"),
        ('models = "x"\n', 5, "'local.models' must hold model tables"),
    ],
)
def test_provider_errors(extra, line, expected):
    found = errors(provider(extra))
    assert len(found) == 1, found
    assert found[0].startswith(f"config/engine.toml:{line}: "), found
    assert expected in found[0], found


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ftp://h/v1", "must be http:// or https://"),
        ("localhost:1234", "must be http:// or https://"),  # WHATWG accepts it; no request could be made
        ("http://", "must be http:// or https://, not"),
        ("http://[zzz]/v1", "cannot be parsed"),
        ("http://[::1/v1", "cannot be parsed (Invalid IPv6 URL)"),
        ("http://h:99999/v1", "has port '99999', not a number from 0 to 65535"),
        ("http://h:0/v1", "has port 0"),
        ("http://h:x/v1", "has port 'x'"),
        ("http://h/v1\\r\\nHost: evil", "contains a carriage return (CR)"),
        ("http://h/v1\\n", "contains a line feed (LF)"),
        ("http://h /v1", "contains a space"),
        ("https://h/v1?key=1", "must not have a ?query"),
    ],
)
def test_unusable_api_base_is_an_error_at_its_line(url, expected):
    found = errors(f'[local]\ndefaultModel = "m"\nisGlobalDefault = true\napiBase = "{url}"\n')
    assert len(found) == 1, found
    assert found[0].startswith("config/engine.toml:4: 'local.apiBase' "), found
    assert expected in found[0], found


@pytest.mark.parametrize("url", ["http://[::1]:8080/v1", "https://h:65535/v1", "http://[fe80::1%25eth0]/v1"])
def test_usable_api_bases(url):
    assert errors(f'[local]\ndefaultModel = "m"\nisGlobalDefault = true\napiBase = "{url}"\n') == []


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ('[local]\ndefaultModel = "m"\nisGlobalDefault = true\n', 1, "'local.apiBase' is required"),
        ('[local]\napiBase = "http://h/v1"\nisGlobalDefault = true\n', 1, "'local.defaultModel' is required"),
        ('[local]\napiBase = "http://h"\ndefaultModel = ""\nisGlobalDefault = true\n', 3, "must be a non-empty string"),
        ("# nothing\n", None, "no providers"),
        ('name = "x"\n', 1, "'name' must be a provider table"),
        ('[local]\napiBase = "http://h"\ndefaultModel = "m"\n', 1, "there is no global default provider"),
        ('[""]\napiBase = "http://h"\ndefaultModel = "m"\nisGlobalDefault = true\n', 1, "must not be empty"),
        ('[local.models.m]\nreasoning = "low"\n', 1, "'local.apiBase' is required"),
    ],
)
def test_file_errors(text, line, expected):
    found = errors(text)
    assert any(expected in f for f in found), found
    match = next(f for f in found if expected in f)
    assert match.startswith(f"config/engine.toml:{line}: " if line else "config/engine.toml: ")


def test_old_cireil_layout_points_at_migrate():
    text = '# mine\n[providers.local]\napiBase = "http://h/v1"\ndefaultModel = "m"\n\n[providers.b]\nx = 1\n'
    assert errors(text) == [
        "config/engine.toml:2: this is cireil's old [providers.<name>] layout, which the original CireilClaw "
        "does not read: providers are top-level tables ([local], [b]); run `cireil migrate DIR` to rewrite it "
        "(comments kept, a backup first)"
    ]


def test_a_provider_named_providers_is_not_the_old_layout():
    config, issues = parse(provider(name="providers"))
    assert issues == []
    assert config.default == "providers"


@pytest.mark.parametrize(
    ("model_line", "expected"),
    [
        ('contextWindow = "big"', "contextWindow' must be a number of tokens"),
        ("contextBudget = 0.05", "contextBudget' must be a number from 0.1 to 1, not 0.05"),
        ("contextBudget = 1.5", "contextBudget' must be a number from 0.1 to 1"),
        ("contextHardBudget = 0", "contextHardBudget' must be a number from 0.1 to 1"),
        ("maxImagesPerRequest = 0", "maxImagesPerRequest' must be a whole number >= 1, not 0"),
        ('reasoning = "mid"', "reasoning' must be true, false or one of 'xhigh', 'high', 'medium'"),
        ("reasoning = 1", "reasoning' must be true, false or one of"),
        ("reasoningBudget = -1", "reasoningBudget' must be a whole number >= 0"),
        ('supportsVision = "no"', "supportsVision' must be true or false"),
        ("supportsVideo = 0", "supportsVideo' must be true or false"),
        ("toolFailThreshold = 0", "toolFailThreshold' must be a whole number >= 1, not 0"),
        ("contextWindw = 5", "unknown key 'contextWindw' in [local.models.\"gpt-4.1\"] (did you mean"),
    ],
)
def test_model_errors(model_line, expected):
    text = provider() + f'\n[local.models."gpt-4.1"]\n# a model\n{model_line}\n'
    found = errors(text)
    assert len(found) == 1, found
    assert found[0].startswith("config/engine.toml:8: "), found
    assert expected in found[0]


def test_model_values_the_original_accepts_but_cireil_cannot_use_are_warnings():
    text = provider() + "\n[local.models.m]\ncontextWindow = 0\ncontextBudget = 0.9\ncontextHardBudget = 0.5\n"
    config, issues = parse(text)
    assert config is not None
    assert [str(i) for i in issues] == [
        "config/engine.toml:7: warning: 'local.models.m.contextWindow' = 0 is ignored: no context fits in it",
        "config/engine.toml:9: warning: 'local.models.m.contextHardBudget' (0.5) is below contextBudget (0.9): "
        "every prune overshoots",
    ]
    assert config.providers["local"].model_config("m").context_window is None


def test_float_context_window():
    config, _ = parse(provider() + "[local.models.m]\ncontextWindow = 8192.0\n")
    assert config.providers["local"].model_config("m").context_window == 8192


@pytest.mark.parametrize("level", ["xhigh", "high", "medium", "low", "minimal", "none"])
def test_reasoning_levels(level):
    config, issues = parse(provider() + f'[local.models.m]\nreasoning = "{level}"\n')
    assert issues == []
    assert config.providers["local"].model_config("m").reasoning == level


def test_reasoning_false():
    config, _ = parse(provider() + "[local.models.m]\nreasoning = false\n")
    assert config.providers["local"].model_config("m").reasoning is False


def test_no_default_is_refused_even_for_one_provider():
    assert errors(provider(default=False)) == [
        "config/engine.toml:1: there is no global default provider: assign exactly one provider the "
        "'isGlobalDefault' tag (isGlobalDefault = true), e.g. in [local]"
    ]
    assert errors(provider(name="a", default=False) + "\n" + provider(name="b", default=False))[0].startswith(
        "config/engine.toml:1: there is no global default provider"
    )


def test_two_defaults_refused_at_the_second():
    found = errors(provider(name="a") + "\n" + provider(name="b"))
    assert found == [
        "config/engine.toml:9: there is more than 1 global default provider: 'a' already has isGlobalDefault = "
        "true; assign only one provider the 'isGlobalDefault' tag"
    ]


def test_default_among_several():
    text = provider(name="a", default=False) + "\n" + provider(name="b")
    config, issues = parse(text)
    assert issues == []
    assert config.default == "b"
    assert config.default_provider.name == "b"


def test_all_errors_reported_together():
    text = provider("maxTurns = 0\nbogus = 1\n") + "[local.models.m]\ncontextBudget = 2\n"
    found = errors(text)
    assert sorted(int(f.split(":")[1]) for f in found) == [5, 6, 8]


def test_use_jpeg_for_images_is_honoured_and_files_api_is_warned_about():
    config, issues = parse(provider('useJpegForImages = true\nuseFilesApi = "kimi"\n'))
    assert config is not None
    assert [str(i) for i in issues] == [
        "config/engine.toml:6: warning: 'local.useFilesApi' has no effect in cireil (videos are sent inline)",
    ]
    assert config.providers["local"].use_jpeg_for_images


# -- which provider, model and model table a turn uses (§2.9) ---------------------------------------------

CHOICE = """\
[main]
apiBase = "http://127.0.0.1:1/v1"
defaultModel = "main-model"
isGlobalDefault = true

[main.models.main-model]
contextWindow = 1000

[main.models.other]
contextWindow = 2000

[second]
apiBase = "http://127.0.0.1:2/v1"
defaultModel = "second-model"

[second.models.second-model]
contextWindow = 3000

[bare]
apiBase = "http://127.0.0.1:3/v1"
defaultModel = "bare-model"
"""


@pytest.fixture(scope="module")
def choice_config():
    config, issues = parse(CHOICE)
    assert issues == []
    return config


@pytest.mark.parametrize(
    ("args", "provider_name", "model", "window", "noticed"),
    [
        ({}, "main", "main-model", 1000, False),
        ({"model": "other"}, "main", "other", 2000, False),
        ({"model": "unlisted"}, "main", "unlisted", 1000, False),  # falls back to main's own default entry
        ({"provider": "second", "model": "second-model"}, "second", "second-model", 3000, False),
        # no model chosen: the DEFAULT provider's defaultModel, and its table (second has none for it)
        ({"provider": "second"}, "second", "main-model", 1000, True),
        ({"provider": "bare", "model": "bare-model"}, "bare", "bare-model", 1000, False),  # default's entry
        ({"selected_provider": "second", "selected_model": "second-model"}, "second", "second-model", 3000, False),
        ({"provider": "bare", "selected_provider": "second", "model": "x"}, "bare", "x", 1000, False),
        ({"selected_model": "other", "model": "main-model"}, "main", "main-model", 1000, False),
        ({"provider": "gone"}, "main", "main-model", 1000, True),
    ],
)
def test_choice(choice_config, args, provider_name, model, window, noticed):
    choice = choice_config.choose(**args)
    assert (choice.provider.name, choice.model, choice.model_cfg.context_window) == (provider_name, model, window)
    assert bool(choice.notices) == noticed


def test_choice_falls_back_to_builtins_when_the_default_has_no_entry_either():
    config, _ = parse(provider(name="a") + "\n" + provider(name="b", default=False))
    assert config.choose("b", "zzz").model_cfg == ModelConfig()


def test_unknown_provider_notice(choice_config):
    assert choice_config.choose("gone").notices == [
        "provider 'gone' is not in config/engine.toml; using the default provider 'main'"
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
        "config/engine.toml:5: 'local.maxTurns' must be a whole number >= 1, not 0"
    ]
    (agent / ENGINE_FILE).write_text("[local\n")
    with pytest.raises(ConfigError) as info:
        load_engine_config(agent)
    assert str(info.value).startswith("config/engine.toml:1: invalid TOML")
