"""The JetJob CRD's schema as a jsonschema validator, with Kubernetes' strict field validation.

Kubernetes refuses unknown fields (``kubectl apply`` uses server-side strict field validation)
wherever the structural schema does not preserve unknown fields; a CRD itself may not say
``additionalProperties: false`` next to ``properties``. So the validator adds exactly that,
everywhere Kubernetes would refuse an unknown field. OpenAPI 3.0's boolean ``exclusiveMinimum``
becomes Draft 7's numeric one. :func:`cel_errors` evaluates the schema's CEL rules
(``x-kubernetes-validations``) with a real CEL interpreter, as the API server does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "jetjobs.jet.dev.yaml"
CHART_DIR = ROOT / "charts" / "jet-operator"
CHART_CRD_FILE = CHART_DIR / "files" / "jetjobs.jet.dev.yaml"
EXAMPLES_DIR = ROOT / "examples"


def load_crd() -> dict[str, Any]:
    """The CRD document."""
    return yaml.safe_load(CRD_FILE.read_text())


def openapi_schema(crd: dict[str, Any] | None = None) -> dict[str, Any]:
    """The served version's openAPIV3Schema."""
    crd = crd or load_crd()
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def with_strict_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` refusing unknown fields where Kubernetes would."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            if node.get("exclusiveMinimum") is True:
                node["exclusiveMinimum"] = node.pop("minimum")
            if node.get("x-kubernetes-preserve-unknown-fields"):
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def validator() -> jsonschema.Draft7Validator:
    """A Draft 7 validator of JetJob documents."""
    return jsonschema.Draft7Validator(with_strict_fields(openapi_schema()))


def jetjobs_in(path: Path) -> list[dict[str, Any]]:
    """The JetJob documents of a multi-document YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == "JetJob"]


def cel_errors(document: dict[str, Any]) -> list[str]:
    """The messages of every CEL rule of the schema that ``document`` breaks (rules are evaluated
    where their node is present in the document, as Kubernetes does). A rule's
    ``messageExpression`` is evaluated for its message, as Kubernetes does; a document without
    ``metadata.name`` gets one (every object the API server validates has a name)."""
    environment = celpy.Environment()
    errors: list[str] = []
    if "name" not in (document.get("metadata") or {}):
        document = {**document, "metadata": {**(document.get("metadata") or {}), "name": "job"}}

    def evaluate(expression: str, value: Any) -> Any:
        return environment.program(environment.compile(expression)).evaluate({"self": celpy.json_to_cel(value)})

    def walk(schema: dict[str, Any], value: Any, path: str) -> None:
        for rule in schema.get("x-kubernetes-validations") or []:
            if not bool(evaluate(rule["rule"], value)):
                message = (str(evaluate(rule["messageExpression"], value)) if "messageExpression" in rule
                           else rule["message"])
                errors.append(f"{path}: {message}")
        if isinstance(value, dict):
            for name, child in (schema.get("properties") or {}).items():
                if name in value:
                    walk(child, value[name], f"{path}.{name}")

    walk(openapi_schema(), document, "")
    return errors
