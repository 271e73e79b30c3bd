"""kindle.torch_version (torch.torch_version): a version string that compares as a version with
strings, tuples and other versions (`kindle.__version__ >= (0, 1)`, `>= "0.1.0"`)."""
import re

__all__ = ["TorchVersion", "Version", "InvalidVersion"]

_PATTERN = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c)[-_.]?(\d*))?"
                      r"(?:[-_.]?post[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+([a-z0-9.]+))?$", re.I)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


class InvalidVersion(ValueError):
    pass


class Version:
    """A PEP 440 version (release, pre, post, dev, local), ordered as packaging.version.Version."""

    def __init__(self, text):
        m = _PATTERN.match(str(text).strip())
        if m is None:
            raise InvalidVersion(f"Invalid version: '{text}'")
        release, pre, pre_n, post, dev, local = m.groups()
        rel = [int(p) for p in release.split(".")]
        while len(rel) > 1 and rel[-1] == 0:  # 1.0 == 1.0.0
            rel.pop()
        self.release = tuple(int(p) for p in release.split("."))
        self.local = local
        inf = float("inf")
        # dev releases sort before pre-releases, which sort before the release, then post-releases.
        pre_key = (_PRE[pre.lower()], int(pre_n or 0)) if pre else ((-inf, 0) if dev is not None and post is None
                                                                      else (inf, 0))
        self._key = (tuple(rel), pre_key, int(post or 0) if post is not None else -1,
                     int(dev or 0) if dev is not None else inf, local or "")

    major = property(lambda self: self.release[0])
    minor = property(lambda self: self.release[1] if len(self.release) > 1 else 0)
    micro = property(lambda self: self.release[2] if len(self.release) > 2 else 0)

    def __eq__(self, o):
        return self._key == o._key

    def __lt__(self, o):
        return self._key < o._key

    def __le__(self, o):
        return self._key <= o._key

    def __gt__(self, o):
        return self._key > o._key

    def __ge__(self, o):
        return self._key >= o._key

    def __hash__(self):
        return hash(self._key)


def _as_version(v):
    if isinstance(v, Version):
        return v
    if isinstance(v, (tuple, list)):
        return Version(".".join(str(p) for p in v))
    if isinstance(v, str):
        return Version(v)
    raise InvalidVersion(v)


class TorchVersion(str):
    """A str that compares with str, tuple, list and Version operands as versions."""

    def _cmp(self, other, op):
        try:
            return op(Version(str(self)), _as_version(other))
        except InvalidVersion:
            return NotImplemented

    def __gt__(self, o):
        return self._cmp(o, Version.__gt__)

    def __ge__(self, o):
        return self._cmp(o, Version.__ge__)

    def __lt__(self, o):
        return self._cmp(o, Version.__lt__)

    def __le__(self, o):
        return self._cmp(o, Version.__le__)

    def __eq__(self, o):
        r = self._cmp(o, Version.__eq__)
        return str.__eq__(self, o) if r is NotImplemented else r

    def __ne__(self, o):
        return not self.__eq__(o)

    __hash__ = str.__hash__


__version__ = TorchVersion("0.1.0")
