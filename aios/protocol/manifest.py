"""``apps/<id>/manifest.json`` (docs/app-guide.md §8) and its per-locale texts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from aios.names import (
    DEFAULT_LOCALE as DEFAULT_LOCALE,
    LOCALES as LOCALES,
    PERMISSIONS as PERMISSIONS,
    Locale as Locale,
    Permission as Permission,
)
from aios.protocol.base import _Open, parse_as
from aios.protocol.outbound import DOMAINS_MAX, BadDestination, check_domain

_ICON_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ICON_IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp")
MAX_ICON_TEXT = 8
"""Code points of a text icon: an emoji with its modifiers, not a sentence."""


def icon_file(icon: str) -> str | None:
    """The relative image path a manifest's ``icon`` names, or None when it names none."""
    p = Path(icon)
    if (
        icon
        and p.suffix.lower() in ICON_IMAGE_SUFFIXES
        and not p.is_absolute()
        and ".." not in p.parts
        and "\\" not in icon
        and ":" not in icon
    ):
        return icon
    return None


# ------------------------------------------------------------------- manifest


# Caps on the manifest's text fields: what the desktop shows (taskbar, start menu,
# window titles) must fit there, and a name or icon may not be a page of text.
MANIFEST_NAME_MAX = 64
MANIFEST_DESCRIPTION_MAX = 500
MANIFEST_ICON_MAX = 200
MANIFEST_AUTHOR_MAX = 100
MANIFEST_VERSION_MAX = 40
MANIFEST_KEYWORD_MAX = 40
MANIFEST_KEYWORDS_MAX = 100
MANIFEST_EXAMPLE_MAX = 100
MANIFEST_EXAMPLES_MAX = 8


_LOCALE_SUFFIXES = {"en": "_en", "zh-CN": "_zh"}
"""``name_en`` / ``description_en`` / ``examples_en``: the flat spelling of one locale."""


def _per_locale(value: Any, field: str, check: Any) -> dict[str, Any]:
    """``value`` (one text, or ``{locale: text}``) as ``{locale: text}``; ValueError naming why."""
    if not isinstance(value, dict):
        return {DEFAULT_LOCALE: check(value)}
    out: dict[str, Any] = {}
    for key, text in value.items():
        if key not in LOCALES:
            raise ValueError(
                f"unknown locale {key!r} in {field}: use {' or '.join(map(repr, LOCALES))}"
            )
        out[key] = check(text, key)
    if not out:
        raise ValueError(f"{field} has no text: give at least one of {', '.join(LOCALES)}")
    return out


def _text_check(field: str, max_len: int, *, required: bool) -> Any:
    def check(v: Any, locale: str = DEFAULT_LOCALE) -> str:
        if not isinstance(v, str):
            raise ValueError(
                f"{field} must be a string or an object of locale -> string "
                f'({{"zh-CN": "...", "en": "..."}}), got {type(v).__name__}'
            )
        if required and not v.strip():
            raise ValueError(f"{field} ({locale}) is empty")
        if len(v) > max_len:
            raise ValueError(f"{field} ({locale}) is longer than {max_len} characters")
        return v

    return check


def _examples_check(v: Any, locale: str = DEFAULT_LOCALE) -> list[str]:
    if not isinstance(v, list):
        raise ValueError(
            "examples must be a list of strings or an object of locale -> list of strings, "
            f"got {type(v).__name__}"
        )
    if not all(isinstance(x, str) and x.strip() for x in v):
        raise ValueError(f"examples ({locale}) must be non-empty strings")
    if len(v) > MANIFEST_EXAMPLES_MAX or any(len(x) > MANIFEST_EXAMPLE_MAX for x in v):
        raise ValueError(
            f"examples ({locale}): at most {MANIFEST_EXAMPLES_MAX}, each at most "
            f"{MANIFEST_EXAMPLE_MAX} characters"
        )
    return list(v)


_CHECKS: dict[str, Any] = {
    "name": _text_check("name", MANIFEST_NAME_MAX, required=True),
    "description": _text_check("description", MANIFEST_DESCRIPTION_MAX, required=False),
    "examples": _examples_check,
}
"""The per-locale fields of a manifest, and how one locale's value is checked."""
_NameText = Annotated[str, Field(min_length=1, max_length=MANIFEST_NAME_MAX)]
_DescriptionText = Annotated[str, Field(max_length=MANIFEST_DESCRIPTION_MAX)]
_Examples = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MANIFEST_EXAMPLE_MAX)]],
    Field(max_length=MANIFEST_EXAMPLES_MAX),
]


class Manifest(_Open):
    """``apps/<id>/manifest.json`` (docs/app-guide.md §8)."""

    # name, description and examples: one value (zh-CN) or one per locale (DESIGN §3); the
    # flat name_en / description_en / examples_en are folded in. After validation each holds
    # {locale: value}: read them with name_in / description_in / examples_in.
    names_given: _NameText | dict[Locale, _NameText] = Field(alias="name")
    entry: str = Field(min_length=1)
    role_prompt: str | None = None
    icon: str = Field(default="", max_length=MANIFEST_ICON_MAX)
    """A Lucide icon name from renderer/vendor/lucide ("music"), an image file in the app
    folder ("icon.png") or a short text such as an emoji; empty: the app's initial."""
    descriptions_given: _DescriptionText | dict[Locale, _DescriptionText] = Field(
        default="", alias="description"
    )
    examples_given: _Examples | dict[Locale, _Examples] = Field(
        default_factory=list, alias="examples"
    )
    """Sample instructions shown to the user (help, start menu): one list or one per locale."""
    author: str = Field(default="", max_length=MANIFEST_AUTHOR_MAX)
    version: str = Field(default="", max_length=MANIFEST_VERSION_MAX)
    workdir: str = "workspace"
    port: int | None = Field(default=None, ge=1024, le=65535)
    handle_endpoint: str = "/handle"
    keywords: list[Annotated[str, Field(max_length=MANIFEST_KEYWORD_MAX)]] = Field(
        default_factory=list, max_length=MANIFEST_KEYWORDS_MAX
    )
    shell_whitelist: list[str] | None = None
    http_domain_whitelist: list[str] | None = None
    permissions: list[Permission] = Field(default_factory=list)
    """Requests (DESIGN §11.7): each takes effect once the user granted it."""
    domains: list[str] = Field(default_factory=list, max_length=DOMAINS_MAX)
    """Outbound destinations the app asks for (DESIGN §14.5): requests the user grants
    (``domain:<host>`` beside the permissions); each covers its subdomains."""

    @field_validator("domains")
    @classmethod
    def _domains(cls, v: list[str]) -> list[str]:
        try:
            return list(dict.fromkeys(check_domain(d) for d in v))
        except BadDestination as e:
            raise ValueError(str(e)) from e

    @model_validator(mode="before")
    @classmethod
    def _flat_locales(cls, raw: Any) -> Any:
        """Fold ``name_en`` (and the like) into ``name``: ``{"zh-CN": name, "en": name_en}``."""
        if not isinstance(raw, dict):
            return raw
        raw = dict(raw)
        for field in _CHECKS:
            flat = {
                loc: raw.pop(field + suffix)
                for loc, suffix in _LOCALE_SUFFIXES.items()
                if field + suffix in raw
            }
            if flat:
                given = raw.get(field)
                base = given if isinstance(given, dict) else {}
                if field in raw and not isinstance(given, dict):
                    base = {DEFAULT_LOCALE: given}
                raw[field] = {**base, **flat}
        return raw

    @field_validator("names_given", "descriptions_given", "examples_given", mode="before")
    @classmethod
    def _locales(cls, v: Any, info: ValidationInfo) -> dict[str, Any]:
        field = (info.field_name or "").removesuffix("_given")
        field = {"names": "name", "descriptions": "description"}.get(field, field)
        return _per_locale(v, field, _CHECKS[field])

    @staticmethod
    def _in(given: Any, locale: str | None) -> Any:
        if not isinstance(given, dict):
            return given
        for loc in (locale, DEFAULT_LOCALE, *LOCALES):
            if loc in given and given[loc]:
                return given[loc]
        return next(iter(given.values()), None)

    @property
    def name(self) -> str:
        """The name in the default locale (zh-CN), else the one given."""
        return self.name_in(DEFAULT_LOCALE)

    @property
    def description(self) -> str:
        return self.description_in(DEFAULT_LOCALE)

    def name_in(self, locale: str | None) -> str:
        """The name in ``locale``; a locale not given falls back to zh-CN, then to any."""
        return str(self._in(self.names_given, locale) or "")

    def description_in(self, locale: str | None) -> str:
        return str(self._in(self.descriptions_given, locale) or "")

    def examples_in(self, locale: str | None) -> list[str]:
        return list(self._in(self.examples_given, locale) or [])

    @property
    def names(self) -> dict[str, str]:
        """Every locale's name, each falling back as :meth:`name_in` does."""
        return {loc: self.name_in(loc) for loc in LOCALES}

    @property
    def descriptions(self) -> dict[str, str]:
        return {loc: self.description_in(loc) for loc in LOCALES}

    @property
    def examples(self) -> dict[str, list[str]]:
        return {loc: self.examples_in(loc) for loc in LOCALES}

    @field_validator("entry", "workdir")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = Path(v)
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"must be a path inside the app folder (got {v!r})")
        return v

    @field_validator("icon")
    @classmethod
    def _icon(cls, v: str) -> str:
        v = v.strip()
        if not v or _ICON_NAME.match(v) or icon_file(v) is not None:
            return v
        looks_like_path = "/" in v or "\\" in v or "." in v
        if (
            not looks_like_path
            and len(v) <= MAX_ICON_TEXT
            and v.isprintable()
            and not any(c.isspace() for c in v)
        ):
            return v
        raise ValueError(
            f"must be an icon name such as 'music', an image file inside the app folder "
            f"({', '.join(ICON_IMAGE_SUFFIXES)}) or an emoji of at most {MAX_ICON_TEXT} "
            f"characters (got {v!r})"
        )

    @field_validator("handle_endpoint")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        if not v.startswith("/") or any(c in v for c in "?# "):
            raise ValueError(f"must be a path starting with '/' (got {v!r})")
        return v


def parse_manifest(payload: Any) -> Manifest:
    return parse_as(Manifest, payload, "manifest")
