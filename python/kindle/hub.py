"""Model hub (torch.hub) without a network: entry points load from a directory holding a
hubconf.py (source='local'), and a GitHub repo or checkpoint URL resolves only to a copy already
in the hub cache (get_dir(), by default PyTorch's own, $TORCH_HOME/hub), as torch.hub does when
it is offline. Nothing is ever downloaded."""
import contextlib
import importlib.util
import os
import sys
from urllib.parse import urlparse

__all__ = ["load", "list", "help", "get_dir", "set_dir", "load_state_dict_from_url", "download_url_to_file"]

_HUBCONF = "hubconf.py"
_hub_dir = None


def get_dir():
    """The hub cache directory: set_dir's, else $TORCH_HOME/hub ($TORCH_HOME defaults to
    $XDG_CACHE_HOME/torch, that to ~/.cache)."""
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))
    return os.path.join(home, "hub")


def set_dir(d):
    """Sets the hub cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _no_network(what):
    return RuntimeError(f"{what}: Kindle's hub has no network access and only loads local directories "
                        f"(source='local') or copies already in the hub cache ({get_dir()})")


def _cached_repo_dir(github, force_reload):
    """The cached checkout of 'owner/name[:ref]', as torch.hub names it; raises if absent."""
    repo, _, ref = github.partition(":")
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"Invalid GitHub repo '{github}': expected 'repo_owner/repo_name[:ref]'")
    owner, name = parts
    refs = [ref] if ref else ["main", "master"]
    if not force_reload:
        for r in refs:
            d = os.path.join(get_dir(), "_".join([owner, name, r.replace("/", "_")]))
            if os.path.isdir(d):
                return d
    raise _no_network(f"cannot download '{github}'")


def _repo_dir(repo_or_dir, source, force_reload, verbose):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    # A directory with a hubconf.py loads as source='local' whatever the source: PyTorch could not
    # read it as 'owner/name' anyway.
    if source == "local" or os.path.isfile(os.path.join(repo_or_dir, _HUBCONF)):
        return repo_or_dir
    d = _cached_repo_dir(repo_or_dir, force_reload)
    if verbose:
        sys.stderr.write(f"Using cache found in {d}\n")
    return d


@contextlib.contextmanager
def _on_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(path)


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, _HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{path}'")
    spec = importlib.util.spec_from_file_location(_HUBCONF, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_exists(name):
    if name == "torch":  # Kindle stands in for it
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [d for d in getattr(module, "dependencies", None) or [] if not _module_exists(d)]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Calls entry point `model` of the hubconf.py in `repo_or_dir` with `*args, **kwargs`.

    source='local', or any directory with a hubconf.py: that directory. source='github'
    (PyTorch's default): 'owner/name[:ref]', found only in the hub cache, as Kindle does not
    download."""
    repo_dir = _repo_dir(repo_or_dir, source.lower() if isinstance(source, str) else source, force_reload,
                         verbose)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
        return _entry(module, model)(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entry points of a hubconf.py: public callables. `github` may be a local directory."""
    repo_dir = _repo_dir(github, "github", force_reload, verbose)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entry point `model`. `github` may be a local directory."""
    repo_dir = _repo_dir(github, "github", force_reload, True)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
        return _entry(module, model).__doc__


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    raise _no_network(f"cannot download {url}")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """Loads the checkpoint `url` names from model_dir (default get_dir()/checkpoints), where
    torch.hub would have saved it; Kindle cannot download it when it is not there."""
    from .serialization import load as _load
    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        raise _no_network(f"cannot download {url} (looked for {cached})")
    return _load(cached, map_location=map_location, weights_only=weights_only)
