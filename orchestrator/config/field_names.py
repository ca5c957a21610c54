"""The fields fleet.yaml allows at a place in the file, for a `did you mean` after an unknown
field: found by walking the config models along the field's path."""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from orchestrator.config.safe_yaml import FieldPath


def allowed_fields(root: type[BaseModel], path: FieldPath) -> set[str]:
    """The field names (as written in the file) of the models that may stand at `path`."""
    annotation: Any = root
    for part in path:
        annotation = _step(annotation, part)
        if annotation is None:
            return set()
    return {
        field.alias or name for model in _models(annotation) for name, field in model.model_fields.items()
    }


def _step(annotation: Any, part: str | int) -> Any:
    """What stands one step further, at `part` (a field, a mapping's key, a list's index, or
    the name of a union's member in a validation error's location)."""
    for model in _models(annotation):
        if part == model.__name__:
            return model
        for name, field in model.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
    for inner in _unwrapped(annotation):
        origin = get_origin(inner)
        if origin is dict and isinstance(part, str):
            return get_args(inner)[1]
        if origin in (list, tuple) and isinstance(part, int):
            return get_args(inner)[0]
    return None


def _unwrapped(annotation: Any) -> list[Any]:
    """The members of a union (Optional included) and what an Annotated wraps, flattened."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _unwrapped(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _unwrapped(arg)]
    return [annotation]


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in _unwrapped(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
