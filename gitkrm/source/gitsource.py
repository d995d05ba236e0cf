"""A Git remote as a source: a bare cache repository under the state dir, fetched only when
`ls-remote` says the tracked ref moved, with files listed and read from the object database.

The cache keeps no credentials (the remote URL is passed on each command line without its
user-info; secrets reach git through the environment of that one process), follows
force-pushes, and is wiped and cloned again when it turns out to be damaged. Given a
`share` directory, the sources of one URL and credentials share one cache there
(`cacheshare`): a commit one of them fetched is not fetched again by the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import watchfiles

from gitkrm.errors import BadRequest, GitkrmError, NotFound

from .cacheshare import claim, release
from .catfile import CatFile
from .credentials import CredentialProvider
from .errors import InvalidRevision, PathNotFound, UntrustedRevision
from .gitcli import CorruptCache, GitRunner
from .ignore import IGNORE_FILES, IgnoreRules, merge_ignore_texts, wants_repo_tree
from .redact import split_userinfo
from .semver import newest
from .snapshot import MODE_SYMLINK, FileEntry, RepoTree, Snapshot
from .spec import GitSourceSpec, RefKind
from .trailers import allow_prune_args, parse_allow_prune
from .tree import RawEntry, list_repository, list_tree
from .verify import CommitVerifier
from .watching import revision_moves

_TRACKED = "refs/gitkrm/tracked"
_PINNED = "refs/gitkrm/snapshot"
_MARKER = "gitkrm-source.json"


def _clean_subpath(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadRequest(f"source path {path!r} must stay inside the repository")
    return "/".join(parts)


class GitSource:
    """A `Source` over a Git remote; see the module docstring."""

    def __init__(self, spec: GitSourceSpec, *, cache_dir: Path, share: Path | None = None) -> None:
        """`cache_dir`: the source's own cache; `share`: where the caches shared by URL
        live (None: the source's own is used)."""
        self.spec = spec
        self.name = spec.name
        self._subpath = _clean_subpath(spec.path)
        parts = split_userinfo(spec.url)
        self._url = _absolute_if_local(parts.url)
        self._cache = claim(
            root=share,
            url=self._url,
            credentials=(spec.auth, spec.ca_file, parts.username, parts.password),
            own=cache_dir,
        )
        self.cache_dir = cache_dir = self._cache.path
        self._generation = self._cache.generation
        self._closed = False
        if share is not None:  # refs of its own in a shared cache
            own = "refs/gitkrm/source/" + hashlib.sha256(spec.name.encode()).hexdigest()[:16]
            self._tracked, self._pinned = own + "/tracked", own + "/snapshot"
        else:
            self._tracked, self._pinned = _TRACKED, _PINNED
        self._creds = CredentialProvider(
            spec.auth,
            url_username=parts.username,
            url_password=parts.password,
            ca_file=spec.ca_file,
        )
        self.git = GitRunner(git_dir=cache_dir, timeout=spec.timeout)
        self._catfile = CatFile(cache_dir, runner=self.git)
        self._verifier = CommitVerifier(spec.verify) if spec.verify else None
        self._last: Snapshot | None = None
        self._failed: tuple[str, GitkrmError] | None = None
        self._rules: tuple[frozenset[tuple[str, str]], IgnoreRules] | None = None
        self._ready = False
        self._damaged = False
        self._stop = asyncio.Event()
        self._tag: str | None = None
        """The tag a semver range resolved to at the last `poll`."""

    @property
    def last(self) -> Snapshot | None:
        return self._last

    # -- remote ------------------------------------------------------------------------

    async def poll(self) -> str | None:
        """The commit the tracked ref points at on the remote (no fetch); for a semver
        range, the commit of the highest tag it allows, resolved again at every poll."""
        ref = self.spec.ref
        if ref.kind is RefKind.COMMIT:
            return ref.name
        if ref.kind is RefKind.SEMVER:
            self._tag, sha = await self._semver_tag()
            return sha
        names = [ref.remote_ref] + ([ref.remote_ref + "^{}"] if ref.kind is RefKind.TAG else [])
        found = {name: oid for oid, name in await self._ls_remote(*names)}
        peeled = found.get(ref.remote_ref + "^{}") or found.get(ref.remote_ref)
        if peeled is None:
            raise NotFound(f"{ref} not found in {self._url}{await self._not_found_hint()}")
        return peeled

    async def _not_found_hint(self) -> str:
        """Why a ref may be missing: the remote's default branch when the ref is a branch
        of another name (a repository on `master` tracked as the default `main`)."""
        ref = self.spec.ref
        if ref.kind is RefKind.BRANCH:
            for target, name in await self._ls_remote("HEAD", symref=True):
                if name == "HEAD" and target.startswith("ref: refs/heads/"):
                    default = target.removeprefix("ref: refs/heads/")
                    return (
                        f": its default branch is {default!r} (--branch {default}, or "
                        "--ref HEAD to follow whichever it is)"
                    )
        return " (deleted on the remote?)"

    async def _semver_tag(self) -> tuple[str, str]:
        """The highest tag of the remote the semver range allows, and its commit (as Flux:
        tags that are no version are skipped, a leading `v` is allowed)."""
        constraint = self.spec.ref.name
        tags: dict[str, str] = {}
        peeled: dict[str, str] = {}
        for oid, name in await self._ls_remote(tags=True):
            if not name.startswith("refs/tags/"):
                continue
            name = name.removeprefix("refs/tags/")
            if name.endswith("^{}"):
                peeled[name.removesuffix("^{}")] = oid
            else:
                tags[name] = oid
        tag = newest(tags, constraint)
        if tag is None:
            raise NotFound(
                f"no match found for semver: {constraint} (no tag of {self._url} satisfies it)"
            )
        return tag, peeled.get(tag) or tags[tag]

    async def _fetch(self) -> str:
        """Fetch the tracked ref into the cache; the commit it resolved to."""
        ref = self.spec.ref
        depth = [f"--depth={self.spec.depth}"] if self.spec.depth else []
        common = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--force", *depth]
        what = f"fetch {ref} from {self._url}"
        if ref.kind is RefKind.SEMVER:
            if self._tag is None:
                self._tag, _ = await self._semver_tag()
            what = f"fetch tag {self._tag!r} ({ref}) from {self._url}"
            spec = f"+refs/tags/{self._tag}:{self._tracked}"
            await self._remote(*common, "--end-of-options", self._url, spec, what=what)
            return await self._resolve(self._tracked)
        if ref.kind is not RefKind.COMMIT:
            spec = f"+{ref.remote_ref}:{self._tracked}"
            await self._remote(*common, "--end-of-options", self._url, spec, what=what)
            return await self._resolve(self._tracked)
        if not self._catfile.exists(ref.name + "^{commit}"):
            try:
                await self._remote(*common, "--end-of-options", self._url, ref.name, what=what)
            except NotFound:
                # The server won't hand out unadvertised commits: take every branch and tag.
                await self._remote(
                    "fetch",
                    "--quiet",
                    "--force",
                    "--no-write-fetch-head",
                    *(["--unshallow"] if (self.cache_dir / "shallow").exists() else []),
                    "--end-of-options",
                    self._url,
                    "+refs/heads/*:refs/gitkrm/all/heads/*",
                    "+refs/tags/*:refs/gitkrm/all/tags/*",
                    what=what,
                )
            if not self._catfile.exists(ref.name + "^{commit}"):
                raise NotFound(f"{ref} not found in {self._url}")
        await self.git.run("update-ref", self._tracked, ref.name)
        return ref.name

    async def _ls_remote(
        self, *names: str, tags: bool = False, symref: bool = False
    ) -> list[tuple[str, str]]:
        """The remote's (object id, ref name) lines for `names` (all tags with `tags`; with
        `symref` also `ref: <target>` lines for the symbolic refs, e.g. HEAD)."""
        option = (["--tags"] if tags else []) + (["--symref"] if symref else [])
        res = await self.git.run(
            "ls-remote",
            *option,
            "--end-of-options",
            self._url,
            *names,
            auth=self._creds.env(),
            remote=True,
            in_repo=False,
            what=" ".join(["ls-remote", *option, self._url]),
        )
        lines = res.stdout.decode("utf-8", "replace").splitlines()
        return [(oid, name) for oid, _, name in (line.partition("\t") for line in lines)]

    async def _remote(self, *args: str, what: str) -> None:
        await self.git.run(*args, auth=self._creds.env(), remote=True, what=what)

    async def _resolve(self, name: str) -> str:
        res = await self.git.run("rev-parse", "--verify", "--end-of-options", name + "^{commit}")
        return res.stdout.decode().strip()

    # -- cache -------------------------------------------------------------------------

    def _marker(self) -> dict[str, str]:
        return {"url": self._url}

    async def _cache_usable(self) -> bool:
        """A cheap check at start: a bare repository made by us for this URL."""
        try:
            marker = json.loads((self.cache_dir / _MARKER).read_text())
        except (OSError, ValueError):
            return False
        if marker != self._marker():
            return False
        try:
            res = await self.git.run("rev-parse", "--is-bare-repository")
        except GitkrmError:
            return False  # not a repository, a damaged one, a bad config
        return res.stdout.strip() == b"true"

    async def _reset_cache(self) -> None:
        """Wipe the cache and start an empty bare repository (config holds no secrets);
        the other sources of a shared cache see it by its generation."""
        self._catfile.close()
        self._cache.generation += 1
        self._generation = self._cache.generation
        if self.cache_dir.is_symlink() or self.cache_dir.is_file():
            self.cache_dir.unlink()
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir.mkdir(parents=True)
        await self.git.run("init", "--quiet", "--bare")  # at --git-dir, the cache
        await self.git.run("config", "gc.autoDetach", "false")
        await self.git.run("config", "core.logAllRefUpdates", "false")
        (self.cache_dir / _MARKER).write_text(json.dumps(self._marker()))
        self._rules = None

    async def _open_cache(self) -> None:
        if self._generation != self._cache.generation:
            # Another source of the shared cache wiped and made it again: read it anew.
            self._catfile.close()
            self._rules = None
            self._generation = self._cache.generation
            self._damaged = False
            self._ready = True
        if self._damaged or not self._ready:
            if self._damaged or not await self._cache_usable():
                await self._reset_cache()
            self._damaged = False
            self._ready = True

    # -- snapshot ----------------------------------------------------------------------

    async def snapshot(self) -> Snapshot:
        async with self._cache.lock():
            try:
                return await self._snapshot()
            except CorruptCache:
                self._damaged = True
                return await self._snapshot()

    async def _snapshot(self) -> Snapshot:
        # Ask the remote first: when it can't be reached, a damaged cache is not wiped yet.
        remote_rev = await self.poll()
        repaired = self._damaged
        await self._open_cache()
        last = self._last
        if last is not None and last.revision == remote_rev and not repaired:
            if last.ref != self._tag:  # another tag the range allows, on the same commit
                self._last = last = last.at_ref(self._tag)
            return last
        if self._failed is not None and self._failed[0] == remote_rev:
            raise self._failed[1]
        if remote_rev is not None and self._catfile.exists(remote_rev + "^{commit}"):
            revision = remote_rev
        else:
            revision = await self._fetch()
        if last is not None and last.revision == revision and last.ref == self._tag:
            return last  # a repaired cache serves the same snapshot again
        if self._failed is not None and self._failed[0] == revision:
            raise self._failed[1]
        try:
            if self._verifier is not None:
                await self._verifier.verify(self.git, revision)
            snap = await self._list(revision)
        except (InvalidRevision, UntrustedRevision, PathNotFound) as e:
            self._failed = (revision, e)
            raise
        await self.git.run("update-ref", self._pinned, revision)
        self._failed = None
        self._last = snap
        return snap

    async def _list(self, revision: str) -> Snapshot:
        """List the tree under the sub-path: files, symlinks, ignore files and bounds."""
        sub = self._subpath
        treeish = f"{revision}:{sub}" if sub else f"{revision}^{{tree}}"
        kind = self._catfile.info_type(treeish)
        if kind is None:
            raise PathNotFound(revision=revision, path=sub)
        if kind != "tree":
            raise PathNotFound(revision=revision, path=sub, what="is a file, not a directory")
        raw = await self._ls_tree(treeish)
        prefix = sub + "/" if sub else ""
        ignore_paths = [p for p in raw if p.rsplit("/", 1)[-1] in IGNORE_FILES]
        above = [f"{d}/{n}" if d else n for d in _ancestors(sub) for n in IGNORE_FILES]
        texts = self._catfile.read_objects(
            [raw[p].ref for p in ignore_paths] + [f"{revision}:{a}" for a in above]
        )
        found: dict[str, dict[str, str]] = {}  # directory -> ignore file name -> text
        for a in above:
            data = texts[f"{revision}:{a}"]
            if data is not None:
                found.setdefault(_dir(a), {})[_base(a)] = data.decode("utf-8", "replace")
        for p in ignore_paths:
            data = texts[raw[p].ref] or b""
            found.setdefault(_dir(prefix + p), {})[_base(p)] = data.decode("utf-8", "replace")
        ignore_files = {d: merge_ignore_texts(t) for d, t in found.items()}
        links = {p: e.ref for p, e in raw.items() if e.mode == MODE_SYMLINK}
        blobs = self._catfile.read_blobs(links.values()) if links else {}
        rules = self._ignore_rules(ignore_files)
        listing = list_tree(
            raw,
            link_targets={p: blobs[b].decode("utf-8", "surrogateescape") for p, b in links.items()},
            rules=rules,
            prefix=prefix,
            max_file_size=self.spec.max_file_size,
        )
        if listing.causes:
            raise InvalidRevision(revision=revision, causes=listing.causes)
        entries = {p: FileEntry(p, e.ref, e.size, e.mode) for p, e in listing.files.items()}
        tree = None
        if self.spec.repo_tree or any(wants_repo_tree(p) for p in entries):
            tree = await self._repo_tree(revision, raw if not sub else None, rules)
        return Snapshot(
            revision=revision,
            files=entries,
            reader=_Reader(self),
            tree=tree,
            allow_prune=await self._allow_prune(revision),
            ref=self._tag,
        )

    async def _allow_prune(self, revision: str) -> int | None:
        """The commit's `Gitkrm-Allow-Prune` trailer (one `git log`, once per revision)."""
        res = await self.git.run(
            *allow_prune_args(revision), what=f"read the trailers of {revision[:12]}"
        )
        return parse_allow_prune(res.stdout.decode("utf-8", "replace"))

    async def _repo_tree(
        self, revision: str, raw: dict[str, RawEntry] | None, rules: IgnoreRules
    ) -> RepoTree:
        """The whole repository for kustomize builds (`raw`: its listing, when the source
        is the whole repository), under the ignore files of the whole repository."""
        sub = self._subpath
        if raw is None:
            raw = await self._ls_tree(f"{revision}^{{tree}}")
            ignore_paths = [p for p in raw if _base(p) in IGNORE_FILES]
            if ignore_paths:
                texts = self._catfile.read_blobs({raw[p].ref for p in ignore_paths})
                found: dict[str, dict[str, str]] = {}
                for p in ignore_paths:
                    text = texts[raw[p].ref].decode("utf-8", "replace")
                    found.setdefault(_dir(p), {})[_base(p)] = text
                rules = IgnoreRules(
                    {d: merge_ignore_texts(t) for d, t in found.items()},
                    defaults=self.spec.ignore_defaults,
                    extra=self.spec.ignore,
                )
        links = {p: e.ref for p, e in raw.items() if e.mode == MODE_SYMLINK}
        blobs = self._catfile.read_blobs(links.values()) if links else {}
        files, refused = list_repository(
            raw,
            link_targets={p: blobs[b].decode("utf-8", "surrogateescape") for p, b in links.items()},
            rules=rules,
        )
        return RepoTree(
            root=sub,
            files={p: FileEntry(p, e.ref, e.size, e.mode) for p, e in files.items()},
            refused=refused,
        )

    def _ignore_rules(self, files: dict[str, str]) -> IgnoreRules:
        """The same rules object while the ignore files don't change: it remembers answers."""
        key = frozenset(files.items())
        if self._rules is None or self._rules[0] != key:
            rules = IgnoreRules(files, defaults=self.spec.ignore_defaults, extra=self.spec.ignore)
            self._rules = (key, rules)
        return self._rules[1]

    async def _ls_tree(self, treeish: str) -> dict[str, RawEntry]:
        res = await self.git.run("ls-tree", "-r", "-z", "--long", "--end-of-options", treeish)
        out: dict[str, RawEntry] = {}
        for record in res.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, oid, size = meta.split()
            if kind != b"blob":
                continue  # submodules (commit entries) have no content here
            name = path.decode("utf-8", "surrogateescape")
            out[name] = RawEntry(mode=int(mode, 8), size=int(size), ref=oid.decode())
        return out

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        """Blob contents from the cache; a damaged cache is flagged to be cloned again."""
        try:
            return self._catfile.read_blobs(blob_ids)
        except (CorruptCache, NotFound):
            self._damaged = True
            raise

    async def changes(self) -> AsyncIterator[None]:
        """For a repository on this machine: yield when its tracked ref moves (a commit,
        a push, a reset), debounced, until `close`. Remote URLs end at once: poll them."""
        git_dir = _local_git_dir(self._url)
        if git_dir is None:
            return
        seen = self._last.revision if self._last else None
        async for _ in revision_moves(
            git_dir,
            poll=self.poll,
            seen=seen,
            stop=self._stop,
            watch_filter=_ref_change,
            debounce=300,
        ):
            yield None

    async def close(self) -> None:
        self._stop.set()
        self._catfile.close()
        if not self._closed:
            self._closed = True
            release(self._cache)
        self._creds.close()
        if self._verifier is not None:
            self._verifier.close()


class _Reader:
    """A snapshot's view of the source's object database (weakly coupled: reads only)."""

    __slots__ = ("_source",)

    def __init__(self, source: GitSource) -> None:
        self._source = source

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        return self._source.read_blobs(blob_ids)


def _absolute_if_local(url: str) -> str:
    """Local paths made absolute, so they mean the same from any working directory."""
    if "://" in url:
        return url
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return url  # scp-like `host:path`
    return os.path.abspath(url)


def _local_git_dir(url: str) -> Path | None:
    """The Git directory of a repository on this machine (bare or not), else None."""
    if url.startswith("file://"):
        url = unquote(urlsplit(url).path)
    elif "://" in url or not url.startswith("/"):
        return None
    path = Path(url)
    if (path / "HEAD").is_file() and (path / "refs").is_dir():
        return path
    if (path / ".git" / "HEAD").is_file():
        return path / ".git"
    return None


def _ref_change(change: watchfiles.Change, path: str) -> bool:
    """Ref and HEAD updates matter; object writes (the bulk of a push) don't."""
    return f"{os.sep}objects{os.sep}" not in path and not path.endswith(".lock")


def _ancestors(sub: str) -> list[str]:
    """Directories above the sub-path, root included ("" for a root source: none)."""
    if not sub:
        return []
    parts = sub.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts))]


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""
