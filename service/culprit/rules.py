"""Slice rules (``config/slices.toml``): which tags, paths and words tie a commit to a platform.

Kept in a TOML file rather than code because Helion's tags drift ([cute], [CuTe], [cutedsl],
[cutedls]...) and a maintainer should be able to teach the ranker a new tag without a release.
The file is validated by pydantic; a bad file is a one-line error naming the key.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from service.config import project_root
from service.errors import BenchwatchError, invalid

def default_rules_path() -> Path:
    return project_root() / "config" / "slices.toml"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_REPO_PATH = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.+-]*)*")


def _lower(values: object) -> object:
    """Lowercase a list of words; anything else is left for pydantic to reject with the key."""
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        return values
    return tuple(v.strip().lower() for v in values if v.strip())


class Weights(_Model):
    base_code: float = Field(0.10, ge=0, le=1)
    tag: float = Field(0.35, ge=0, le=1)
    path: float = Field(0.30, ge=0, le=1)
    shared_code: float = Field(0.15, ge=0, le=1)
    device_hint: float = Field(0.10, ge=0, le=1)
    kernel: float = Field(0.40, ge=0, le=1)
    kernel_rank: float = Field(0.40, ge=0, le=1)  # order only: naming the moved kernel ranks first
    family: float = Field(0.10, ge=0, le=1)
    other_family: float = Field(0.5, ge=0, le=1)  # discount: names only another kernel family
    other_slice: float = Field(0.30, ge=0, le=1)
    docs_only: float = Field(0.15, ge=0, le=1)
    test_only: float = Field(0.25, ge=0, le=1)
    harness_only: float = Field(0.50, ge=0, le=1)
    change_threshold: float = Field(0.35, ge=0, le=1)
    no_behaviour: float = Field(0.5, ge=0, le=1)  # discount: the subject says behaviour is unchanged
    new_kernels_only: float = Field(0.25, ge=0, le=1)  # discount: only adds new example kernels
    autotuner: float = Field(0.30, ge=0, le=1)  # changes the autotuner, and autotuning time moved with the step


class ChangeWeights(_Model):
    """How a harness (method) or runner (hardware) change commit is scored (`find_change_commit`)."""

    strong_path_harness: float = Field(0.45, ge=0, le=1)
    strong_path_runner: float = Field(0.25, ge=0, le=1)
    weak_path_harness: float = Field(0.20, ge=0, le=1)
    weak_path_runner: float = Field(0.15, ge=0, le=1)
    keyword: float = Field(0.30, ge=0, le=1)
    tag_harness: float = Field(0.20, ge=0, le=1)
    tag_runner: float = Field(0.05, ge=0, le=1)
    device_hint: float = Field(0.05, ge=0, le=1)
    harness_only: float = Field(0.10, ge=0, le=1)
    no_path: float = Field(0.30, ge=0, le=1)
    other_kind: float = Field(0.60, ge=0, le=1)


class PlatformRule(_Model):
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    # the benchmark_dispatch inputs whose `default:` lists the kernels this platform runs
    kernel_inputs: tuple[str, ...] = ("kernels",)
    # files that pin this platform's own software stack (its compiler DSL or runtime, e.g.
    # .github/ci_commit_pins/torch_tpu.txt): a new value is a toolchain change of the machine,
    # not a change to Helion's code
    toolchain_files: tuple[str, ...] = ()

    _norm = field_validator("tags", "hints", mode="before")(lambda v: _lower(v))

    @field_validator("toolchain_files")
    @classmethod
    def _repo_paths(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # read with `git show <sha>:<path>`: plain repository paths only, refused at start
        for path in v:
            if not _REPO_PATH.fullmatch(path) or any(part in (".", "..") for part in path.split("/")):
                raise ValueError(f"not a repository file path: {path[:80]!r}")
        return v


class PathClass(_Model):
    """A class of files (docs, tests, harness, runner): path prefixes, suffixes, subject tags/words."""

    paths: tuple[str, ...] = ()
    strong_paths: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    timer_keywords: tuple[str, ...] = ()  # harness only: subject words that name a timer change
    code_paths: tuple[str, ...] = ()

    _norm = field_validator("tags", "keywords", "timer_keywords", mode="before")(lambda v: _lower(v))


class Suite(_Model):
    """A benchmark suite of its own job (the linear-attention kernels against FLA): the harness
    files only it runs and the words a commit's subject names it by. Such a commit changed how
    that suite is measured, not every kernel of the platform."""

    paths: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    _norm = field_validator("words", mode="before")(lambda v: _lower(v))


class Family(_Model):
    kernels: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    _norm = field_validator("kernels", "words", mode="before")(lambda v: _lower(v))


def _refuse_keys(table: dict, pattern: str, rule: str) -> None:
    bad = [k for k in table if not re.fullmatch(pattern, k)]
    if bad:
        raise ValueError(f"{rule}, not {bad[0]!r}")


class SliceRules(_Model):
    weights: Weights = Weights()
    change_weights: ChangeWeights = ChangeWeights()
    # subject words that say the commit does not change what runs (lint, typing, renames)
    no_behaviour_words: tuple[str, ...] = ()
    platforms: dict[str, PlatformRule]
    other: PlatformRule = PlatformRule()
    shared: PathClass = PathClass()
    docs: PathClass = PathClass()
    tests: PathClass = PathClass()
    harness: PathClass = PathClass()
    runner: PathClass = PathClass()
    kernel_aliases: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    families: dict[str, Family] = Field(default_factory=dict)
    # keyed by the suite's baseline label, which its tracks publish (`Track.baseline_label`)
    suites: dict[str, Suite] = Field(default_factory=dict)
    # the pretuned suite's own files: only its nightly runs them, never the dashboard's
    pretuned_suite: PathClass = PathClass()
    # the autotuner's own code and the words that name it: what changes how long a kernel is
    # tuned and which config wins (`rank._score`, when compile time moved with the speed)
    autotuner: PathClass = PathClass()
    # memo for derived lookups (file classes, other-slice sets); never part of the rules' value
    _memo: dict = PrivateAttr(default_factory=dict)

    _norm = field_validator("no_behaviour_words", mode="before")(lambda v: _lower(v))

    def memo(self) -> dict:
        return self._memo

    @field_validator("suites")
    @classmethod
    def _suite_names(cls, v: dict[str, Suite]) -> dict[str, Suite]:
        # a suite's name goes into its events' group part ("own_method/suite NAME", 32 characters)
        _refuse_keys(v, r"[A-Za-z0-9_.-]{1,15}", "suite names are baseline labels of 1-15 letters, digits, '_', '.' or '-'")
        return v

    @field_validator("platforms")
    @classmethod
    def _known_platforms(cls, v: dict[str, PlatformRule]) -> dict[str, PlatformRule]:
        _refuse_keys(v, r"[a-z0-9_]+", "platform names must be lowercase platform_short values")
        if not v:
            raise ValueError("at least one platform is required")
        return v

    def platform(self, platform_short: str) -> PlatformRule:
        """The platform's rule; an unknown platform gets an empty rule (only neutral signals)."""
        return self.platforms.get(platform_short, PlatformRule())


def load_rules(path: Path | None = None) -> SliceRules:
    """Read and validate the slice rules (default ``config/slices.toml``)."""
    path = Path(path) if path is not None else default_rules_path()
    return _load(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=8)
def _load(path_s: str, _mtime: int) -> SliceRules:
    path = Path(path_s)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchwatchError(f"slice rules file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BenchwatchError(f"slice rules file {path} is not valid TOML: {exc}") from None
    try:
        return SliceRules.model_validate(data)
    except ValidationError as exc:
        raise invalid(f"slice rules {path.name}", exc) from None
