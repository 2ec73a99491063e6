"""Settings: `config/default.toml`, then an optional `--config` file, then `BENCHWATCH_*` env vars.

Env names are ``BENCHWATCH_<SECTION>_<KEY>`` (split once, so ``BENCHWATCH_SLACK_API_URL`` is
``slack.api_url``). Secrets are ``SecretStr`` so they never print in logs or pages.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from service.classify.settings import ClassifySettings
from service.detect.settings import DetectSettings
from service.domain import SOURCES, Source
from service.errors import BenchwatchError, invalid


def project_root() -> Path:
    """The checkout (or image folder) holding `config/` and `migrations/`."""
    env = os.environ.get("BENCHWATCH_HOME")
    return Path(env) if env else Path(__file__).resolve().parent.parent


DEFAULT_CONFIG = project_root() / "config" / "default.toml"
USER_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_BCRYPT = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatabaseSettings(_Section):
    url: str = "sqlite:///var/benchwatch.db"


class SourcesSettings(_Section):
    dashboard: str = "https://helionlang.com/dashboard/dashboard-data.json"
    pretuned: str = "https://helionlang.com/dashboard/pretuned-dashboard-data.json"


class FetchSettings(_Section):
    timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(1.0, ge=0)
    max_bytes: int = Field(200_000_000, gt=0)
    # the whole fetch of one source, retries included: a server trickling bytes cannot hold the pass
    deadline_s: float = Field(120.0, gt=0)


class HelionSettings(_Section):
    repo: str = ""  # local clone of pytorch/helion; "" = none (culprit search reports it)
    remote: str = "origin"  # fetched before detection when the clone has it; "" = never fetch
    github_url: str = "https://github.com/pytorch/helion"
    max_window_commits: int = Field(500, gt=0)


class SlackSettings(_Section):
    token: SecretStr = SecretStr("")
    channel: str = ""
    api_url: str = ""  # overrides slack-sdk's base_url (tests point it at a local stand-in)
    timeout_s: float = Field(15.0, gt=0)
    retries: int = Field(3, ge=0, le=10)  # per call, for 429 (Retry-After honoured) and 5xx
    backoff_s: float = Field(1.0, ge=0)  # base of the exponential back-off between 5xx retries
    history_pages: int = Field(5, ge=1, le=50)  # conversations.history pages searched on recovery
    # a 429 asking to wait longer than this is not waited for: the rows stay queued for the next run
    max_retry_after_s: float = Field(10.0, ge=0, le=300)


class NotifySettings(_Section):
    max_age_days: int = Field(3, ge=0)
    digest_enabled: bool = False
    digest_cron: str = "0 14 * * *"


class HealthSettings(_Section):
    """Health checks (service/health): when silence or failures become an alert."""

    enabled: bool = True
    nightly_sources: list[str] = Field(default_factory=lambda: [Source.DASHBOARD.value])  # checked for "no nightly"
    nightly_due_utc: str = "13:00"  # from this time of day (UTC) today's nightly must be stored...
    max_nightly_age_days: int = Field(0, ge=0, le=30)  # ...or one at most this many days older
    fetch_failures: int = Field(3, ge=1, le=100)  # failed scheduled fetches in a row before an alert
    detect_failures: int = Field(2, ge=1, le=100)  # failed detect passes in a row before an alert
    failing_nights: int = Field(2, ge=1, le=30)  # nightlies in a row a kernel produced nothing
    min_accuracy: float = Field(1.0, gt=0, le=1)  # a per-shape helion_accuracy below this fails
    partial_outage_min_kernels: int = Field(1, ge=1)  # expected kernels missing while others ran
    lookback_nights: int = Field(7, ge=2, le=60)  # recent nightlies read (known platforms/kernels)
    history_nights: int = Field(400, ge=0, le=5000)  # read at the first pass for outages before it (0: off)

    @field_validator("nightly_due_utc")
    @classmethod
    def _hh_mm(cls, v: str) -> str:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError("health.nightly_due_utc must be HH:MM (24 h, UTC)")
        return v

    @field_validator("nightly_sources")
    @classmethod
    def _sources(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in SOURCES:
                raise ValueError(f"health.nightly_sources: {name!r} is not dashboard or pretuned")
        return v


class ScheduleSettings(_Section):
    """When run-once fires. The crontab lines are parsed by APScheduler when `serve` starts (it
    refuses a bad one before anything runs); importing it for every command would cost ~50 ms."""

    cron: str = "0,30 9-12 * * *"
    extra_cron: str = "0 13 * * *"
    timezone: str = "UTC"
    misfire_grace_s: int = Field(600, ge=1)
    interval_s: int = Field(0, ge=0)  # > 0: run every N seconds instead of the crons (tests, demos)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        """An IANA zone the system knows (a typo crashed `serve` with a traceback)."""
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # stdlib, already loaded by pydantic

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r} (an IANA name such as UTC or "
                             "Europe/Berlin)") from None
        return v


class WebSettings(_Section):
    """The on-call web app. Read pages are open; actions need a user from `users` (bcrypt
    hashes) or the shared `team_token`. An empty `secret_key` gets a random one per process
    (sign-ins then end on restart), so production sets BENCHWATCH_WEB_SECRET_KEY."""

    host: str = "127.0.0.1"  # loopback unless configured (the container sets 0.0.0.0)
    port: int = Field(8080, ge=0, le=65535)
    base_url: str = "http://127.0.0.1:8080"  # what Slack messages link to
    secret_key: SecretStr = SecretStr("")
    team_token: SecretStr = SecretStr("")
    users: dict[str, str] = Field(default_factory=dict)  # name -> bcrypt hash
    session_max_age_s: int = Field(8 * 3600, ge=60)
    cookie_secure: bool = False  # True when served over HTTPS (behind a proxy)
    page_size: int = Field(50, ge=5, le=500)
    # anonymous pages are reused until the data changes, which is checked this often; 0 turns
    # the page cache off (every page rendered: for debugging, and the worst-case load figure)
    page_cache_s: float = Field(2.0, ge=0, le=300)
    # failed sign-ins allowed per user name and per client address within the window; more get
    # HTTP 429 until the window moves on (the right password too: guessing must not pay off)
    login_failures_per_name: int = Field(5, ge=1, le=1000)
    login_failures_per_address: int = Field(20, ge=1, le=10000)
    login_window_s: int = Field(900, ge=1, le=86400)

    @field_validator("users")
    @classmethod
    def _bcrypt_hashes(cls, v: dict[str, str]) -> dict[str, str]:
        for name, hashed in v.items():
            if not USER_NAME.fullmatch(name):
                raise ValueError(f"user name {name!r} must be 1-64 letters, digits, . _ -")
            if not _BCRYPT.fullmatch(hashed):
                raise ValueError(f"user {name!r}: password must be a bcrypt hash ($2b$...)")
        return v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("web.base_url must start with http:// or https://")
        return v.rstrip("/")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BENCHWATCH_",
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="forbid",
        case_sensitive=False,
    )

    database: DatabaseSettings = DatabaseSettings()
    sources: SourcesSettings = SourcesSettings()
    fetch: FetchSettings = FetchSettings()
    helion: HelionSettings = HelionSettings()
    slack: SlackSettings = SlackSettings()
    notify: NotifySettings = NotifySettings()
    schedule: ScheduleSettings = ScheduleSettings()
    web: WebSettings = WebSettings()
    health: HealthSettings = HealthSettings()
    # typed like every other section, so a typo'd knob stops every command at start, not the first pass
    detect: DetectSettings = DetectSettings()
    classify: ClassifySettings = ClassifySettings()

    @field_validator("database")
    @classmethod
    def _known_scheme(cls, v: DatabaseSettings) -> DatabaseSettings:
        if not v.url.startswith(("sqlite:", "postgresql:", "postgresql+psycopg:")):
            raise ValueError("database.url must be a sqlite: or postgresql: URL")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # env beats the files, which arrive merged as init kwargs
        return (env_settings, init_settings)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchwatchError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise BenchwatchError(f"config file {path} is not valid TOML: {exc}") from None


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(config_file: str | Path | None = None) -> Settings:
    """Build settings; a bad file or value raises BenchwatchError naming the key."""
    data = _read_toml(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else {}
    if config_file:
        data = _deep_merge(data, _read_toml(Path(config_file)))
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise invalid("config", exc) from None
    except SettingsError as exc:  # an env value that must be JSON and is not (BENCHWATCH_WEB_USERS)
        cause = exc.__cause__
        why = f": {' '.join(str(cause).split())[:120]}" if cause else ""
        raise BenchwatchError(f"config: {' '.join(str(exc).split())}{why}") from None
