"""Which files of a tree a source lists: `.gitkrmignore` and Flux's `.sourceignore` files
(gitignore syntax, each applying to its directory and below; in one directory the
`.sourceignore` lines come first, so `.gitkrmignore` has the last word), default ignores,
and manifest names only.

Precedence follows Git: within one file the last matching pattern wins, a deeper file
overrides a shallower one, and nothing below an ignored directory can be re-included.
The defaults act as lines at the top of the root file, so a root `.gitkrmignore` can
negate them; a source's own patterns (Flux's GitRepository `spec.ignore`, a GitSource's)
act as lines at its end, as source-controller appends them to the repository's.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

import pathspec

IGNORE_FILE = ".gitkrmignore"
SOURCE_IGNORE_FILE = ".sourceignore"  # Flux's source-controller
IGNORE_FILES = (SOURCE_IGNORE_FILE, IGNORE_FILE)  # in the order their lines apply

# VCS metadata, CI configuration and tool configuration that happen to be YAML or JSON.
DEFAULT_IGNORES: tuple[str, ...] = (
    ".git/",
    ".github/",
    ".gitlab/",
    ".gitlab-ci.yml",
    ".circleci/",
    ".buildkite/",
    ".woodpecker/",
    ".woodpecker.yml",
    ".travis.yml",
    ".drone.yml",
    "appveyor.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    "cloudbuild.yaml",
    "**/.pre-commit-config.yaml",
    "**/.yamllint",
    "**/.yamllint.yaml",
    "**/.yamllint.yml",
    "**/.sops.yaml",
    "**/.goreleaser.yml",
    "**/.goreleaser.yaml",
    "**/.golangci.yml",
    "**/.golangci.yaml",
    "**/renovate.json",
    "**/.renovaterc.json",
    "**/package.json",
    "**/package-lock.json",
    "**/tsconfig.json",
    "**/.vscode/",
    "**/.idea/",
)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
JSONNET_SUFFIXES = (".jsonnet", ".libsonnet")  # an Argo CD directory source evaluates them
KUSTOMIZATION_NAMES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
# A directory holding one of these is read whole: kustomize and Helm read any of its files.
WHOLE_DIRECTORY_NAMES = KUSTOMIZATION_NAMES | {"Chart.yaml"}


def merge_ignore_texts(texts: Mapping[str, str]) -> str:
    """One directory's ignore lines from its ignore files (by file name), in the order of
    `IGNORE_FILES`."""
    return "\n".join(texts[n] for n in IGNORE_FILES if n in texts)


def _dirname(path: str) -> str:
    return path.rpartition("/")[0]


def _basename(path: str) -> str:
    return path.rpartition("/")[2]


def is_manifest_name(path: str) -> bool:
    """A name the renderer reads: `*.yaml`, `*.yml`, `*.json`, a `Kustomization` file, or
    jsonnet (`*.jsonnet`, `*.libsonnet`)."""
    name = _basename(path)
    return (
        name.endswith(MANIFEST_SUFFIXES)
        or name in KUSTOMIZATION_NAMES
        or name.endswith(JSONNET_SUFFIXES)
    )


def wants_repo_tree(path: str) -> bool:
    """A file that may read files anywhere in the repository: a kustomization (its bases)
    or a jsonnet file (its imports and library paths); the source then lists the whole
    repository (`RepoTree`)."""
    name = _basename(path)
    return name in KUSTOMIZATION_NAMES or name.endswith(".jsonnet")


class _Level:
    """One ignore file's patterns, with a combined regex that rules out most paths at once."""

    __slots__ = ("any", "spec")

    def __init__(self, lines: Sequence[str]) -> None:
        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        regexes = [getattr(p, "regex", None) for p in self.spec.patterns]
        parts = [r.pattern for r in regexes if isinstance(r, re.Pattern)]
        parts = [x.replace("(?P<ps_d>", "(?:") for x in parts]
        self.any = re.compile("|".join(f"(?:{x})" for x in parts)) if parts else None

    def check(self, rel: str) -> bool | None:
        if self.any is None or self.any.match(rel) is None:
            return None
        return self.spec.check_file(rel).include


class IgnoreRules:
    """Gitignore matching over paths relative to one root (posix, no leading slash)."""

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        defaults: Sequence[str] = DEFAULT_IGNORES,
        extra: Sequence[str] = (),
    ) -> None:
        """`files` maps a directory ("" for the root) to the text of its ignore file;
        `extra` are the source's own patterns, after the root file's."""
        root = [*defaults, *files.get("", "").splitlines(), *extra]
        specs: dict[str, _Level] = {"": _Level(root)}
        for d, text in files.items():
            if d:
                specs[d.strip("/")] = _Level(text.splitlines())
        self._specs = specs
        self._dirs: dict[str, bool] = {"": False}
        self._files: dict[str, bool] = {}
        self._levels_of: dict[str, list[tuple[_Level, int]]] = {}

    def _levels(self, directory: str) -> list[tuple[_Level, int]]:
        """Rules that apply inside `directory` with the prefix length to cut, deepest first."""
        levels = self._levels_of.get(directory)
        if levels is None:
            levels = []
            d = directory
            while True:
                spec = self._specs.get(d)
                if spec is not None:
                    levels.append((spec, len(d) + 1 if d else 0))
                if not d:
                    break
                d = _dirname(d)
            self._levels_of[directory] = levels
        return levels

    def _match(self, path: str, *, is_dir: bool) -> bool:
        for spec, cut in self._levels(_dirname(path)):
            result = spec.check(path[cut:] + "/" if is_dir else path[cut:])
            if result is not None:
                return result
        return False

    def dir_ignored(self, directory: str) -> bool:
        """Whether a directory, or one above it, is ignored."""
        cached = self._dirs.get(directory)
        if cached is None:
            parent = _dirname(directory)
            cached = self.dir_ignored(parent) or self._match(directory, is_dir=True)
            self._dirs[directory] = cached
        return cached

    def ignored(self, path: str, *, is_dir: bool = False) -> bool:
        """Whether `path` is ignored; answers are remembered, so keep one instance per set of
        ignore files and reuse it across revisions."""
        if is_dir:
            return self.dir_ignored(path)
        hit = self._files.get(path)
        if hit is None:
            hit = self.dir_ignored(_dirname(path)) or self._match(path, is_dir=False)
            self._files[path] = hit
        return hit


def select(paths: Collection[str], rules: IgnoreRules) -> set[str]:
    """The paths a source lists: not ignored, and a manifest name or inside a kustomization
    directory (whose generators and patches may read any file) or a Helm chart's."""
    kept = [p for p in paths if not rules.ignored(p)]
    kdirs = {_dirname(p) for p in kept if _basename(p) in WHOLE_DIRECTORY_NAMES}
    if not kdirs:
        return {p for p in kept if is_manifest_name(p)}
    under: dict[str, bool] = {}

    def in_kustomization(d: str) -> bool:
        hit = under.get(d)
        if hit is None:
            hit = d in kdirs or (bool(d) and in_kustomization(_dirname(d)))
            under[d] = hit
        return hit

    return {p for p in kept if is_manifest_name(p) or in_kustomization(_dirname(p))}
