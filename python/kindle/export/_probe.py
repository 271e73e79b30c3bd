"""Finding where traced code specialised a dynamic dimension, by running the graph at other sizes.

torch.export reasons symbolically about every size guard; Kindle's tracer only sees the example
values, so export runs the freshly traced graph (size reads in it are graph operations, and
every Python decision on a size left a kindle._assert) once per dynamic dimension at a
neighbouring size, and once at the bottom of its range. A failure there is what torch reports
at export time: a Dim the code fixed to one value (UserError, or a static size for Dim.AUTO),
or a lower bound the code needs (UserError with a suggested Dim for named Dims, a narrowed
range for the hints). Inputs are resized by repeating their own data along the dimension, so
index tensors stay valid. Sizes above the example are not searched beyond the neighbour: such
limits show up as the graph's assertions failing when it is called.
"""
from .. import _C
from ..autograd.grad_mode import no_grad
from ..fx.graph_module import GraphModule
from ..fx.interpreter import Interpreter
from ..nn.parameter import Parameter
from ._shapes import TensorMeta, make_static, specialized_error
from .dynamic_shapes import Dim, UserError, _Symbol, int_oo
from .graph_signature import InputKind


def _resized(t, sizes):
    import kindle
    out = t
    for d, new in enumerate(sizes):
        old = out.shape[d]
        if old == new:
            continue
        if old == 0:
            shape = list(out.shape)
            shape[d] = new
            out = kindle.zeros(shape, dtype=out.dtype, device=out.device)
        else:
            out = out.index_select(d, kindle.arange(new, device=out.device) % old)
    return out.clone() if out is t else out


class _ShapeRecorder(Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.shapes = {}

    def run_node(self, n):
        result = super().run_node(n)
        if isinstance(result, _C.Tensor):
            self.shapes[n.name] = tuple(result.shape)
        elif type(result) is int:
            self.shapes[n.name] = result
        return result


def probe(graph, signature, state_dict, constants, leaves, shapes, roots):
    """Runs the probes described above; edits roots (and shapes) in place or raises UserError."""
    gm = GraphModule({}, graph, "GraphModule")
    state = []
    for spec in signature.input_specs:
        if spec.kind != InputKind.USER_INPUT:
            state.append(state_dict[spec.target] if spec.target in state_dict else constants[spec.target])

    def run(changes, recorder=None):
        examples = {r.symbol: r.example for r in roots}
        examples.update((r.symbol, v) for r, v in changes.items())
        flat = []
        for leaf, shape in zip(leaves, shapes):
            if shape is None:
                flat.append(leaf.value)
            else:
                sizes = [s.eval(examples[s.root]) if isinstance(s, _Symbol) else s for s in shape]
                flat.append(_resized(leaf.value, sizes))
        try:
            with no_grad():
                inputs = [t if isinstance(t, Parameter) else t.clone() for t in state] + flat
                if recorder is not None:
                    recorder.run(*inputs)
                else:
                    gm(*inputs)
            return True
        except Exception:  # any failure at that size means the graph is not valid there
            return False

    observed = []
    for root in list(roots):
        if root not in roots:  # merged into another one
            continue
        e = root.example
        neighbour = e + 1 if e + 1 <= root.hi else e - 1
        low = max(root.lo, 2)
        if neighbour < low:
            continue
        recorder = _ShapeRecorder(gm)
        if not run({root: neighbour}, recorder):
            group = _equal_group(root, roots, neighbour, run)
            if group is None:
                if root.kind == "auto":
                    make_static(root, roots, shapes)
                    continue
                raise specialized_error(root, e)
            root = _merge(root, group, roots, shapes)
            recorder = _ShapeRecorder(gm)
            run({root: neighbour}, recorder)
        observed.append((root, neighbour, recorder.shapes))
        if low < min(neighbour, e) and not run({root: low}):
            failing, passing = low, e
            while passing - failing > 1:
                mid = (failing + passing) // 2
                if run({root: mid}):
                    passing = mid
                else:
                    failing = mid
            if root.kind == "named":
                hi = "" if root.hi is int_oo else f" and {root.name} <= {root.hi}"
                given = Dim._readable(root.name, root.lo, root.hi)
                raise UserError(
                    f"Constraints violated ({root.name})! For more information, run with TORCH_LOGS=\"+dynamic\".\n"
                    f"  - Not all values of {root.name} in the specified range {given} satisfy the generated guard "
                    f"{passing} <= {root.name}{hi}\nSuggested fixes:\n  {root.name} = "
                    f"{Dim._readable(root.name, passing, root.hi)}")
            root.lo = passing
    _renumber(roots, shapes)
    _annotate_shapes(graph, [o for o in observed if o[0] in roots])


def _equal_group(root, roots, neighbour, run):
    """The dynamic dimensions that must move together with root (torch infers such equalities
    for Dim.AUTO/DYNAMIC; two named Dims are never merged, as torch reports those): the
    smallest set of dimensions with root's example size that makes a joint probe pass."""
    group = [r for r in roots if r is not root and r.example == root.example and r.lo <= neighbour <= r.hi
             and "named" not in (r.kind, root.kind)]
    if not group or not run({r: neighbour for r in [root] + group}):
        return None
    for r in list(group):
        rest = [x for x in group if x is not r]
        if run({x: neighbour for x in [root] + rest}):
            group = rest
    return group


def _merge(root, group, roots, shapes):
    """One symbol for root and group (a named Dim among them names the result)."""
    keep = next((r for r in [root] + group if r.kind == "named"), root)
    for r in [root] + group:
        if r is keep:
            continue
        keep.lo, keep.hi = max(keep.lo, r.lo), min(keep.hi, r.hi)
        keep.uses += r.uses
        roots.remove(r)
        for i, d, c, o in r.uses:
            shapes[i][d] = _Symbol(keep.symbol, c, o)
    return keep


def _renumber(roots, shapes):
    for k, root in enumerate(roots):
        root.symbol = _Symbol(f"s{k}")
        for i, d, c, o in root.uses:
            shapes[i][d] = _Symbol(root.symbol, c, o)


def _annotate_shapes(graph, observed):
    """Dimensions of intermediate values that moved with a probed dimension get a symbol in
    node.meta['val'] (2*s0 when it moved twice as far), for printing and for passes that read it."""
    found, unknown = {}, 0
    for root, value, shapes in observed:
        step = value - root.example
        for node in graph.nodes:
            meta = node.meta.get("val")
            if type(meta) is int and type(shapes.get(node.name)) is int and shapes[node.name] != meta:
                coeff, rem = divmod(shapes[node.name] - meta, step)
                ok = not rem and coeff > 0 and (node.name, None) not in found
                found[(node.name, None)] = _Symbol(root.symbol, coeff, meta - coeff * root.example) if ok else None
                continue
            if node.op == "placeholder" or not isinstance(meta, TensorMeta) or node.name not in shapes:
                continue
            for d, (old, new) in enumerate(zip(meta.shape, shapes[node.name])):
                if not isinstance(old, int) or old == new:
                    continue
                key = (node.name, d)
                coeff, rem = divmod(new - old, step)
                if key in found or rem or coeff <= 0:
                    found[key] = None
                else:
                    found[key] = _Symbol(root.symbol, coeff, old - coeff * root.example)
    for node in graph.nodes:
        meta = node.meta.get("val")
        if found.get((node.name, None)) is not None:
            node.meta["val"] = found[(node.name, None)]
        if not isinstance(meta, TensorMeta) or node.op == "placeholder":
            continue
        shape = list(meta.shape)
        for d in range(len(shape)):
            if (node.name, d) in found:
                sym = found[(node.name, d)]
                if sym is None:
                    sym, unknown = _Symbol(f"u{unknown}"), unknown + 1
                shape[d] = sym
        node.meta["val"] = TensorMeta(shape, meta.dtype, meta.device, meta.requires_grad)
