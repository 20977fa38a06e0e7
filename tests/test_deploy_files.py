"""The deployment files cannot be run here (no Docker engine, no cluster), so check what can be
checked: every HIGHLIGHT_ variable they set is a real setting and the values validate; the
Kubernetes manifests validate against a pinned Kubernetes version's schemas (kubernetes-validate,
a dev dependency carrying the schemas, so offline; the ServiceMonitor, a custom resource it has
no schema for, is checked field by field against the Service instead); images are pinned by
digest; the network policy lets in and out what the settings name; the probes, the migrate step
and the vLLM pin agree across the Dockerfile, docker-compose.yml and the manifests;
requirements.lock pins every runtime dependency."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from starlette.routing import Match

from app.core.config import Settings
from app.main import create_app
from tests.conftest import PROJECT_ROOT
from tests.fixtures.app import make_settings

K8S = PROJECT_ROOT / "scripts" / "deploy" / "kubernetes"
# The oldest Kubernetes minor still supported upstream when the manifests were written; the
# manifests use nothing newer. kubernetes-validate >= 1.35 carries its schemas.
KUBERNETES_VERSION = "1.35.0"
# Custom resources: kubernetes-validate has only Kubernetes' own schemas.
CUSTOM_KINDS = {"ServiceMonitor"}
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# The oldest vLLM the service supports: earlier xgrammar builds force ", " separators into
# structured JSON (more decoded tokens per batch), and before 0.30 one failing
# structured-output request could kill the engine (CVE-2026-105757).
VLLM_FLOOR = Version("0.32")


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


# --- Kubernetes manifests -------------------------------------------------------------------


def _manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def _manifests() -> dict[str, dict[str, Any]]:
    """Each manifest by kind (one object per file, one file per kind)."""
    found = {}
    for path in _manifest_files():
        doc = yaml.safe_load(path.read_text())
        found[doc["kind"]] = doc
    return found


def _pod(kind: str) -> dict[str, Any]:
    return _manifests()[kind]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: p.name)
def test_manifest_validates_against_the_kubernetes_schema(path: Path) -> None:
    # strict: an unknown field (a misspelt probe, a field of a newer release) is an error.
    docs = list(yaml.safe_load_all(path.read_text()))
    assert len(docs) == 1, f"{path.name}: one object per file"
    if docs[0]["kind"] in CUSTOM_KINDS:
        # Skipped, and said so: when the validator learns the kind, validate it here instead.
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate(docs[0], KUBERNETES_VERSION, strict=True)
        return
    checked = kubernetes_validate.validate(docs[0], KUBERNETES_VERSION, strict=True)
    assert checked == KUBERNETES_VERSION.rsplit(".", 1)[0]


def test_the_schema_check_catches_a_misspelt_field() -> None:
    deployment = copy.deepcopy(_manifests()["Deployment"])
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_kustomization_applies_every_manifest_but_the_secret_placeholders() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in _manifest_files()} - {"secret.example.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)
    images = {image["name"] for image in kustomization["images"]}
    for kind in ("Deployment", "Job"):
        assert {c["image"].split("@")[0] for c in _pod(kind)["containers"]} <= images


def test_images_are_pinned_by_digest_and_the_release_sets_it_in_one_place() -> None:
    """A tag can be moved to other bytes, a digest cannot. The manifests carry a placeholder
    digest; kustomization.yaml's images: is where a release writes the real one."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    for image in kustomization["images"]:
        assert "newTag" not in image, f"{image['name']}: pin by digest, not by tag"
        assert DIGEST.fullmatch(image["digest"]), f"{image['name']}: {image['digest']!r}"
    for kind in ("Deployment", "Job"):
        for container in _pod(kind)["containers"]:
            name, _, digest = container["image"].partition("@")
            assert DIGEST.fullmatch(digest), f"{kind}: {container['image']} is not by digest"
            assert ":" not in name, f"{kind}: {container['image']} has a tag beside its digest"


def test_pods_run_as_their_service_account_without_its_token() -> None:
    account = _manifests()["ServiceAccount"]
    assert account["automountServiceAccountToken"] is False
    for kind in ("Deployment", "Job"):
        pod = _pod(kind)
        assert pod["serviceAccountName"] == account["metadata"]["name"]
        assert pod["automountServiceAccountToken"] is False


def test_ephemeral_storage_covers_every_emptydir_at_its_size_limit() -> None:
    """Otherwise a full cache fills the node's disk (no sizeLimit) or gets the pod evicted
    below what its volumes may hold (a limit under their sum)."""
    for kind in ("Deployment", "Job"):
        pod = _pod(kind)
        sizes = [v["emptyDir"]["sizeLimit"] for v in pod["volumes"] if "emptyDir" in v]
        assert len(sizes) == sum("emptyDir" in v for v in pod["volumes"]), "an unbounded emptyDir"
        (container,) = pod["containers"]
        resources = container["resources"]
        limit = _mebibytes(resources["limits"]["ephemeral-storage"])
        assert limit >= sum(_mebibytes(size) for size in sizes), kind
        assert _mebibytes(resources["requests"]["ephemeral-storage"]) <= limit


def test_the_secret_holds_only_marked_placeholders_and_the_configmap_no_secret() -> None:
    manifests = _manifests()
    secret, config = manifests["Secret"], manifests["ConfigMap"]
    assert "data" not in secret, "base64 data would hide what is committed"
    for key, value in secret["stringData"].items():
        assert "CHANGE-ME" in value, f"{key} is not a marked placeholder"
    for key, value in config["data"].items():
        assert not re.search("TOKEN|KEY|PASSWORD|SECRET|DATABASE_URL", key), key
        assert not re.search(r"://[^/\s]*@", value), f"{key} holds credentials"
    refs = [ref for c in _pod("Deployment")["containers"] for ref in c["envFrom"]]
    assert {r["configMapRef"]["name"] for r in refs if "configMapRef" in r} == {
        config["metadata"]["name"]
    }
    assert {r["secretRef"]["name"] for r in refs if "secretRef" in r} == {
        secret["metadata"]["name"]
    }


def test_deployment_settings_are_real_and_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    manifests = _manifests()
    env = {**manifests["ConfigMap"]["data"], **manifests["Secret"]["stringData"]}
    fields = {f"HIGHLIGHT_{f.upper()}" for f in Settings.model_fields}
    ours = {k for k in env if k.startswith("HIGHLIGHT_")}
    assert ours <= fields, ours - fields
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings(_env_file=None)
    assert settings.migrate_on_start is False
    assert settings.log_format == "json"
    assert settings.storage_url.startswith("s3://")
    assert settings.auth_enabled


def _namespace_and_port(url: str, default_port: int) -> tuple[str, int]:
    """A cluster service URL's namespace (``name.namespace.svc``) and port."""
    parts = urlsplit(url)
    assert parts.hostname, url
    labels = parts.hostname.split(".")
    assert labels[2:3] == ["svc"], f"{url}: not a cluster service name"
    return labels[1], parts.port or default_port


def _rule_allows(rule: dict[str, Any], port: int, protocol: str = "TCP") -> bool:
    return any(p["port"] == port and p["protocol"] == protocol for p in rule["ports"])


def _namespaces(rule: dict[str, Any], key: str) -> set[str]:
    return {
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for peer in rule[key]
        if "namespaceSelector" in peer
    }


def test_network_policy_lets_in_the_callers_and_out_what_the_settings_name() -> None:
    manifests = _manifests()
    policy = manifests["NetworkPolicy"]["spec"]
    selector = policy["podSelector"]["matchLabels"]
    for kind in ("Deployment", "Job"):
        labels = manifests[kind]["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), f"the {kind}'s pods are not covered"
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    port = _pod("Deployment")["containers"][0]["ports"][0]["containerPort"]
    assert all(_rule_allows(rule, port) and len(rule["ports"]) == 1 for rule in policy["ingress"])
    callers = set().union(*(_namespaces(rule, "from") for rule in policy["ingress"]))
    assert {"chat", "ingress-nginx", "monitoring"} <= callers
    egress = policy["egress"]
    dns = [rule for rule in egress if _rule_allows(rule, 53, "UDP")]
    assert dns, "no DNS"
    assert _rule_allows(dns[0], 53, "TCP")
    env = {**manifests["ConfigMap"]["data"], **manifests["Secret"]["stringData"]}
    for url, default in (
        (env["HIGHLIGHT_DATABASE_URL"], 5432),
        (env["HIGHLIGHT_LLM_BASE_URL"], 80),
    ):
        namespace, needed = _namespace_and_port(url, default)
        assert any(
            namespace in _namespaces(rule, "to") and _rule_allows(rule, needed) for rule in egress
        ), f"no egress to {namespace}:{needed} ({url})"
    assert env["HIGHLIGHT_STORAGE_URL"].startswith("s3://")
    assert any(_rule_allows(rule, 443) for rule in egress), "the object store (HTTPS)"
    assert not any("ports" not in rule for rule in egress + policy["ingress"]), "an open rule"


def test_service_monitor_scrapes_what_the_annotations_name_with_a_read_token() -> None:
    manifests = _manifests()
    monitor, service = manifests["ServiceMonitor"], manifests["Service"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    annotations = manifests["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == annotations["prometheus.io/path"]
    credentials = endpoint["authorization"]["credentials"]
    secret = manifests["Secret"]
    assert credentials["name"] == secret["metadata"]["name"]
    token = secret["stringData"][credentials["key"]]
    assert token in json.loads(secret["stringData"]["HIGHLIGHT_AUTH_READ_TOKENS"])


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    found = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", quantity)
    assert found, f"{quantity}: use Ki, Mi or Gi"
    return int(found.group(1)) * units[found.group(2)]


def test_memory_limit_covers_the_server_and_every_pdf_worker_at_its_limit() -> None:
    """Otherwise a hostile PDF gets the pod OOM-killed instead of pdf_too_complex from its
    worker (documents/workers.py limits each job's address space)."""
    config = _manifests()["ConfigMap"]["data"]
    resources = _pod("Deployment")["containers"][0]["resources"]
    server_mb = 256  # the server process under load (~250 MB)
    per_process = server_mb + int(config["HIGHLIGHT_PDF_WORKERS"]) * int(
        config["HIGHLIGHT_PDF_WORKER_MEMORY_MB"]
    )
    limit = _mebibytes(resources["limits"]["memory"])
    assert limit >= int(config["HIGHLIGHT_WORKERS"]) * per_process
    assert _mebibytes(resources["requests"]["memory"]) <= limit


def test_pods_run_as_the_image_user_on_a_read_only_root_with_writable_caches() -> None:
    image_user = re.search(r"^USER (\d+)", _dockerfile(), re.MULTILINE)
    assert image_user, "the Dockerfile's USER must be numeric for runAsNonRoot"
    config = _manifests()["ConfigMap"]["data"]
    writable_settings = [v for k, v in config.items() if k.endswith("_DIR") or k.endswith("_ROOT")]
    for kind in ("Deployment", "Job"):
        pod = _pod(kind)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == int(image_user.group(1))
        emptydirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            mounts = [m["mountPath"] for m in container["volumeMounts"] if m["name"] in emptydirs]
            assert "/tmp" in mounts
            if kind == "Deployment":
                for path in writable_settings:
                    assert any(Path(path).is_relative_to(m) for m in mounts), path


def test_service_pdb_and_hpa_take_the_api_pods_only() -> None:
    manifests = _manifests()
    deployment = manifests["Deployment"]
    api_labels = deployment["spec"]["template"]["metadata"]["labels"]
    job_labels = manifests["Job"]["spec"]["template"]["metadata"]["labels"]
    selectors = [
        manifests["Service"]["spec"]["selector"],
        manifests["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= api_labels.items()
        assert not selector.items() <= job_labels.items(), "the migrate Job's pod would match"
    target = manifests["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"
    assert manifests["HorizontalPodAutoscaler"]["spec"]["minReplicas"] >= 2


# --- what the Dockerfile, compose and Kubernetes must agree on ---------------------------


def _dockerfile() -> str:
    return (PROJECT_ROOT / "Dockerfile").read_text()


def _probe_path(text: str) -> str:
    found = re.search(r"http://127\.0\.0\.1:8000(/[a-z]+)", text)
    assert found, f"no probe URL in {text!r}"
    return found.group(1)


def _served(path: str) -> bool:
    """Whether a GET of ``path`` reaches a route (routing alone: no lifespan, no database)."""
    app = create_app(make_settings("sqlite+aiosqlite:///unused.db", Path("unused")))
    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": []}
    return any(route.matches(scope)[0] == Match.FULL for route in app.routes)


def test_probes_agree_everywhere_and_are_routes_the_app_serves() -> None:
    pod = _pod("Deployment")
    container = pod["containers"][0]
    liveness = container["livenessProbe"]["httpGet"]["path"]
    readiness = container["readinessProbe"]["httpGet"]["path"]
    assert (liveness, readiness) == ("/livez", "/readyz")
    assert container["startupProbe"]["httpGet"]["path"] == liveness
    healthcheck = _dockerfile().split("HEALTHCHECK", 1)[1].split("\nCMD ", 1)[0]
    assert _probe_path(healthcheck) == readiness
    services = _services()
    for name in ("highlight", "highlight-cpu"):
        assert _probe_path(" ".join(services[name]["healthcheck"]["test"])) == readiness
    annotations = _manifests()["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(container["ports"][0]["containerPort"])
    assert not _served("/no-such-probe"), "the route check cannot fail"
    for path in (liveness, readiness, annotations["prometheus.io/path"]):
        assert _served(path), f"{path} is probed or scraped but the app does not serve it"


def test_migrations_run_once_before_the_servers_never_by_them() -> None:
    services = _services()
    assert services["migrate"]["command"] == ["highlight-service", "migrate"]
    for name in ("highlight", "highlight-cpu"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        assert services[name]["environment"]["HIGHLIGHT_MIGRATE_ON_START"] == "false"
    job = _pod("Job")["containers"][0]
    assert job["command"] + job["args"] == ["highlight-service", "migrate"]
    assert _pod("Deployment")["containers"][0]["args"][0] == "serve"
    assert _manifests()["ConfigMap"]["data"]["HIGHLIGHT_MIGRATE_ON_START"] == "false"
    assert re.search(r"HIGHLIGHT_MIGRATE_ON_START=false\b", _dockerfile())


def test_the_server_runs_under_tini_which_reaps_what_a_killed_conversion_leaves() -> None:
    # The image's ENTRYPOINT, and Kubernetes' command (which replaces the ENTRYPOINT).
    text = _dockerfile()
    assert re.search(r"install[^&]*\btini\b", text), "tini is not installed"
    assert 'ENTRYPOINT ["/usr/bin/tini", "--"]' in text
    server = _pod("Deployment")["containers"][0]
    assert server["command"] == ["/usr/bin/tini", "--", "highlight-service"]


def _image_tag(image: str) -> str:
    return _expand(image).rsplit(":", 1)[1]


def test_vllm_images_are_pinned_to_the_tested_release_at_or_past_the_floor() -> None:
    """At least VLLM_FLOOR, and the same version the integration suite runs
    (scripts/vllm.sh), which refuses a version below the same floor."""
    services = _services()
    tags = {_image_tag(services[name]["image"]) for name in ("vllm", "vllm-cpu")}
    assert len(tags) == 1, f"the GPU and CPU images differ: {tags}"
    tag = tags.pop()
    assert re.fullmatch(r"v\d+\.\d+\.\d+", tag), f"{tag}: pin an exact release"
    assert Version(tag) >= VLLM_FLOOR
    script = (PROJECT_ROOT / "scripts/vllm.sh").read_text()
    suite = re.search(r"HIGHLIGHT_VLLM_VERSION:-([0-9.]+)", script)
    assert suite, "scripts/vllm.sh no longer names its default version"
    assert Version(tag) == Version(suite.group(1))
    floor = re.search(r"^VLLM_FLOOR=([0-9.]+)$", script, re.MULTILINE)
    assert floor, "scripts/vllm.sh no longer names the floor it enforces"
    assert Version(floor.group(1)) == VLLM_FLOOR


def test_dockerfile_copies_what_exists_and_installs_from_the_lock_only() -> None:
    text = _dockerfile()
    for sources in re.findall(r"^COPY (.+) \S+$", text, re.MULTILINE):
        for source in sources.split():
            assert (PROJECT_ROOT / source).exists(), f"COPY {source}: no such file"
    assert "pip install --no-deps -r requirements.lock" in text
    assert "pip install --no-deps --no-build-isolation -e ." in text
    assert text.index("requirements.lock") < text.index("COPY app")


# --- requirements.lock ----------------------------------------------------------------------


def _locked() -> dict[NormalizedName, Version]:
    """name -> version, each entry checked to carry its hashes."""
    lines = (PROJECT_ROOT / "requirements.lock").read_text().splitlines()
    locked = {}
    for i, line in enumerate(lines):
        found = re.match(r"([A-Za-z0-9._-]+)==(\S+)", line)
        if found:
            assert lines[i + 1].lstrip().startswith("--hash=sha256:"), f"{line}: no hash"
            locked[canonicalize_name(found.group(1))] = Version(found.group(2))
    return locked


def test_lock_pins_every_runtime_and_build_dependency_within_its_range() -> None:
    """Fails after a dependency is added or its range changed in pyproject.toml until the lock
    is regenerated: `make lock` (scripts/lock.sh)."""
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    wanted = pyproject["project"]["dependencies"] + pyproject["build-system"]["requires"]
    locked = _locked()
    for line in wanted:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement.name} is not in requirements.lock: run make lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"requirements.lock has {name}=={locked[name]}, pyproject wants {requirement}"
        )
    assert "pymupdf" not in locked, "pymupdf-lite and pymupdf write the same files"
