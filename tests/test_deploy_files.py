"""The deployment files cannot be run here (no Docker engine on this machine), so check what can
be checked: every HIGHLIGHT_ variable they set is a real setting and the values validate."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from app.core.config import Settings
from tests.conftest import PROJECT_ROOT


def _expand(value: str) -> str:
    # Compose's ${NAME:-default}: take the default, as a user without overrides gets.
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def _services() -> dict[str, Any]:
    return yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())["services"]  # type: ignore[no-any-return]


def test_compose_settings_are_real_and_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    services = _services()
    for name in ("highlight", "highlight-cpu"):
        env = {k: _expand(str(v)) for k, v in services[name]["environment"].items()}
        fields = {f"HIGHLIGHT_{f.upper()}" for f in Settings.model_fields}
        assert set(env) <= fields, set(env) - fields
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = Settings(_env_file=None)
        assert settings.llm_provider == "vllm"
        assert settings.llm_chat_template_kwargs == {"enable_thinking": False}


def test_compose_vllm_model_matches_what_the_service_asks_for() -> None:
    services = _services()
    for server, client in (("vllm", "highlight"), ("vllm-cpu", "highlight-cpu")):
        args = services[server]["command"]
        model = next(_expand(a).split("=", 1)[1] for a in args if a.startswith("--model="))
        assert _expand(services[client]["environment"]["HIGHLIGHT_LLM_MODEL"]) == model
        assert any("disable_any_whitespace" in a for a in args)
        base_url = services[client]["environment"]["HIGHLIGHT_LLM_BASE_URL"]
        assert base_url == f"http://{server}:8000/v1"


def test_dockerfile_serves_the_console_script() -> None:
    text = (PROJECT_ROOT / "Dockerfile").read_text()
    assert '"highlight-service", "serve"' in text
    assert "COPY migrations" in text


def _recipe(target: str) -> list[str]:
    """The commands of a Makefile target, with $(PY) and $(BIN) spelled out."""
    lines = (PROJECT_ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(
            line.strip().replace("$(PY)", ".venv/bin/python").replace("$(BIN)", ".venv/bin")
        )
    return recipe


def test_ci_runs_the_makefile_and_make_test_is_the_readme_command() -> None:
    """A developer runs locally exactly what CI runs: .ci/run calls the targets and the README's
    test command, which is what `make test` runs; `make setup` is the README's set-up."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    ci = (PROJECT_ROOT / ".ci" / "run").read_text()
    assert _recipe("test") == [".venv/bin/python -m pytest"]
    assert "```bash\n.venv/bin/python -m pytest\n```" in readme
    setup = [line.replace("$(PYTHON)", "python3").replace(" -q", "") for line in _recipe("setup")]
    assert "```bash\n" + "\n".join(setup) + "\n```" in readme
    assert "\n.venv/bin/python -m pytest\n" in ci, ".ci/run does not run the README's test command"
    for target in ("setup", "check", "contract-check", "frontend", "fuzz", "vllm", "bench"):
        assert f"\nmake {target}" in ci, f".ci/run does not run make {target}"
