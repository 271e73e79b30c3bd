"""kindle.return_types (torch.return_types): the named tuples that ops with several results
return (`values, indices = x.max(0)`). This module is their one registry: the C++ bindings and
the Python ops both take their types from here (types the bindings need that are not listed
are added on first use)."""
import collections

_FIELDS = {
    "aminmax": ("min", "max"), "cummax": ("values", "indices"), "cummin": ("values", "indices"),
    "frexp": ("mantissa", "exponent"), "histogram": ("hist", "bin_edges"), "histogramdd": ("hist", "bin_edges"),
    "kthvalue": ("values", "indices"), "max": ("values", "indices"), "min": ("values", "indices"),
    "median": ("values", "indices"), "nanmedian": ("values", "indices"), "mode": ("values", "indices"),
    "sort": ("values", "indices"), "topk": ("values", "indices"), "lu_unpack": ("P", "L", "U"),
    "qr": ("Q", "R"), "slogdet": ("sign", "logabsdet"), "svd": ("U", "S", "V"),
    "triangular_solve": ("solution", "cloned_coefficient"),
    "linalg_cholesky_ex": ("L", "info"), "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_inv_ex": ("inverse", "info"),
    "linalg_ldl_factor": ("LD", "pivots"), "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"), "linalg_lu": ("P", "L", "U"),
    "linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_qr": ("Q", "R"), "linalg_slogdet": ("sign", "logabsdet"), "linalg_solve_ex": ("result", "info"),
    "linalg_svd": ("U", "S", "Vh"),
}

__all__ = sorted(_FIELDS) + ["all_return_types"]


def _repr(self):
    """As torch prints its return types: the qualified name, then one field per line."""
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    from . import _legacy  # "torch." once kindle.install_as_torch() ran
    return f"{_legacy.type_prefix}.return_types.{type(self).__name__}(\n{body})"


def _make(name, fields):
    t = collections.namedtuple(name, fields)
    t.__module__ = __name__
    t.__repr__ = _repr
    globals()[name] = t
    return t


all_return_types = [_make(n, f) for n, f in _FIELDS.items()]


def _get(name, fields):
    """The type called name (made with these fields if this module does not list it yet)."""
    t = globals().get(name)
    if t is None:
        t = _make(name, fields)
    elif tuple(t._fields) != tuple(fields):
        raise RuntimeError(f"return_types.{name} has fields {t._fields}, but {tuple(fields)} were asked for")
    return t
