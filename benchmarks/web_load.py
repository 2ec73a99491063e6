"""Web load: 1,000 alerts in a SQLite (or PostgreSQL) store, 20 concurrent clients for 30 s on loopback.

Run: `.venv/bin/python -m benchmarks.web_load [--clients 20] [--seconds 30] [--postgres URL]`
(part of `make bench`; SQLite unless --postgres names a server, where a fresh database is made).
The server is the production one, `benchwatch serve --no-scheduler` in its own process (one
uvicorn worker, as on a team box); the clients are plain asyncio keep-alive connections in this
process (lighter than an HTTP library, so the generator steals less CPU), each in a
closed loop with no think time by default (a harsher load than 20 people clicking; --think-ms
adds a pause). Each client mixes queue pages (filters and pages vary) and alert pages. Which
alerts: `--alert-mix recent` (default: 80% of views go to the 50 newest alerts, as when on-call
follows Slack links; the rest anywhere) or `uniform` (every view a random one of the 1,000, so
most pages are rendered cold). `--page-cache-s 0` turns the server's page cache off, so every
request renders its page: the worst case, which does not depend on how often views repeat.
`--busy N` runs N CPU-bound processes beside the load (a box doing other work).
`--note-every S` has on-call write a note on a random alert every S seconds from another process
(as `benchwatch note` would): each write changes the data version, so every cached page is
rendered again after it. Targets: queue p95 < 100 ms, alert page
p95 < 200 ms. Bounded: the load stops at --seconds, the server is stopped after. Results go to
benchmarks/results/web_load.json (and web_load_<variant>.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import func, select

from benchmarks.databases import Databases
from service.store.db import Store
from service.store.oncall import add_note
from service.store.tables import Alert
from tests.net import free_port, wait_healthy
from tests.web_world import build_world

ROOT = Path(__file__).resolve().parent.parent
TARGETS_MS = {"queue": 100.0, "alert": 200.0}
QUEUE_PATHS = (
    "/", "/?status=all", "/?status=all&page=2", "/?status=all&page=5", "/?cause=real",
    "/?platform=b200", "/?status=open&source=dashboard", "/?cause=hardware&status=all&page=2",
)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def seed(url: str, want_alerts: int) -> list[int]:
    store = Store(url)
    try:
        # groups hold 1-3 alerts (2 on average): a few spare groups make sure of the count
        build_world(store, nights=365, extra_groups=want_alerts // 2 + 25, seed=11)
        with store.session() as s:
            ids = list(s.scalars(select(Alert.id)))
            assert s.scalar(select(func.count(Alert.id))) == len(ids)
        if len(ids) < want_alerts:
            raise SystemExit(f"seeded only {len(ids)} alerts, wanted {want_alerts}")
    finally:
        store.dispose()
    return ids


def pick_alert(rng: random.Random, alert_ids: list[int], mix: str) -> int:
    if mix == "recent" and rng.random() < 0.8:
        return rng.choice(alert_ids[-50:])  # ids grow with time: the newest alerts
    return rng.choice(alert_ids)


class Conn:
    """A minimal keep-alive HTTP/1.1 GET client on asyncio streams.

    Lighter than httpx: on a 2-core box the load generator shares the CPU with the server,
    and every millisecond the client spends is taken from what is being measured.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = dict(ln.split(": ", 1) for ln in lines[1:] if ": " in ln)
        length = {k.lower(): v for k, v in headers.items()}.get("content-length")
        if length is None:
            raise RuntimeError(f"{path}: response without Content-Length")
        body = await self.reader.readexactly(int(length))
        return status, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def client(port: int, alert_ids: list[int], until: float, rng: random.Random,
                 lat: dict[str, list[float]], errors: list[str], mix: str, think_s: float) -> None:
    conn = Conn("127.0.0.1", port)
    try:
        while time.perf_counter() < until:
            if think_s:
                await asyncio.sleep(rng.uniform(0.5, 1.5) * think_s)
            kind = "queue" if rng.random() < 0.5 else "alert"
            path = rng.choice(QUEUE_PATHS) if kind == "queue" else f"/alerts/{pick_alert(rng, alert_ids, mix)}"
            t0 = time.perf_counter()
            try:
                status, _ = await asyncio.wait_for(conn.get(path), timeout=10)
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, RuntimeError) as exc:
                errors.append(f"{path}: {exc.__class__.__name__}")
                await conn.close()
                conn = Conn("127.0.0.1", port)
                continue
            took = (time.perf_counter() - t0) * 1000
            if status != 200:
                errors.append(f"{path}: {status}")
                continue
            lat[kind].append(took)
    finally:
        await conn.close()


async def load(port: int, alert_ids: list[int], clients: int, seconds: float, mix: str,
               think_s: float) -> tuple[dict, list[str]]:
    lat: dict[str, list[float]] = {"queue": [], "alert": []}
    errors: list[str] = []
    until = time.perf_counter() + seconds
    await asyncio.gather(*(client(port, alert_ids, until, random.Random(i), lat, errors, mix, think_s)
                           for i in range(clients)))
    return lat, errors


def _spin() -> None:
    """A CPU-bound process (--busy): the box doing other work."""
    while True:
        pass


def write_notes(url: str, every_s: float) -> None:
    """On-call writing notes from another process until killed (the server sees outside writes)."""
    store = Store(url)
    with store.session() as s:
        ids = list(s.scalars(select(Alert.id)))
    rng = random.Random(5)
    while True:
        time.sleep(every_s)
        with store.session() as s:
            add_note(s, rng.choice(ids), by="bench", note="looking")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--alerts", type=int, default=1000)
    ap.add_argument("--alert-mix", choices=("recent", "uniform"), default="recent")
    ap.add_argument("--think-ms", type=float, default=0.0, help="pause between a client's requests")
    ap.add_argument("--page-cache-s", type=float, default=None,
                    help="the server's web.page_cache_s (0: no page cache); default: the app's")
    ap.add_argument("--postgres", metavar="URL", default=None,
                    help="serve from a fresh database on this PostgreSQL server (default: SQLite)")
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes running beside the load")
    ap.add_argument("--note-every", type=float, default=0.0,
                    help="seconds between outside writes (a note on a random alert); 0: none")
    args = ap.parse_args(argv)
    if not (1 <= args.clients <= 200 and 1 <= args.seconds <= 300 and 0 <= args.think_ms <= 10_000
            and 0 <= args.busy <= 16 and (args.note_every == 0 or 0.1 <= args.note_every <= 60) and (args.page_cache_s is None or 0 <= args.page_cache_s <= 300)):
        ap.error("--clients must be 1..200, --seconds 1..300, --think-ms 0..10000, --busy 0..16, "
                 "--page-cache-s 0..300, --note-every 0 or 0.1..60")
    load_before = os.getloadavg()[0]  # other work on the box skews every figure: recorded
    dbs = Databases(args.postgres)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = dbs.new_url("postgres" if args.postgres else "sqlite")
            t0 = time.perf_counter()
            alert_ids = seed(url, args.alerts)
            print(f"seeded {len(alert_ids)} alerts in {time.perf_counter() - t0:.1f} s", flush=True)
            port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWATCH_")}
            env.update(BENCHWATCH_DATABASE_URL=url, BENCHWATCH_WEB_SECRET_KEY="bench")
            if args.page_cache_s is not None:
                env["BENCHWATCH_WEB_PAGE_CACHE_S"] = str(args.page_cache_s)
            exe = Path(sys.executable).parent / "benchwatch"
            server = subprocess.Popen(
                [str(exe), "serve", "--no-scheduler", "--host", "127.0.0.1", "--port", str(port)],
                env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            base = f"http://127.0.0.1:{port}"
            try:
                if wait_healthy(base + "/healthz", server) != 200:
                    print("server did not start:", server.stderr.read() if server.poll() is not None else "")
                    return 1
                for path in QUEUE_PATHS + (f"/alerts/{alert_ids[0]}",):  # warm templates and caches
                    httpx.get(base + path, timeout=10)
                # side processes (CPU hogs, the note writer), killed when the load ends
                side = [multiprocessing.Process(target=_spin) for _ in range(args.busy)]
                if args.note_every:
                    side.append(multiprocessing.Process(target=write_notes, args=(url, args.note_every)))
                for proc in side:
                    proc.start()
                try:
                    lat, errors = asyncio.run(load(port, sorted(alert_ids), args.clients, args.seconds,
                                                   args.alert_mix, args.think_ms / 1000))
                finally:
                    for proc in side:
                        proc.kill()
                        proc.join()
            finally:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    finally:
        dbs.close()
    report = {
        "alerts": len(alert_ids), "clients": args.clients, "seconds": args.seconds,
        "store": "postgresql" if args.postgres else "sqlite",
        "alert_mix": args.alert_mix, "think_ms": args.think_ms, "cpus": os.cpu_count(),
        "page_cache_s": args.page_cache_s, "busy_processes": args.busy, "note_every_s": args.note_every,
        "load_avg_1m_before": round(load_before, 2), "load_avg_1m_after": round(os.getloadavg()[0], 2),
        "errors": len(errors), "error_sample": errors[:5],
    }
    ok = not errors
    for kind, values in lat.items():
        p95 = _pct(values, 95)
        report[kind] = {
            "requests": len(values), "rps": round(len(values) / args.seconds, 1),
            "p50_ms": round(_pct(values, 50), 1), "p95_ms": round(p95, 1), "p99_ms": round(_pct(values, 99), 1),
            "mean_ms": round(statistics.fmean(values), 1) if values else None,
            "target_p95_ms": TARGETS_MS[kind], "ok": bool(values) and p95 < TARGETS_MS[kind],
        }
        ok = ok and report[kind]["ok"]
        print(f"{kind:5s}: {len(values):6d} requests ({report[kind]['rps']}/s)  p50 {report[kind]['p50_ms']} ms  "
              f"p95 {report[kind]['p95_ms']} ms  p99 {report[kind]['p99_ms']} ms  "
              f"(target p95 < {TARGETS_MS[kind]:.0f} ms: {'ok' if report[kind]['ok'] else 'MISSED'})")
    print(f"errors: {len(errors)}")
    report["ok"] = ok
    print(f"load average (1 min) before/after: {report['load_avg_1m_before']} / {report['load_avg_1m_after']}"
          f" on {report['cpus']} CPUs")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    variant = ("pg_" if args.postgres else "") + args.alert_mix + ("_nocache" if args.page_cache_s == 0 else "") + (
        f"_busy{args.busy}" if args.busy else "") + (f"_notes{args.note_every:g}s" if args.note_every else "")
    for name in ("web_load.json", f"web_load_{variant}.json"):
        (out / name).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
