"""A Docker engine for the live deployment test: find or start `dockerd`, pick the compose
command, and make sure the two base images the project names exist, building local stand-ins
from Debian packages where no registry can be reached.

Everything here is test tooling: the project's Dockerfile and compose file name the official
images, and the stand-ins exist only on machines that cannot pull them. The stand-in bases are
cached between runs on the same machine (``BENCHWATCH_DEPLOY_CACHE``, default
``/var/cache/benchwatch-deploy``: the debootstrap tree as a tarball, and the images themselves in
the engine's store, labelled ``org.benchwatch.standin=<recipe hash>``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("BENCHWATCH_DEPLOY_CACHE", "/var/cache/benchwatch-deploy"))
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_TAG = "benchwatch-standin/bookworm-minbase"
STANDIN_LABEL = "org.benchwatch.standin"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
# image the project names -> the stand-in recipe that replaces it here
STANDINS = {
    "python:3.11-slim": ("python.Dockerfile", ()),
    "postgres:16-bookworm": ("postgres.Dockerfile", ("postgres-entrypoint.sh",)),
}


class Unavailable(Exception):
    """No engine can be had here; the message is the skip reason."""


def run(argv: list[str], *, timeout: float, check: bool = True, log=None, **kw) -> subprocess.CompletedProcess:
    """A bounded command; its output is captured and shown when it fails."""
    if log:
        log("$ " + " ".join(argv))
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    proc = subprocess.run(argv, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        out = (proc.stdout or "")[-3000:] + (proc.stderr or "")[-3000:]
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{out}")
    return proc


def docker_ok() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@dataclass
class Engine:
    """The engine in use; ``started`` is the dockerd this process started (stopped by ``close``)."""

    started: subprocess.Popen | None = None
    log_path: Path | None = None
    compose: list[str] = field(default_factory=list)
    startup_s: float = 0.0

    def close(self, timeout_s: float = 40.0) -> None:
        proc, self.started = self.started, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def log_tail(self, n: int = 4000) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")[-n:]
        return ""


def start_engine(workdir: Path, timeout_s: float = 60.0) -> Engine:
    """The running engine, or a `dockerd` started here (as root); Unavailable says why not."""
    t0 = time.monotonic()
    engine = Engine()
    if not docker_ok():
        if not shutil.which("dockerd"):
            raise Unavailable("no Docker engine: `dockerd` is not installed (Debian package docker.io; .ci/run installs it)")
        if not shutil.which("docker"):
            raise Unavailable("no `docker` client on PATH (Debian package docker.io)")
        if os.geteuid() != 0:
            raise Unavailable("no Docker engine running and dockerd needs root to start")
        engine.log_path = workdir / "dockerd.log"
        with open(engine.log_path, "wb") as out:
            engine.started = subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and engine.started.poll() is None and not docker_ok():
            time.sleep(0.5)
        if not docker_ok():
            tail = engine.log_tail(1500)
            engine.close()
            raise Unavailable(f"dockerd did not start within {timeout_s:.0f} s; its log ends:\n{tail}")
    engine.compose = compose_command()
    engine.startup_s = time.monotonic() - t0
    return engine


def compose_command() -> list[str]:
    """`docker compose` (the plugin) where present, else Debian's `docker-compose` (v1.29)."""
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20).returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise Unavailable("no compose: neither the `docker compose` plugin nor `docker-compose` (Debian package) is installed")


# --- base images ---------------------------------------------------------------------------------


def image_labels(ref: str) -> dict | None:
    """The labels of a local image (None: no such image)."""
    proc = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", ref],
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip() or "null") or {}


def _recipe_hash(dockerfile: str, extras: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name in (dockerfile, *extras):
        h.update((HERE / name).read_bytes())
    h.update(HOST_CA.read_bytes() if HOST_CA.exists() else b"")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _cache_lock():
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # another CI run on this machine builds the same thing
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _minbase_tarball(log) -> Path:
    """The debootstrap'd bookworm minbase tree as a tarball in the cache (made once per machine)."""
    tarball = CACHE / f"{SUITE}-minbase.tar"
    if tarball.exists():
        return tarball
    if not shutil.which("debootstrap"):
        raise Unavailable("cannot build stand-in base images: `debootstrap` is not installed (.ci/run installs it)")
    tree = Path(tempfile.mkdtemp(prefix="minbase-", dir=CACHE))
    try:
        run(["debootstrap", "--variant=minbase", SUITE, str(tree), MIRROR], timeout=900, log=log)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (tree / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        part = tarball.with_suffix(".tar.part")
        run(["tar", "-C", str(tree), "--numeric-owner", "-cf", str(part), "."], timeout=300, log=log)
        part.rename(tarball)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return tarball


def _ensure_base(log) -> None:
    if image_labels(BASE_TAG) is not None:
        return
    tarball = _minbase_tarball(log)
    run(["docker", "import", "--change", "CMD [\"bash\"]", "--change",
         "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
         str(tarball), BASE_TAG], timeout=300, log=log)


def ensure_base_images(log) -> dict[str, str]:
    """Each image the project names exists locally: as it is, pulled, or a stand-in built here.
    Returns name -> how it was had ("present", "pulled", "stand-in (cached)", "stand-in (built)")."""
    how: dict[str, str] = {}
    with _cache_lock():
        for ref, (dockerfile, extras) in STANDINS.items():
            want = _recipe_hash(dockerfile, extras)
            labels = image_labels(ref)
            if labels is not None and STANDIN_LABEL not in labels:
                how[ref] = "present"  # the real image
                continue
            if labels is not None and labels.get(STANDIN_LABEL) == want:
                how[ref] = "stand-in (cached)"
                continue
            if labels is None and run(["docker", "pull", "-q", ref], timeout=300, check=False, log=log).returncode == 0:
                how[ref] = "pulled"
                continue
            _ensure_base(log)
            with tempfile.TemporaryDirectory(prefix="standin-") as ctx:
                for name in (dockerfile, *extras):
                    shutil.copy2(HERE / name, Path(ctx) / name)
                if HOST_CA.exists():
                    shutil.copy2(HOST_CA, Path(ctx) / "host-ca-bundle.crt")
                else:
                    (Path(ctx) / "host-ca-bundle.crt").write_text("")
                run(["docker", "build", "--network", "host", "-q", "--label", f"{STANDIN_LABEL}={want}",
                     "-t", ref, "-f", str(Path(ctx) / dockerfile), ctx], timeout=900, log=log)
            how[ref] = "stand-in (built)"
        subprocess.run(["docker", "image", "prune", "-f", "--filter", f"label={STANDIN_LABEL}"],
                       capture_output=True, timeout=120)  # an older stand-in recipe, now untagged
    return how
