"""The docker-compose deployment, run for real: README "Deploy on a team box", step by step.

A Docker engine is found or started here (`dockerd`, stopped again by its PID), the base images
the project names are pulled or, where no registry can be reached, replaced by local stand-ins
built from Debian packages (tests/deploy/engine.py, cached between runs on this machine). Then,
in a copy of the project with a test `.env`:

1. `cp .env.example .env`, the values README step 1 names set (plus the test's own: a free
   loopback port, the local dashboard/Slack/Helion stand-ins, a schedule that does not fire);
2. `docker compose up -d --build`: PostgreSQL healthy, the helion-clone job clones the Helion
   bundle from ../shared (served by `git daemon`), benchwatch migrates and turns healthy;
3. `docker compose ps`, `/healthz`, `/`, and `docker compose exec benchwatch benchwatch run-once`
   ingesting a generated world from a local HTTP server and posting to a Slack stand-in;
4. the web on the published loopback port;
5. backup with `pg_dump`; upgrade: a second image with one more migration, `up -d --build`,
   migrated in place with the data kept; `restart`, and `down` + `up` keep the data too;
   `docker stop` ends benchwatch cleanly within its grace period;
then everything the test made is removed (containers, networks, volumes, the images it built).

The stack's traffic stays on this machine: containers talk to each other, and to the test's
servers on the gateway address of Docker's own bridge; the web is published on 127.0.0.1 only.
Without an engine (no dockerd, no compose, no debootstrap) the test skips and says which.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest

from tests.dashboard_server import DashboardServer
from tests.deploy import engine as eng
from tests.shared_data import bundle_path
from tests.slack_standin import TOKEN, SlackStandIn

pytestmark = pytest.mark.deploy  # `make test-deploy` (and .ci/run): ~10 minutes, its own step

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = bundle_path()
COPY_IGNORE = shutil.ignore_patterns(".venv", "var", ".git", "__pycache__", ".pytest_cache", "*.egg-info",
                                     "build", "dist", ".env", "*.db", "benchmarks")
UPGRADE_MIGRATION = '''"""deploy test: one more revision, applied by the upgraded image on start."""
import sqlalchemy as sa
from alembic import op

revision = "9001_deploy_probe"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("deploy_upgrade_probe", sa.Column("id", sa.Integer, primary_key=True))


def downgrade():
    op.drop_table("deploy_upgrade_probe")
'''


class Step:
    """Wall time of each step, shown in the test's output and in var/deploy-live.json."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.times: dict[str, float] = {}
        self._name, self._start = "", self.t0

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        if self._name:
            self.times[self._name] = round(now - self._start, 1)
        self._name, self._start = name, now
        print(f"[deploy-live {now - self.t0:6.1f}s] {name}", flush=True)

    def done(self) -> dict:
        self("done")
        self.times["total"] = round(time.monotonic() - self.t0, 1)
        return self.times


class Stack:
    """`docker compose` in the project copy; every call bounded."""

    def __init__(self, compose: list[str], workdir: Path, project: str) -> None:
        self.compose, self.dir, self.project = compose, workdir, project
        self.env = {**os.environ, "COMPOSE_PROJECT_NAME": project}

    def __call__(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        return eng.run([*self.compose, *args], timeout=timeout, check=check, cwd=self.dir, env=self.env,
                       log=lambda s: print(s, flush=True))

    def cid(self, service: str) -> str:
        out = self("ps", "-q", service).stdout.strip().splitlines()
        assert out, f"no container for {service}"
        return out[0]

    def health(self, service: str) -> str:
        return eng.run(["docker", "inspect", "-f", "{{.State.Health.Status}}", self.cid(service)], timeout=30).stdout.strip()

    def wait_healthy(self, service: str, timeout_s: float = 150) -> float:
        t0 = time.monotonic()
        status = ""
        while time.monotonic() - t0 < timeout_s:
            status = self.health(service)
            if status == "healthy":
                return time.monotonic() - t0
            time.sleep(1)
        logs = self("logs", "--no-color", "--tail", "60", service, check=False).stdout
        pytest.fail(f"{service} not healthy after {timeout_s:.0f} s (last: {status}); logs:\n{logs}")

    def psql(self, sql: str, user: str, db: str) -> str:
        return self("exec", "-T", "postgres", "psql", "-U", user, "-d", db, "-tAc", sql, timeout=60).stdout.strip()


def env_file(example: str, values: dict[str, str]) -> str:
    """.env.example with each KEY=... line (set or commented) replaced by values[KEY]; the rest appended."""
    left = dict(values)
    out = []
    for line in example.splitlines():
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=", line)
        if m and m.group(1) in left:
            line = f"{m.group(1)}={left.pop(m.group(1))}"
        out.append(line)
    out += [f"{k}={v}" for k, v in left.items()]
    return "\n".join(out) + "\n"


def port_on(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {host}:{port}")


def bridge_gateway() -> str:
    """This host's address on Docker's default bridge (docker0): every container can reach it."""
    name = eng.run(["docker", "network", "inspect", "bridge", "-f",
                    '{{index .Options "com.docker.network.bridge.name"}}'], timeout=30).stdout.strip() or "docker0"
    out = eng.run(["ip", "-4", "-o", "addr", "show", "dev", name], timeout=30).stdout
    m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    assert m, f"Docker's bridge {name} has no IPv4 address: {out!r}"
    return m.group(1)


def remove_stale_projects() -> None:
    """Containers, networks and volumes of an earlier run of this test that was killed before its
    teardown (project bwdeploy<pid>, that pid gone)."""
    kinds = {"container": ["docker", "ps", "-a"], "network": ["docker", "network", "ls"], "volume": ["docker", "volume", "ls"]}
    for kind in ("container", "network", "volume"):
        out = eng.run([*kinds[kind], "--filter", "label=com.docker.compose.project",
                       "--format", '{{.Label "com.docker.compose.project"}} {{.%s}}' % ("ID" if kind == "container" else "Name")],
                      timeout=30, check=False).stdout
        for line in out.splitlines():
            project, _, ref = line.partition(" ")
            m = re.fullmatch(r"bwdeploy(\d+)", project)
            if m and not Path(f"/proc/{m.group(1)}").exists():
                rm = ["docker", "rm", "-f", "-v"] if kind == "container" else ["docker", kind, "rm"]
                eng.run([*rm, ref], timeout=60, check=False)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    work = tmp_path_factory.mktemp("engine")
    try:
        e = eng.start_engine(work)
    except eng.Unavailable as exc:
        pytest.skip(f"live deployment test: {exc}")
    try:
        remove_stale_projects()
        yield e
    finally:
        e.close()


def test_compose_deployment_on_a_team_box(engine, tmp_path):
    if not BUNDLE.exists():
        pytest.skip(f"live deployment test: the Helion bundle is not at {BUNDLE}")
    step = Step()
    step(f"engine ready ({'started dockerd' if engine.started else 'already running'}; compose: {' '.join(engine.compose)})")
    step("base images")
    try:
        how = eng.ensure_base_images(lambda s: print(s, flush=True))
    except eng.Unavailable as exc:
        pytest.skip(f"live deployment test: {exc}")
    print(f"base images: {how}", flush=True)

    step("project copy, world, local servers")
    proj = tmp_path / "benchwatch"
    shutil.copytree(ROOT, proj, ignore=COPY_IGNORE)
    gw = bridge_gateway()
    helion_srv = tmp_path / "git"
    eng.run(["git", "clone", "-q", "--bare", str(BUNDLE), str(helion_srv / "helion.git")], timeout=120)
    # the bundle names no HEAD; GitHub's repository has HEAD -> main, so this stand-in does too
    eng.run(["git", "-C", str(helion_srv / "helion.git"), "symbolic-ref", "HEAD", "refs/heads/main"], timeout=30)
    git_port = port_on(gw)
    gitd = subprocess.Popen(["git", "daemon", "--reuseaddr", f"--listen={gw}", f"--port={git_port}", "--export-all",
                             f"--base-path={helion_srv}", str(helion_srv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from tests.worlds import WorldSpec, generate_world

    # 90 nightlies; the 89th (index 88) is today's. The first pass sees up to yesterday's: the planted
    # events of the first 80 go into one backfill digest, the real regression of two nights ago is
    # posted by itself; the second pass (after the upgrade) gets today's nightly.
    nightlies, today = 90, 88
    world = generate_world(WorldSpec(seed=14, nightlies=nightlies, start=date.today() - timedelta(days=today),
                                     with_git=False, max_kernels_per_platform=6))
    project = f"bwdeploy{os.getpid()}"
    stack = Stack(engine.compose, proj, project)
    built_images: set[str] = set()
    web_port = port_on("127.0.0.1")
    base = f"http://127.0.0.1:{web_port}"
    password, secret, team = secrets.token_hex(24), secrets.token_hex(32), secrets.token_hex(8)
    try:
        with DashboardServer(host=gw) as dash, SlackStandIn(host=gw) as slack:
            wait_port(gw, git_port)
            dash.publish(dashboard=world.dashboard_bytes(today - 1), pretuned=world.pretuned_bytes(today - 1))
            # README step 1: cp .env.example .env and set the values it names
            (proj / ".env").write_text(env_file((proj / ".env.example").read_text(), {
                "POSTGRES_PASSWORD": password,
                "BENCHWATCH_WEB_SECRET_KEY": secret,
                "BENCHWATCH_WEB_BASE_URL": base,
                "BENCHWATCH_SLACK_TOKEN": TOKEN,
                "BENCHWATCH_SLACK_CHANNEL": "C0TRIAGE",
                "BENCHWATCH_WEB_TEAM_TOKEN": team,
                # the test's own: its port, its stand-ins, a schedule that will not fire meanwhile
                "PUBLISH_WEB": f"127.0.0.1:{web_port}",
                "COMPOSE_PROJECT_NAME": project,
                "HELION_CLONE_URL": f"git://{gw}:{git_port}/helion.git",
                "BENCHWATCH_SLACK_API_URL": slack.base_url,
                "BENCHWATCH_SOURCES_DASHBOARD": dash.url("dashboard"),
                "BENCHWATCH_SOURCES_PRETUNED": dash.url("pretuned"),
                "BENCHWATCH_SCHEDULE_CRON": "0 0 1 1 *",
                "BENCHWATCH_SCHEDULE_EXTRA_CRON": "",
            }))

            # README step 2
            step("docker compose up -d --build")
            built_images.add("benchwatch:latest")
            stack("up", "-d", "--build", timeout=900)
            assert stack.health("postgres") in ("healthy", "starting")
            step("benchwatch healthy")
            stack.wait_healthy("benchwatch")
            assert stack.health("postgres") == "healthy"
            clone_log = stack("logs", "--no-color", "helion-clone").stdout
            assert "could not clone" not in clone_log, clone_log
            head = stack("exec", "-T", "benchwatch", "git", "-C", "/srv/helion", "rev-parse", "HEAD").stdout.strip()
            assert head == eng.run(["git", "-C", str(helion_srv / "helion.git"), "rev-parse", "HEAD"], timeout=30).stdout.strip()
            tables = int(stack.psql("SELECT count(*) FROM information_schema.tables WHERE table_schema='public'",
                                    "benchwatch", "benchwatch"))
            assert tables >= 10, tables
            first_rev = stack.psql("SELECT version_num FROM alembic_version", "benchwatch", "benchwatch")

            # README step 3
            step("docker compose ps; healthz; run-once")
            ps = stack("ps").stdout
            assert "healthy" in ps, ps
            assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
            out = stack("exec", "-T", "benchwatch", "benchwatch", "run-once", timeout=300)
            print(out.stdout[-2000:], flush=True)
            runs = int(stack.psql("SELECT count(*) FROM runs", "benchwatch", "benchwatch"))
            assert runs > 0
            assert slack.count("chat.postMessage", 200) >= 2, slack.calls  # the digest and one group
            assert any((m.metadata or {}).get("event_payload", {}).get("group_id") for m in slack.messages)
            assert any(p.startswith("/dashboard/") for p, _, status in dash.requests if status == 200)

            # README step 4: the web answers on the published loopback port
            step("web pages")
            for path in ("/", "/status", "/api/alerts"):
                assert httpx.get(base + path, timeout=20).status_code == 200, path

            # README step 5: back up, then upgrade (a second image with one more migration)
            step("pg_dump backup")
            dump = tmp_path / "benchwatch.sql"
            with open(dump, "w") as fh:
                eng.run([*stack.compose, "exec", "-T", "postgres", "pg_dump", "-U", "benchwatch", "benchwatch"],
                        timeout=120, cwd=proj, env=stack.env, stdout=fh, capture_output=False, stderr=subprocess.PIPE)
            text = dump.read_text()
            assert "CREATE TABLE public.runs" in text and "\r\n" not in text

            step("upgrade: git pull (one more migration) && docker compose up -d --build")
            (proj / "migrations" / "versions" / "9001_deploy_probe.py").write_text(UPGRADE_MIGRATION.format(head=first_rev))
            old_image = eng.run(["docker", "inspect", "-f", "{{.Image}}", stack.cid("benchwatch")], timeout=30).stdout.strip()
            built_images.add(old_image)
            stack("up", "-d", "--build", timeout=900)
            stack.wait_healthy("benchwatch")
            new_image = eng.run(["docker", "inspect", "-f", "{{.Image}}", stack.cid("benchwatch")], timeout=30).stdout.strip()
            assert new_image != old_image
            assert stack.psql("SELECT version_num FROM alembic_version", "benchwatch", "benchwatch") == "9001_deploy_probe"
            assert int(stack.psql("SELECT count(*) FROM runs", "benchwatch", "benchwatch")) == runs

            step("next nightly after the upgrade")
            dash.publish(dashboard=world.dashboard_bytes(today), pretuned=world.pretuned_bytes(today))
            stack("exec", "-T", "benchwatch", "benchwatch", "run-once", timeout=300)
            runs2 = int(stack.psql("SELECT count(*) FROM runs", "benchwatch", "benchwatch"))
            assert runs2 > runs

            step("docker compose restart")
            stack("restart", timeout=180)
            stack.wait_healthy("postgres")
            stack.wait_healthy("benchwatch")
            assert int(stack.psql("SELECT count(*) FROM runs", "benchwatch", "benchwatch")) == runs2

            step("docker compose down; up -d")
            stack("down", timeout=180)
            stack("up", "-d", timeout=300)
            stack.wait_healthy("benchwatch")
            assert int(stack.psql("SELECT count(*) FROM runs", "benchwatch", "benchwatch")) == runs2
            assert httpx.get(f"{base}/", timeout=20).status_code == 200

            step("docker compose stop benchwatch")
            cid = stack.cid("benchwatch")
            t0 = time.monotonic()
            stack("stop", "benchwatch", timeout=90)  # docker stop with the 60 s stop_grace_period
            stop_s = time.monotonic() - t0
            state = json.loads(eng.run(["docker", "inspect", "-f", "{{json .State}}", cid], timeout=30).stdout)
            logs = eng.run(["docker", "logs", "--tail", "30", cid], timeout=30).stdout + \
                eng.run(["docker", "logs", "--tail", "30", cid], timeout=30).stderr
            assert state["ExitCode"] == 0 and not state["OOMKilled"], (state, logs)
            assert stop_s < 30, f"docker stop took {stop_s:.1f} s"
            assert "scheduler stopped" in logs, logs
            print(f"docker stop: {stop_s:.1f} s, exit 0", flush=True)
            everything = eng.run(["docker", "logs", cid], timeout=30)
            assert secret not in everything.stdout + everything.stderr
            assert password not in everything.stdout + everything.stderr
    finally:
        step("teardown")
        stack("down", "-v", "--remove-orphans", "--rmi", "local", timeout=300, check=False)
        for ref in built_images:
            subprocess.run(["docker", "image", "rm", "-f", ref], capture_output=True, timeout=120)
        gitd.terminate()
        try:
            gitd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            gitd.kill()
    left = eng.run(["docker", "ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={project}"], timeout=30).stdout
    assert not left.strip(), f"containers left: {left}"
    vols = eng.run(["docker", "volume", "ls", "-q", "--filter", f"label=com.docker.compose.project={project}"], timeout=30).stdout
    assert not vols.strip(), f"volumes left: {vols}"
    times = step.done()
    times["base_images"] = how  # type: ignore[assignment]
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "deploy-live.json").write_text(json.dumps(times, indent=1))
    print("deploy-live timings: " + json.dumps(times), file=sys.stderr, flush=True)
