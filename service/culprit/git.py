"""The only place benchwatch runs git: validated arguments, no shell, no user config, a timeout.

Why so strict: shas and paths come from downloaded dashboard JSON and config files. Every sha
goes through ``validate_sha`` and every path through ``validate_path`` before it reaches an
argument list, and git runs with ``--no-pager``, no global/system config (no aliases, hooks
paths, pagers or credential helpers from the user) and no terminal prompts.
"""

from __future__ import annotations

import atexit
import os
import re
import select
import subprocess
import threading
import time
from pathlib import Path

from service.errors import BenchwatchError

DEFAULT_TIMEOUT_S = 60.0
FETCH_TIMEOUT_S = 300.0
MAX_SHOW_BYTES = 8_000_000  # a Helion workflow or run.py is ~100 kB; refuse anything absurd

_SHA = re.compile(r"[0-9a-f]{7,40}")
_REMOTE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_PATH_PART = re.compile(r"[A-Za-z0-9_.+@][A-Za-z0-9_.+@ -]*")


def _short(text: object, limit: int = 60) -> str:
    s = repr(text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def validate_sha(s: str) -> str:
    """Return ``s`` if it is 7-40 lowercase hex digits; otherwise refuse it (before any git call)."""
    if not isinstance(s, str) or not _SHA.fullmatch(s):
        raise BenchwatchError(f"not a commit sha (7-40 lowercase hex): {_short(s)}")
    return s


def validate_path(p: str) -> str:
    """A repo-relative path made of plain parts (no '..', no leading '-' or '/', no ':')."""
    if not isinstance(p, str) or not p or p.startswith("/") or "//" in p:
        raise BenchwatchError(f"not a repository path: {_short(p)}")
    parts = p.rstrip("/").split("/")
    if any(part in (".", "..") or not _PATH_PART.fullmatch(part) for part in parts):
        raise BenchwatchError(f"not a repository path: {_short(p)}")
    return p


def validate_repo(repo: Path | str) -> Path:
    """The clone must be an existing directory holding a git repository (worktree or bare)."""
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise BenchwatchError(f"helion repo {path} is not a directory", exit_code=1)
    if not ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())):
        raise BenchwatchError(f"helion repo {path} is not a git clone", exit_code=1)
    return path


# Transport settings an operator may need for `git fetch` (SSH key command, private CA); every
# other GIT_* variable (GIT_DIR, GIT_CONFIG_PARAMETERS, GIT_EXEC_PATH, ...) is dropped.
_KEEP_ENV = frozenset({"GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"})


def _env() -> dict[str, str]:
    """The caller's environment minus anything that redirects git, plus no user/system config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_ENV}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    return env


def _git_argv(path: Path, *args: str) -> list[str]:
    """git in ``path`` with no pager and paths unquoted: every git process here starts so."""
    return ["git", "--no-pager", "-c", "core.quotepath=off", "-C", str(path), *args]


def _run(repo: Path, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[bytes]:
    path = validate_repo(repo)
    for a in args:
        if not isinstance(a, str) or "\x00" in a:
            raise BenchwatchError(f"git argument is not a plain string: {_short(a)}")
    cmd = _git_argv(path, *args)
    try:
        return subprocess.run(
            cmd, capture_output=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        raise BenchwatchError(f"git {args[0] if args else ''} timed out after {timeout:g}s in {path}", exit_code=1) from None
    except FileNotFoundError:
        raise BenchwatchError("git is not installed (needed for culprit search)", exit_code=1) from None


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return "no message"


def run_git(repo: Path, *args: str, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """Run ``git <args>`` in ``repo`` and return stdout; failure is a one-line BenchwatchError."""
    proc = _run(repo, args, timeout)
    if proc.returncode != 0:
        raise BenchwatchError(
            f"git {args[0] if args else ''} failed in {repo}: {_first_line(proc.stderr)}", exit_code=1
        )
    return proc.stdout.decode("utf-8", "replace")


_KNOWN_COMMITS: set[tuple[str, str]] = set()  # (repo, full sha) seen present: commits never vanish
_MISSING: dict[tuple[str, str], float] = {}  # (repo, sha) -> when it was found missing (monotonic)
MISSING_TTL_S = 300.0


def has_commit(repo: Path, sha: str) -> bool:
    """Whether the clone holds ``sha`` as a commit (an ambiguous short sha counts as absent).

    The one memory of this fact in the process: a present commit stays present; a missing one
    is remembered for a few minutes only and forgotten when `fetch` runs, since a fetch (or a
    person updating the clone by hand) can bring it. A detect pass asks about the same few shas
    hundreds of times.
    """
    validate_sha(sha)
    key = (str(repo), sha)
    if len(sha) == 40 and key in _KNOWN_COMMITS:
        return True
    missing_since = _MISSING.get(key)
    if missing_since is not None and time.monotonic() - missing_since < MISSING_TTL_S:
        return False
    kind, _ = _batch_object(validate_repo(repo), f"{sha}^{{commit}}")  # no new process when present
    present = kind == "commit" or (  # anything else is asked of a git process, as always
        _run(repo, ("cat-file", "-e", f"{sha}^{{commit}}"), DEFAULT_TIMEOUT_S).returncode == 0)
    if present and len(sha) == 40:
        _KNOWN_COMMITS.add(key)
        _MISSING.pop(key, None)
    elif not present:
        if len(_MISSING) > 10_000:
            _MISSING.clear()
        _MISSING[key] = time.monotonic()
    return present


def forget_missing(repo: Path) -> None:
    """After a fetch: the commits that were missing may be there now."""
    for key in [k for k in _MISSING if k[0] == str(repo)]:
        del _MISSING[key]


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    validate_sha(older)
    validate_sha(newer)
    proc = _run(repo, ("merge-base", "--is-ancestor", older, newer), DEFAULT_TIMEOUT_S)
    return proc.returncode == 0


def remotes(repo: Path) -> list[str]:
    return run_git(repo, "remote").split()


def fetch(repo: Path, remote: str) -> str | None:
    """Fetch ``remote`` if the clone has it. None on success or no such remote; a warning on failure.

    Why a warning and not an error: a nightly pass must still detect and classify with the
    commits the clone already has; the alert then says the window is incomplete.
    """
    if not isinstance(remote, str) or not _REMOTE.fullmatch(remote):
        raise BenchwatchError(f"not a git remote name: {_short(remote)}")
    if remote not in remotes(repo):
        return None
    try:
        run_git(repo, "fetch", "--quiet", remote, timeout=FETCH_TIMEOUT_S)
    except BenchwatchError as exc:
        return f"git fetch {remote} failed: {exc.message}"
    finally:
        forget_missing(repo)
        close_readers(repo)  # a reader started before the fetch may not see its new packs
    return None


class _BatchReader:
    """One long-lived ``git cat-file --batch`` per clone: a file at a commit is one line written
    and one object read, not a new git process (~3-10 ms each; a cold detect pass on a real
    Helion year reads ~300 files, `investigate` ~40). Same arguments, environment and config as
    `_run`. Anything unexpected (a timeout, git gone, a short read) closes it and the caller asks
    ``git show`` instead, so the answer is always the one a separate process would give."""

    def __init__(self, path: Path) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            _git_argv(path, "cat-file", "--batch"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(), bufsize=0,
        )
        self._buf = b""

    def _fill(self, deadline: float) -> None:
        fd = self.proc.stdout.fileno()
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("git cat-file --batch did not answer")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("git cat-file --batch ended")
        self._buf += chunk

    def ask(self, name: str, timeout: float) -> tuple[str, bytes | None]:
        """(object type, content) of ``name``; ("missing", None) when git has no such object."""
        deadline = time.monotonic() + timeout
        self.proc.stdin.write(name.encode() + b"\n")
        while b"\n" not in self._buf:
            self._fill(deadline)
        header, _, self._buf = self._buf.partition(b"\n")
        parts = header.split()
        if len(parts) != 3 or not parts[2].isdigit():  # "<name> missing", "<name> ambiguous"
            return "missing", None
        size = int(parts[2])
        while len(self._buf) < size + 1:
            self._fill(deadline)
        content, self._buf = self._buf[:size], self._buf[size + 1:]
        return parts[1].decode(), content

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_BATCH: dict[str, _BatchReader] = {}
_BATCH_LOCK = threading.Lock()


def _batch_blob(path: Path, spec: str) -> tuple[bool, bytes | None]:
    """(answered, blob bytes or None when absent) from the clone's batch reader; answered is
    False when the reader could not answer or the object is not a blob (the caller runs git)."""
    kind, content = _batch_object(path, spec)
    if kind not in ("missing", "blob"):  # unanswered, or a tree or a submodule: what `git show` prints
        return False, None
    return True, content


def _batch_object(path: Path, spec: str) -> tuple[str | None, bytes | None]:
    """(object type or "missing", content) of ``spec`` from the clone's batch reader; (None,
    None) when the reader could not answer (the caller runs git)."""
    key = str(path)
    with _BATCH_LOCK:
        reader = _BATCH.get(key)
        if reader is not None and (reader.pid != os.getpid() or reader.proc.poll() is not None):
            _BATCH.pop(key)
            reader = None
        if reader is None:
            try:
                reader = _BATCH[key] = _BatchReader(path)
            except OSError:
                return None, None
    with reader.lock:
        try:
            kind, content = reader.ask(spec, DEFAULT_TIMEOUT_S)
        except (OSError, ValueError, TimeoutError, EOFError):
            with _BATCH_LOCK:
                if _BATCH.get(key) is reader:
                    _BATCH.pop(key)
            reader.proc.kill()
            reader.proc.wait()  # reaped, not left a zombie
            return None, None
    return kind, content


def _tree_names(content: bytes, id_len: int) -> list[str] | None:
    """The entry names of a raw tree object (``<mode> <name>\\0<id>`` repeated), in its order;
    None when it does not parse (the caller asks git)."""
    names, i = [], 0
    while i < len(content):
        sp = content.find(b" ", i)
        nul = content.find(b"\0", sp + 1)
        if sp < 0 or nul < 0 or nul + 1 + id_len > len(content):
            return None
        names.append(content[sp + 1:nul].decode("utf-8", "replace"))
        i = nul + 1 + id_len
    return names


def close_readers(repo: Path | None = None) -> None:
    """Stop the batch readers (of one clone, or all): after a fetch, and at exit."""
    with _BATCH_LOCK:
        keys = [k for k in _BATCH if repo is None or k == str(Path(repo).expanduser())]
        readers = [_BATCH.pop(k) for k in keys]
    for r in readers:
        if r.pid == os.getpid():
            r.close()


atexit.register(close_readers)


def show_file(repo: Path, sha: str, path: str) -> str | None:
    """Text of ``path`` at commit ``sha``; None when the file (or commit) is not there."""
    validate_sha(sha)
    validate_path(path)
    where = validate_repo(repo)
    answered, blob = _batch_blob(where, f"{sha}:{path}")
    if answered:
        if blob is None or len(blob) > MAX_SHOW_BYTES:
            return None
        return blob.decode("utf-8", "replace")
    proc = _run(repo, ("show", f"{sha}:{path}"), DEFAULT_TIMEOUT_S)
    if proc.returncode != 0 or len(proc.stdout) > MAX_SHOW_BYTES:
        return None
    return proc.stdout.decode("utf-8", "replace")


def list_dir(repo: Path, sha: str, folder: str) -> list[str]:
    """Paths of the entries directly inside ``folder`` at ``sha`` ([] when it does not exist).

    Read as a tree object from the clone's batch reader (a pass lists the workflows folder at
    every window end: fifty `ls-tree` processes otherwise); `git ls-tree` when it cannot answer."""
    validate_sha(sha)
    validate_path(folder)
    folder = folder.rstrip("/")
    if len(sha) == 40:  # a full SHA-1 name: the tree's entries carry 20-byte ids
        kind, content = _batch_object(validate_repo(repo), f"{sha}:{folder}")
        if kind == "missing" or kind == "blob":
            return []
        if kind == "tree" and content is not None:
            names = _tree_names(content, 20)
            if names is not None:
                return [f"{folder}/{n}" for n in names]
    proc = _run(repo, ("ls-tree", "--name-only", sha, folder + "/"), DEFAULT_TIMEOUT_S)
    if proc.returncode != 0:
        return []
    return [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if line]
