"""From a source's configuration to the `Source` that reads it (Git remote or plain directory)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gitkrm.source import GitSource, GitSourceSpec, LocalSource, Source

from .config import SourceConfig
from .state import CACHE_DIR


def open_source(config: SourceConfig, *, git_cache: Path, repo_tree: bool = False) -> Source:
    """A LocalSource for a plain directory, a ChartRepositorySource for a chart release
    (archives cached beside the parsed files), else a GitSource caching into `git_cache`,
    or into the cache beside it the sources of the same URL and credentials share (one
    fetch for all the children of one repository); with `mounts`, a MountedSource over it
    and a GitSource per mount; with `artifact`, an ArtifactSource over the whole repository
    (`repo_tree`: listing its whole tree); with `oci`, an OciSource unpacking into the
    cache beside the charts'."""
    if config.mounts:
        from gitkrm.source.mounted import MountedSource

        main = open_source(dataclasses.replace(config, mounts=()), git_cache=git_cache)
        mounts: dict[str, Source] = {}
        for m in config.mounts:
            name = f"{config.name}.{m.name}"
            spec = GitSourceSpec(name=name, url=m.url, ref=m.ref, auth=m.auth, ca_file=m.ca_file)
            mounts[m.name] = GitSource(
                spec, cache_dir=git_cache.parent / name, share=git_cache.parent
            )
        return MountedSource(main=main, mounts=mounts)
    if config.chart is not None:
        from gitkrm.charts.repository import ChartFetcher
        from gitkrm.charts.source import ChartRepositorySource

        auth = config.helm.repositories if config.helm is not None else ()
        cache = git_cache.parent.parent / CACHE_DIR / "charts"
        fetcher = ChartFetcher(cache_dir=cache, auth=auth)
        return ChartRepositorySource(name=config.name, chart=config.chart, fetcher=fetcher)
    if config.generator is not None:
        from .tree.argocd_appset import ApplicationSetSource, GeneratedApplications
        from .tree.flux_generated import GeneratedSource

        whole = dataclasses.replace(config, generator=None, path="")
        repository = open_source(whole, git_cache=git_cache, repo_tree=True)
        if isinstance(config.generator, GeneratedApplications):
            return ApplicationSetSource(
                name=config.name, repository=repository, spec=config.generator
            )
        return GeneratedSource(name=config.name, repository=repository, spec=config.generator)
    if config.artifact is not None:
        from gitkrm.source.artifact import ArtifactSource

        whole = dataclasses.replace(config, artifact=None, path="")
        repository = open_source(whole, git_cache=git_cache, repo_tree=True)
        return ArtifactSource(
            name=config.name, repository=repository, recipe=config.artifact, path=config.path
        )
    tree = (
        repo_tree
        or (config.overlay is not None and config.overlay.outside_path)
        or (config.helm is not None and config.helm.outside_chart)
    )
    ignore = tuple(config.ignore.splitlines()) if config.ignore else ()
    if config.oci is not None:
        from gitkrm.source.oci_source import OciSource

        cache = git_cache.parent.parent / CACHE_DIR / "oci"
        return OciSource(
            name=config.name, artifact=config.oci, cache_dir=cache, path=config.path,
            repo_tree=tree, ignore=ignore,
        )  # fmt: skip
    if config.ref is None:
        return LocalSource(
            name=config.name, root=Path(config.url), path=config.path, repo_tree=tree,
            ignore=ignore,
        )  # fmt: skip
    spec = GitSourceSpec(
        name=config.name,
        url=config.url,
        ref=config.ref,
        path=config.path,
        auth=config.auth,
        ca_file=config.ca_file,
        verify=config.verify,
        repo_tree=tree,
        ignore=ignore,
    )
    if config.timeout is not None:
        spec = dataclasses.replace(spec, timeout=config.timeout)
    return GitSource(spec, cache_dir=git_cache, share=git_cache.parent)
