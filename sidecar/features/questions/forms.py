"""An elicitation's form: the agent's `requestedSchema` checked and read into fields, and the
user's answers checked and converted against it (ACP v1 `elicitation/create`, form mode).

The sidecar decides what a field is and whether an answer fits it; editors only ask. An answer
may come as typed text (Neovim's `vim.ui.input`, a VS Code InputBox): "3" for an integer field,
"yes" for a boolean, "a, b" for a multi-select are converted here, once.

A field's `pattern` is the agent's: a catastrophic one (`^(a|a)+$`) backtracks for ever on a
short answer. It is matched by the `regex` module, which gives up after `MATCH_TIMEOUT` and lets
other threads run meanwhile; reading a schema (its defaults) and checking answers run on the
kernel's worker, never on the event loop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

import attrs
import regex

from sidecar.kernel.worker import checkpoint

JsonObj = dict[str, Any]
Kind = Literal["string", "number", "integer", "boolean", "enum", "multiselect"]

MAX_FIELDS = 50
MAX_OPTIONS = 500
MAX_NAME = 100
MAX_TEXT = 2000  # a title, description or option label, as shown
MAX_PATTERN = 1000
MAX_ANSWER = 100_000  # characters of one string answer
MATCH_TIMEOUT = 0.5  # seconds for one answer against its field's pattern (at most MAX_FIELDS)
FORMATS = ("email", "uri", "date", "date-time")
_EMAIL = re.compile(r"\A[^@\s]+@[^@\s]+\.[^@\s]+\Z")
_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}
_INT64 = 2**63


class FormError(ValueError):
    """The agent's schema, or the user's answer, does not fit (the message says where)."""


@attrs.frozen
class Option:
    value: str
    title: str


@attrs.frozen
class Field:
    name: str
    kind: Kind
    title: str
    description: str | None = None
    required: bool = False
    default: Any = None
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    min_items: int | None = None
    max_items: int | None = None

    def to_json(self) -> JsonObj:
        """The field as the editor gets it in `acp/elicitation` (docs/protocol.md)."""
        out: JsonObj = {"name": self.name, "kind": self.kind, "title": self.title, "required": self.required}
        for key, value in (
            ("description", self.description),
            ("default", self.default),
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("pattern", self.pattern),
            ("format", self.format),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
        ):
            if value is not None:
                out[key] = value
        if self.options:
            out["options"] = [{"value": o.value, "title": o.title} for o in self.options]
        return out


@attrs.frozen
class Form:
    title: str | None
    description: str | None
    fields: tuple[Field, ...]

    def answer(self, content: object) -> JsonObj:
        """The user's answers as the agent gets them (`accept` content), or FormError naming the
        first field that does not fit. A missing or empty optional field is left out."""
        if content is None:
            content = {}
        if not isinstance(content, Mapping):
            raise FormError("content must be an object of field name -> value")
        known = {f.name for f in self.fields}
        unknown = [str(k) for k in content if k not in known]
        if unknown:
            raise FormError(f"unknown field {unknown[0]!r:.120}; the form has: {', '.join(sorted(known))}")
        out: JsonObj = {}
        for f in self.fields:
            raw = content.get(f.name)
            if raw is None or raw == "" or raw == []:
                if f.required:
                    raise FormError(f"{f.title}: an answer is required")
                continue
            out[f.name] = _convert(f, raw)
        return out

    def problems(self, content: Mapping[str, object]) -> list[str]:
        """What `answer` would refuse, for every field that does not fit (first to last): the
        user of a whole form sees all of them at once."""
        found: list[str] = []
        for f in self.fields:
            try:
                self._field_form(f).answer({f.name: content.get(f.name)})
            except FormError as exc:
                found.append(str(exc))
        return found

    @staticmethod
    def _field_form(f: Field) -> Form:
        return Form(None, None, (f,))


def parse_form(schema: object) -> Form:
    """The agent's `requestedSchema`, checked: FormError with a clear message when it is not one
    the user can be asked (the agent gets that error; the user is not asked)."""
    if not isinstance(schema, Mapping):
        raise FormError("requestedSchema must be an object")
    if schema.get("type", "object") != "object":
        raise FormError("requestedSchema.type must be 'object'")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise FormError("requestedSchema.properties must be a non-empty object")
    if len(properties) > MAX_FIELDS:
        raise FormError(f"requestedSchema has {len(properties)} fields; at most {MAX_FIELDS}")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise FormError("requestedSchema.required must be a list of field names")
    missing = [r for r in required if r not in properties]
    if missing:
        raise FormError(f"requestedSchema.required names {missing[0]!r:.120}, which is not a field")
    fields = tuple(_field(str(name), prop, str(name) in required) for name, prop in properties.items())
    return Form(_text(schema.get("title"), "title"), _text(schema.get("description"), "description"), fields)


def check_url(url: object) -> str:
    """An URL-mode elicitation's URL: only http(s) with a host is ever offered to open."""
    if not isinstance(url, str) or not url or len(url) > 8192:
        raise FormError("url must be a non-empty string of at most 8192 characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise FormError(f"url {url[:200]!r} is not an http(s) URL; it is not offered to the user")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise FormError("url contains spaces or control characters")
    return url


def _text(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise FormError(f"{what} must be a string")
    return value[:MAX_TEXT]


def _field(name: str, prop: object, required: bool) -> Field:
    where = f"field {name[:MAX_NAME]!r}"
    if not name or len(name) > MAX_NAME:
        raise FormError(f"field names are 1 to {MAX_NAME} characters")
    if not isinstance(prop, Mapping):
        raise FormError(f"{where}: its schema must be an object")
    title = _text(prop.get("title"), f"{where}: title") or name
    description = _text(prop.get("description"), f"{where}: description")
    kind = prop.get("type")
    common: JsonObj = {"name": name, "title": title, "description": description, "required": required}
    if kind == "string":
        options = _string_options(prop, where)
        if options:
            f = Field(kind="enum", options=options, **common)
        else:
            fmt = prop.get("format")
            if fmt is not None and fmt not in FORMATS:
                raise FormError(f"{where}: unknown format {fmt!r:.40}; one of {', '.join(FORMATS)}")
            pattern = prop.get("pattern")
            if pattern is not None:
                if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN:
                    raise FormError(f"{where}: pattern must be a string of at most {MAX_PATTERN} characters")
                try:
                    regex.compile(pattern)
                except regex.error as exc:
                    raise FormError(f"{where}: pattern does not compile ({exc})") from None
            f = Field(
                kind="string",
                min_length=_count(prop, "minLength", where),
                max_length=_count(prop, "maxLength", where),
                pattern=pattern,
                format=fmt,
                **common,
            )
    elif kind in ("number", "integer"):
        f = Field(
            kind=kind,
            minimum=_number(prop.get("minimum"), f"{where}: minimum", kind == "integer"),
            maximum=_number(prop.get("maximum"), f"{where}: maximum", kind == "integer"),
            **common,
        )
    elif kind == "boolean":
        f = Field(kind="boolean", **common)
    elif kind == "array":
        f = Field(
            kind="multiselect",
            options=_items_options(prop.get("items"), where),
            min_items=_count(prop, "minItems", where),
            max_items=_count(prop, "maxItems", where),
            **common,
        )
    else:
        raise FormError(f"{where}: type {kind!r:.40} is not one of string, number, integer, boolean, array")
    for low, high in ((f.minimum, f.maximum), (f.min_length, f.max_length), (f.min_items, f.max_items)):
        if low is not None and high is not None and low > high:
            raise FormError(f"{where}: its minimum is above its maximum")
    default = prop.get("default")
    if default is not None:
        try:
            default = _convert(f, default)
        except FormError as exc:
            raise FormError(f"{where}: its default does not fit ({exc})") from None
    return attrs.evolve(f, default=default)


def _string_options(prop: Mapping[str, Any], where: str) -> tuple[Option, ...]:
    enum, one_of = prop.get("enum"), prop.get("oneOf")
    if enum is not None:
        if not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum):
            raise FormError(f"{where}: enum must be a non-empty list of strings")
        names = prop.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(enum) else enum
        return _options([(v, str(t)) for v, t in zip(enum, titles, strict=True)], where)
    if one_of is not None:
        return _options(_titled(one_of, f"{where}: oneOf"), where)
    return ()


def _items_options(items: object, where: str) -> tuple[Option, ...]:
    if not isinstance(items, Mapping):
        raise FormError(f"{where}: a multi-select needs items (enum or anyOf)")
    if "anyOf" in items:
        return _options(_titled(items.get("anyOf"), f"{where}: items.anyOf"), where)
    enum = items.get("enum")
    if items.get("type") != "string" or not isinstance(enum, list) or not enum:
        raise FormError(f"{where}: items must be strings with an enum, or titled anyOf options")
    if not all(isinstance(v, str) for v in enum):
        raise FormError(f"{where}: items.enum must hold strings")
    return _options([(v, v) for v in enum], where)


def _titled(raw: object, where: str) -> list[tuple[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise FormError(f"{where} must be a non-empty list of {{const, title}}")
    out = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
            raise FormError(f"{where}: each option needs a string const")
        title = item.get("title")
        out.append((item["const"], title if isinstance(title, str) else item["const"]))
    return out


def _options(pairs: list[tuple[str, str]], where: str) -> tuple[Option, ...]:
    if len(pairs) > MAX_OPTIONS:
        raise FormError(f"{where}: {len(pairs)} options; at most {MAX_OPTIONS}")
    values = [v for v, _ in pairs]
    if len(set(values)) != len(values):
        raise FormError(f"{where}: an option value is listed twice")
    return tuple(Option(v, t[:MAX_TEXT]) for v, t in pairs)


def _count(prop: Mapping[str, Any], key: str, where: str) -> int | None:
    value = prop.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
        raise FormError(f"{where}: {key} must be a non-negative integer")
    return value


def _number(value: object, where: str, integer: bool) -> float | None:
    if value is None:
        return None
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if not ok or isinstance(value, bool) or not math.isfinite(value) or abs(value) >= _INT64:  # type: ignore[arg-type]
        raise FormError(f"{where} must be a{'n integer' if integer else ' finite number'}")
    return value  # type: ignore[return-value]


def _convert(f: Field, raw: object) -> Any:
    """One answer, converted to the field's kind and checked against its bounds."""
    label = f.title
    if f.kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise FormError(f"{label}: answer yes or no")
    if f.kind in ("number", "integer"):
        value = _as_number(raw, f.kind == "integer", label)
        if f.minimum is not None and value < f.minimum:
            raise FormError(f"{label}: at least {f.minimum:g}")
        if f.maximum is not None and value > f.maximum:
            raise FormError(f"{label}: at most {f.maximum:g}")
        return value
    if f.kind == "enum":
        return _pick(f, raw, label)
    if f.kind == "multiselect":
        if isinstance(raw, str):
            raw = [part.strip() for part in raw.split(",") if part.strip()]
        if not isinstance(raw, list):
            raise FormError(f"{label}: a list of choices")
        chosen: list[str] = []
        for item in raw:
            picked = _pick(f, item, label)
            if picked not in chosen:
                chosen.append(picked)
        if f.min_items is not None and len(chosen) < f.min_items:
            raise FormError(f"{label}: choose at least {f.min_items}")
        if f.max_items is not None and len(chosen) > f.max_items:
            raise FormError(f"{label}: choose at most {f.max_items}")
        return chosen
    if not isinstance(raw, str):
        raise FormError(f"{label}: a text answer")
    if len(raw) > MAX_ANSWER:
        raise FormError(f"{label}: at most {MAX_ANSWER} characters")
    if f.min_length is not None and len(raw) < f.min_length:
        raise FormError(f"{label}: at least {f.min_length} characters")
    if f.max_length is not None and len(raw) > f.max_length:
        raise FormError(f"{label}: at most {f.max_length} characters")
    if f.pattern is not None and not _matches(label, f.pattern, raw):
        raise FormError(f"{label}: does not match {f.pattern[:100]}")
    if f.format is not None and not _fits_format(raw, f.format):
        raise FormError(f"{label}: not a valid {f.format}")
    return raw


def _matches(label: str, pattern: str, text: str) -> bool:
    checkpoint()  # on the worker: stop between fields once nobody waits
    try:
        return regex.search(pattern, text, timeout=MATCH_TIMEOUT) is not None
    except TimeoutError:
        raise FormError(
            f"{label}: its pattern {pattern[:100]} takes too long to check (over {MATCH_TIMEOUT:g} s)"
        ) from None


def _as_number(raw: object, integer: bool, label: str) -> int | float:
    value: int | float
    if isinstance(raw, bool):
        raise FormError(f"{label}: a number")
    if isinstance(raw, int | float):
        value = raw
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise FormError(f"{label}: {'a whole number' if integer else 'a number'}") from None
    else:
        raise FormError(f"{label}: a number")
    if integer and (isinstance(value, float) and not value.is_integer()):
        raise FormError(f"{label}: a whole number")
    if not math.isfinite(value) or abs(value) >= _INT64:
        raise FormError(f"{label}: out of range")
    return int(value) if integer else float(value)


def _pick(f: Field, raw: object, label: str) -> str:
    if isinstance(raw, str):
        for option in f.options:
            if raw == option.value:
                return option.value
        for option in f.options:
            if raw.strip().casefold() == option.title.casefold():
                return option.value
    choices = ", ".join(o.title for o in f.options[:20])
    raise FormError(f"{label}: choose one of {choices}")


def _fits_format(text: str, fmt: str) -> bool:
    if fmt == "email":
        return _EMAIL.match(text) is not None
    if fmt == "uri":
        parts = urlsplit(text)
        return bool(parts.scheme) and bool(parts.netloc or parts.path) and " " not in text
    try:
        if fmt == "date":
            date.fromisoformat(text)
        else:
            datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
