"""Rank the commits of a window as culprits for one platform's move, and find harness/runner changes.

Why rules and not a model: a person must be able to read *why* a commit is on top. Each
commit gets a score in [0, 1]::

    score = min(1, base + sum(boosts)) * product(discounts)

Boosts (weights in ``config/slices.toml [weights]``): changes Helion code at all (base),
subject tag of this slice, touches this backend's paths, touches backend-neutral code, subject
names this device, names a moved kernel, names the kernels' family. Discounts: the tag or paths
belong only to another slice, docs-only, tests-only, harness/CI-only. Every boost and discount
adds one human reason. Commits are ranked on the evidence before the cap (more evidence wins
even where both scores read 1.00). A subject that says nothing that runs changed (lint, typing,
a typo) is discounted. Naming a moved kernel also counts ``kernel_rank`` in the order (not in the
score shown): the author said which kernel the change is for. Ties go to the commit that changed
more lines of Helion code, then to the newest: with equal evidence the bigger change, then the one
nearest the first bad nightly, is what a person checks first, and the order is deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Callable, Iterable, Literal

from service.culprit.rules import PathClass, PlatformRule, SliceRules, load_rules
from service.records import CANDIDATES_SHOWN, CommitInfo, CommitWindow, RankedCommit

# --- text helpers --------------------------------------------------------------------------------

_BRACKET = re.compile(r"\[([^\[\]]{1,40})\]")
_PREFIX = re.compile(r"^\s*([A-Za-z][\w./-]{1,24}):\s")


def subject_tags(subject: str) -> list[str]:
    """Lowercased tags of a subject: ``[a][b/c]`` gives a, b/c, b, c; a ``word:`` prefix counts too."""
    found: list[str] = []
    raw = [m.group(1) for m in _BRACKET.finditer(subject)]
    m = _PREFIX.match(_BRACKET.sub("", subject))
    if m and not subject.lstrip().startswith("Revert"):
        raw.append(m.group(1))
    for r in raw:
        whole = r.strip().lower()
        if not whole:
            continue
        found.append(whole)
        parts = [p for p in re.split(r"[/,+|&]|\s+", whole) if p]
        if len(parts) > 1:
            found.extend(parts)
    out: list[str] = []
    for t in found:
        if t not in out:
            out.append(t)
    return out


def _word_body(word: str) -> str:
    """Regex for one word or phrase; a word ending in a digit may continue (cu12 ~ cu129, gfx9 ~ gfx942).
    An underscore after a word ends it: subjects name code (`softmax_two_pass`, `rms_norm_bwd`); one
    before it does not (`jagged_sum` is not `sum`)."""
    parts = [re.escape(p) for p in re.split(r"[\s_-]+", word.strip().lower()) if p]
    last = word.strip()[-1:]
    tail = r"(?![a-z])" if last.isdigit() else (r"(?![a-z0-9])" if last.isalpha() or last == "_" else "")
    return r"[\s_-]?".join(parts) + tail


@lru_cache(maxsize=4096)
def _word_re(word: str) -> re.Pattern[str]:
    """Whole-word pattern for ``word`` (case-insensitive callers pass lowercased text)."""
    return re.compile(r"(?<![a-z0-9_])" + _word_body(word))


def mentions(text: str, word: str) -> bool:
    return bool(word.strip()) and _word_re(word).search(text.lower()) is not None


@lru_cache(maxsize=1024)
def _any_word_re(words: tuple[str, ...]) -> re.Pattern[str] | None:
    alts = [_word_body(w) for w in words if w.strip()]
    return re.compile(r"(?<![a-z0-9_])(?:" + "|".join(f"(?:{a})" for a in alts) + ")") if alts else None


def _first_mention(text: str, words: Iterable[str]) -> str | None:
    """The first of ``words`` the text names as a whole word (one combined search first: speed)."""
    words = tuple(words)
    combined = _any_word_re(words)
    if combined is None or combined.search(text.lower()) is None:
        return None
    for w in words:
        if mentions(text, w):
            return w
    return None


def _as_written(subject: str, tag: str) -> str:
    """The tag as the author spelled it ([CuTe] rather than [cute]) for reasons people read."""
    m = re.search(re.escape(tag), subject, re.IGNORECASE)
    return m.group(0) if m else tag


def _matching_prefix(path: str, prefixes: Iterable[str]) -> str | None:
    prefixes = tuple(prefixes)
    if not path.startswith(prefixes):
        return None
    return next(p for p in prefixes if path.startswith(p))


# --- file classes ----------------------------------------------------------------------------------


def _in_class(path: str, cls: PathClass) -> bool:
    return _matching_prefix(path, cls.paths) is not None or path.lower().endswith(tuple(cls.suffixes) or ("\x00",))


def classify_file(path: str, rules: SliceRules) -> str:
    """One of docs, tests, harness, runner, code, other (first match in that order)."""
    cache = rules.memo().setdefault("classify_file", {})
    kind = cache.get(path)
    if kind is None:
        kind = cache[path] = _classify_file(path, rules)
    return kind


def _classify_file(path: str, rules: SliceRules) -> str:
    if _in_class(path, rules.docs):
        return "docs"
    if _in_class(path, rules.tests):
        return "tests"
    if _in_class(path, rules.harness):
        return "harness"
    if _in_class(path, rules.runner):
        return "runner"
    if _matching_prefix(path, rules.shared.code_paths):
        return "code"
    return "other"


# --- kernels -----------------------------------------------------------------------------------


def kernel_base(kernel: str) -> str:
    k = kernel.strip().lower()
    for suffix in ("-bwd", "-fwd", "_bwd", "_fwd"):
        if k.endswith(suffix):
            return k[: -len(suffix)]
    return k


_COMMON_WORDS = frozenset({"add", "exp", "mul", "dot", "norm", "copy", "cat", "mean", "max", "min"})


def kernel_names(kernel: str, rules: SliceRules) -> tuple[list[str], list[str]]:
    """(words that name the kernel in a subject, file stems that name it)."""
    base = kernel_base(kernel)
    aliases = [a.lower() for a in rules.kernel_aliases.get(base, ())]
    stems = [base, *(a.replace(" ", "_") for a in aliases)]
    words = [base, *(a for a in aliases if a not in _COMMON_WORDS)]
    return list(dict.fromkeys(words)), list(dict.fromkeys(stems))


def _names_kernel_file(path: str, stems: list[str]) -> bool:
    if not path.startswith(("examples/", "pretuned_kernels/")):
        return False
    parts = path.lower().split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return stem in stems or any(part in stems for part in parts[1:-1])


def _coverage(named: list[str], moved: list[str], rules: SliceRules) -> float:
    """The share of the moved kernels a commit that names ``named`` speaks for: those it names
    and those of their family. A commit for gemm explains a gemm move, and a quarter of one
    where gemm, jsd, layer_norm and flash attention moved together."""
    fams = set(_families_of(named, rules))
    hit = [k for k in moved if k in named or fams & set(_families_of([k], rules))]
    return len(hit) / len(moved) if moved else 1.0


def _families_of(kernels: Iterable[str], rules: SliceRules) -> list[str]:
    out = []
    bases = {kernel_base(k) for k in kernels}
    for name, fam in rules.families.items():
        if bases & set(fam.kernels):
            out.append(name)
    return out


# --- culprit ranking ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Slices:
    own: PlatformRule
    shared_tags: frozenset[str]  # own tags other platforms carry too ([triton]: h100, b200, mi350x)
    other_tags: frozenset[str]
    other_paths: tuple[str, ...]
    other_hints: frozenset[str]
    all_platform_paths: tuple[str, ...]


def _slices(platform_short: str, rules: SliceRules) -> _Slices:
    cache = rules.memo().setdefault("slices", {})
    if platform_short not in cache:
        cache[platform_short] = _build_slices(platform_short, rules)
    return cache[platform_short]


def _build_slices(platform_short: str, rules: SliceRules) -> _Slices:
    own = rules.platform(platform_short)
    other_tags: set[str] = set(rules.other.tags)
    shared_tags: set[str] = set()
    other_paths: list[str] = list(rules.other.paths)
    other_hints: set[str] = set()
    all_paths: list[str] = list(rules.other.paths)
    for name, pr in rules.platforms.items():
        all_paths.extend(pr.paths)
        if name == platform_short:
            continue
        other_tags.update(t for t in pr.tags if t not in own.tags)
        shared_tags.update(t for t in pr.tags if t in own.tags)
        other_paths.extend(p for p in pr.paths if p not in own.paths)
        other_hints.update(h for h in pr.hints if h not in own.hints)
    return _Slices(own, frozenset(shared_tags), frozenset(other_tags), tuple(other_paths), frozenset(other_hints),
                   tuple(all_paths))


def _other_device(subject: str, tags: list[str], sl: _Slices) -> str | None:
    """The other platform's tag or device word a subject names, when it names nothing of this
    platform's (its tags, its device words): the author meant that machine."""
    if any(t in sl.own.tags for t in tags) or _first_mention(subject, sl.own.hints):
        return None
    return next((t for t in tags if t in sl.other_tags), None) or _first_mention(subject, sl.other_hints)


def _files_run_by(c: CommitInfo, source: str, rules: SliceRules) -> tuple[str, ...]:
    """The commit's files that ``source``'s nightly runs: a dashboard move never runs the pretuned
    suite's own (`rules.pretuned_suite`)."""
    if source == "pretuned":
        return c.files
    return tuple(f for f in c.files if not _matching_prefix(f, rules.pretuned_suite.paths))


def _score(c: CommitInfo, platform: str, names: list[tuple[str, list[str], list[str]]], families: list[str],
           rules: SliceRules, sl: _Slices, source: str = "dashboard", autotune: bool = False,
           ) -> tuple[float, float, list[str]]:
    """(score, rank key, reasons) of one commit; the rank key is the score before the cap at 1.
    ``names`` ((base, words, stems) per kernel) and ``families`` are the same for every commit
    of a window, so `rank_commits` works them out once. A dashboard move reads only the files
    its nightly runs: the pretuned suite's own (`rules.pretuned_suite`) are left out."""
    w = rules.weights
    reasons: list[str] = []
    tags = subject_tags(c.subject)
    files = _files_run_by(c, source, rules)
    classes = {f: classify_file(f, rules) for f in files}
    code = [f for f, k in classes.items() if k == "code"]
    raw = 0.0

    if code:
        raw += w.base_code
        reasons.append(f"changes Helion code ({len(code)} file{'s' if len(code) != 1 else ''})")
    own_tag = next((t for t in tags if t in sl.own.tags), None)
    if own_tag:
        raw += w.tag
        reasons.append(f"subject tag [{_as_written(c.subject, own_tag)}] matches {platform}")
    own_path = next((p for f in files if (p := _matching_prefix(f, sl.own.paths))), None)
    if own_path:
        raw += w.path
        reasons.append(f"touches {own_path}")
    shared = [
        f for f in code
        if _matching_prefix(f, rules.shared.paths) and not _matching_prefix(f, sl.all_platform_paths)
    ]
    if shared:
        raw += w.shared_code
        top = PurePosixPath(shared[0]).parent.as_posix() + "/"
        reasons.append(f"touches backend-neutral code {top} (all platforms)")
    hint = _first_mention(c.subject, [h for h in sl.own.hints if h != own_tag])
    if hint:
        raw += w.device_hint
        reasons.append(f"subject names device {hint}")
    if autotune and code:
        tuner = next((p for f in code if (p := _matching_prefix(f, rules.autotuner.paths))), None)
        word = None if tuner else _first_mention(c.subject, rules.autotuner.keywords)
        if tuner or word:
            raw += w.autotuner
            reasons.append(f"changes the autotuner ({tuner or repr(word)}), and compile time moved with the speed")

    named = [base for base, words, stems in names
             if _first_mention(c.subject, words) or any(_names_kernel_file(f, stems) for f in files)]
    cover = _coverage(named, [base for base, _, _ in names], rules) if named else 0.0
    named = named[0] if named else None
    own_family = False
    kernel_reason_at = len(reasons)  # the kernel's boost is added once the slice is known (below)
    if not named:
        for fam_name in families:
            fam = rules.families[fam_name]
            word = _first_mention(c.subject, fam.words)
            fpath = next((f for f in files if _matching_prefix(f, fam.paths)), None)
            if word or fpath:
                raw += w.family
                own_family = True
                reasons.append(f"kernel family {fam_name}: {word!r}" if word else f"kernel family {fam_name}: touches {fpath}")
                break
    other_family = None
    if families and not named and not own_family:
        for fam_name, fam in rules.families.items():
            if fam_name in families:
                continue
            if _first_mention(c.subject, fam.words) or any(_matching_prefix(f, fam.paths) for f in files):
                other_family = fam_name
                break

    factor = 1.0
    # touching the moved kernel's own files (its example, its pretuned folder and configs) is
    # evidence about this move whatever slice the commit is tagged for
    own_files = any(_names_kernel_file(f, stems) for _, _, stems in names for f in files)
    own_evidence = bool(own_tag or own_path or own_files)
    other_tag = next((t for t in tags if t in sl.other_tags), None)
    other_path = next((p for f in files if (p := _matching_prefix(f, sl.other_paths))), None)
    other_hint = None if (own_evidence or hint) else _first_mention(c.subject, sl.other_hints)
    # the subject names another device or backend and never this one ("[sm100] ... B200" for an
    # H100 move): the author meant that machine, even where the touched paths are shared
    other_device = None if own_files else _other_device(c.subject, tags, sl)
    # a shared tag narrowed by another platform's own ("[triton][AMD]" for an H100 move): the
    # author meant that platform's backend, whatever the shared tag says
    narrowed = None
    if own_tag and own_tag in sl.shared_tags and not hint and not own_files and not any(
            t in sl.own.tags and t not in sl.shared_tags for t in tags):
        narrowed = other_tag
    # the subject, tag or paths say the change is for another platform: a kernel it names is that
    # kernel on the other machine ("rank TPU matmul candidates" says nothing of a B200 gemm)
    meant_elsewhere = bool(narrowed or (other_device and own_evidence)
                           or (not own_evidence and (other_tag or other_path or other_hint)))
    if named:
        if meant_elsewhere:
            why = f"names kernel {named}, on the other platform it is for: not counted"
        else:
            raw += w.kernel * cover
            why = f"names kernel {named}" + ("" if cover >= 1.0 else
                                             f" (its kind of kernel is {round(cover * len(names))} of the "
                                             f"{len(names)} that moved)")
        reasons.insert(kernel_reason_at, why)
    if meant_elsewhere:  # discounted, and how much and why by which sign said so
        if narrowed:
            factor *= w.other_slice
            reasons.append(f"[{_as_written(c.subject, own_tag)}] narrowed to another platform by "
                           f"[{_as_written(c.subject, narrowed)}]: discounted")
        elif other_device and own_evidence:
            factor *= w.other_slice
            reasons.append(f"subject names another device ({other_device}): discounted")
        else:  # no evidence of this platform, and another slice's tag, path or device word
            # backend-neutral code touched as well can still move this platform: discount less
            factor *= w.other_slice if (other_tag or not shared) else (1.0 + w.other_slice) / 2
            if other_tag:
                reasons.append(f"other slice [{_as_written(c.subject, other_tag)}]: discounted")
            elif other_path:
                reasons.append(f"other slice (touches {other_path}): discounted")
            else:
                reasons.append(f"other slice (subject names {other_hint}): discounted")

    if other_family is not None:
        factor *= w.other_family
        reasons.append(f"about {other_family} kernels, not the moved ones: discounted")

    kinds = set(classes.values())
    new_kernels = [f for f in code if f in c.new_files and f.startswith("examples/")]
    if not c.files:
        reasons.append("no touched files recorded")
    elif new_kernels and len(new_kernels) == len(code):
        # a new example is a new kernel: none of the kernels that moved ran it before or after
        factor *= w.new_kernels_only
        reasons.append(f"only adds new example kernels ({', '.join(new_kernels[:2])}): discounted")
    elif len(files) < len(c.files) and kinds <= {"docs", "tests"}:
        factor *= w.docs_only
        reasons.append("changes only the pretuned suite, which the dashboard does not run: discounted")
    elif kinds == {"docs"}:
        factor *= w.docs_only
        reasons.append("docs-only: discounted")
    elif kinds <= {"docs", "tests"}:
        factor *= w.test_only
        reasons.append("tests-only: discounted")
    elif kinds <= {"docs", "tests", "harness", "runner"}:
        factor *= w.harness_only
        reasons.append("benchmark harness/CI only (a method or runner change, not Helion code): discounted")
    quiet = _first_mention(c.subject, rules.no_behaviour_words)
    if quiet:
        factor *= w.no_behaviour
        reasons.append(f"subject says nothing that runs changed ({quiet!r}): discounted")
    # naming the moved kernel puts a commit ahead of louder tags (order only: the score a person
    # reads keeps one scale)
    order = raw + (w.kernel_rank * cover if named and not meant_elsewhere else 0.0)
    return round(min(1.0, raw) * factor, 4), order * factor, reasons


def rank_commits(
    window: CommitWindow, platform_short: str, kernels: tuple[str, ...], rules: SliceRules | None = None,
    lines_for: Callable[[set[str]], CommitWindow] | None = None, source: str = "dashboard",
    autotune: bool = False,
) -> list[RankedCommit]:
    """Every commit of the window scored for this platform's move, best first (ties: the one that
    changed more Helion code, then newest first). A window read without line counts asks
    ``lines_for`` (full shas -> the window with those commits' counts) for the commits whose
    order they decide: those that tie with another and touch code. ``autotune``: the kernels'
    compile time (most of it autotuning) moved with their speed, so a commit that changes the
    autotuner (`rules.autotuner`) explains more of the move than one that does not."""
    rules = rules or load_rules()
    sl = _slices(platform_short, rules)
    names = [(kernel_base(k), *kernel_names(k, rules)) for k in kernels]
    families = _families_of(kernels, rules)
    keys = []
    for c in window.commits:
        score, key, reasons = _score(c, platform_short, names, families, rules, sl, source, autotune)
        keys.append((round(key, 6), score, tuple(reasons)))
    if lines_for is not None:
        tied = Counter(k for k, _, _ in keys)
        shown = _shown_keys(tied)
        need = {c.full_sha for c, (k, _, _) in zip(window.commits, keys)
                if k in shown and not c.lines and any(classify_file(f, rules) == "code" for f in c.files)}
        if need:
            window = lines_for(need)
    scored = []
    for idx, (c, (key, score, reasons)) in enumerate(zip(window.commits, keys)):
        code_lines = c.lines_in(f for f in c.files if classify_file(f, rules) == "code")
        scored.append((key, code_lines, idx, RankedCommit(c.sha, c.full_sha, c.subject, c.date, score, reasons)))
    # equal evidence: the commit that changed more Helion code, then the newest (window.commits
    # is oldest first, so a larger index is newer; dates can tie or go backwards)
    scored.sort(key=lambda t: (-t[0], -t[1], -t[3].date.timestamp(), -t[2]))
    return [r for *_, r in scored]


def _shown_keys(tied: Counter) -> set:
    """The scores whose commits tie and reach into the first `CANDIDATES_SHOWN` places: only their
    order is ever read (the rest of the window is ordered by date), and counting lines is most of
    a cold pass's git time."""
    out, place = set(), 0
    for key in sorted(tied, reverse=True):
        if place >= CANDIDATES_SHOWN:
            break
        if tied[key] > 1:
            out.add(key)
        place += tied[key]
    return out


# --- harness / runner change commits -------------------------------------------------------------

def change_score(c: CommitInfo, kind: str, rules: SliceRules) -> tuple[float, list[str]]:
    cls = rules.harness if kind == "harness" else rules.runner
    cw = rules.change_weights
    label = "benchmark harness" if kind == "harness" else "runner/image"
    reasons: list[str] = []
    raw = 0.0
    strong = next((f for f in c.files if _matching_prefix(f, cls.strong_paths)), None)
    weak = None if strong else next(
        (f for f in c.files if _matching_prefix(f, cls.paths) and classify_file(f, rules) not in ("docs", "tests")),
        None,
    )
    if strong:
        raw += cw.strong_path_harness if kind == "harness" else cw.strong_path_runner
        reasons.append(f"changes {label} file {strong}")
    elif weak:
        raw += cw.weak_path_harness if kind == "harness" else cw.weak_path_runner
        reasons.append(f"touches {weak}")
    word = _first_mention(c.subject, cls.keywords)
    if word:
        raw += cw.keyword
        reasons.append(f"subject mentions {word!r}")
    tag = next((t for t in subject_tags(c.subject) if t in cls.tags), None)
    if tag:
        raw += cw.tag_harness if kind == "harness" else cw.tag_runner
        reasons.append(f"subject tag [{_as_written(c.subject, tag)}]")
    if kind == "runner":
        memo = rules.memo()
        if "all_hints" not in memo:
            memo["all_hints"] = tuple(dict.fromkeys(h for pr in rules.platforms.values() for h in pr.hints))
        hint = _first_mention(c.subject, memo["all_hints"])
        if hint:
            raw += cw.device_hint
            reasons.append(f"subject names device {hint}")
    kinds = {classify_file(f, rules) for f in c.files}
    if kind == "harness" and c.files and "code" not in kinds and (strong or weak):
        raw += cw.harness_only
        reasons.append("no Helion code changed")
    score = min(1.0, raw)
    if not (strong or weak):
        score *= cw.no_path
        reasons.append(f"no {label} file touched: discounted")
    other = rules.runner if kind == "harness" else rules.harness
    other_word = None if word else _first_mention(c.subject, other.keywords)
    if other_word:
        score *= cw.other_kind
        reasons.append(f"subject mentions {other_word!r} (a {'runner' if kind == 'harness' else 'harness'} change): discounted")
    return round(score, 4), reasons


def names_timer(commit: RankedCommit | CommitInfo, rules: SliceRules) -> bool:
    """Does a harness commit's subject say it changed a timer (``[harness] timer_keywords``)?"""
    return _first_mention(commit.subject, rules.harness.timer_keywords) is not None


def other_suites(commit: CommitInfo, suite: str | None, rules: SliceRules) -> bool:
    """Does this harness commit belong to a suite the move is not in? It names that suite in its
    subject, or every file it touches under the harness is that suite's own."""
    subject = commit.subject.lower()
    harness = [f for f in commit.files if any(f.startswith(h) for h in rules.harness.paths)]
    for name, s in rules.suites.items():
        if name == suite:
            continue
        if any(w in subject for w in s.words):
            return True
        if harness and all(any(f.startswith(p) for p in s.paths) for f in harness):
            return True
    return False


def find_change_commit(
    window: CommitWindow, kind: Literal["harness", "runner"], rules: SliceRules | None = None,
    platform_short: str | None = None, suite: str | None = None, source: str = "dashboard",
) -> RankedCommit | None:
    """The window's commit that most likely changed the harness (method) or runner (hardware).

    ``platform_short`` scopes it: a commit whose subject speaks only of another platform
    ("Limit unstable MI350 input sweeps" for an H100 move) changed that platform's benchmark.
    ``suite`` (the move's track's baseline label) scopes a harness commit the same way to the
    suites of `rules.suites` (`other_suites`), and ``source`` to what its nightly runs: a commit
    that changes only the pretuned suite's files changed nothing the dashboard measures. None
    when no commit reaches ``weights.change_threshold``. Ties: newest first.
    """
    if kind not in ("harness", "runner"):
        raise ValueError(f"kind must be 'harness' or 'runner', not {kind!r}")
    rules = rules or load_rules()
    sl = _slices(platform_short, rules) if platform_short else None
    best: tuple[float, float, int, RankedCommit] | None = None
    for idx, c in enumerate(window.commits):
        if sl is not None and _other_device(c.subject, subject_tags(c.subject), sl):
            continue
        if kind == "harness" and other_suites(c, suite, rules):
            continue
        if c.files and not _files_run_by(c, source, rules):
            continue
        score, reasons = change_score(c, kind, rules)
        if score < rules.weights.change_threshold:
            continue
        cand = (score, c.date.timestamp(), idx, RankedCommit(c.sha, c.full_sha, c.subject, c.date, score, tuple(reasons)))
        if best is None or cand[:3] > best[:3]:
            best = cand
    return best[3] if best else None
