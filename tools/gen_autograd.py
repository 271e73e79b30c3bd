"""Generates the autograd layer from the `derivatives` of ops.yaml entries.

For an op with derivatives, the implementation is `kindle::native_<name>` and the generated
`kindle::name` records a backward node when grad mode is on and an input requires grad:

    - func: mul(Tensor self, Tensor other) -> Tensor
      derivatives:
        self: grad * other
        other: grad * self

A formula is a C++ expression (it may call any op and the helpers in csrc/autograd/formulas.h)
over: `grad` (the gradient of the output; `grads[i]` for several outputs), the op's arguments
by name, its outputs (`result`, or the names in the schema's return tuple), and `<arg>_sizes`,
`<arg>_strides`, `<arg>_offset`, `<arg>_dtype`, `<arg>_device` for tensor arguments (saved without the tensor).
Only what a formula uses is saved, and a tensor only when a formula that needs it may run.
Formulas run in argument order inside the node, where `needs_input_grad(i)` tells whether input
gradient i is wanted and `grad_inputs[i]` holds those already computed, so one pass may produce
several gradients (fused_layer_norm's input formula also fills the weight's and the bias's).
An in-place op (`name_`) without derivatives takes those of `name`; there `result` is the
modified tensor and `self` its value before the op (saved as a copy when a formula needs it).
`view: true` marks ops whose outputs share memory with `self`; `inplace_view: true` in-place ops
that only change the geometry (squeeze_, t_): the tensor simply becomes the node's output.
`node: Name` overrides the node's name (to match PyTorch's).
Complex numbers: a formula that reads no tensor value (only `grad` and geometry) is correct for
complex tensors as it stands; an op whose formulas read values is refused for complex arguments
(NotImplementedError at the call) unless its entry says `complex: true`, which declares the
formulas written for PyTorch's convention (the conjugate Wirtinger gradient: `grad * other.conj()`).
Ops without derivatives are composites: autograd flows through the ops they call.
Forward mode: the wrapper also propagates tangents (csrc/autograd/forward_ad.h) from the entry's
`forward:` key (element_wise, linear or formulas; see gen_forward below), or, without one, by
transposing the backward formulas.
"""
import re

# arg type -> (member type in the node, how a local of the original type is made from it)
STORE = {
    "int": ("int64_t", "{m}"),
    "int?": ("std::optional<int64_t>", "{m}"),
    "float": ("double", "{m}"),
    "float?": ("std::optional<double>", "{m}"),
    "bool": ("bool", "{m}"),
    "bool?": ("std::optional<bool>", "{m}"),
    "Scalar": ("Scalar", "{m}"),
    "Scalar?": ("std::optional<Scalar>", "{m}"),
    "int[]": ("DimVector", "IntArrayRef({m})"),
    "int[]?": ("std::optional<DimVector>", "{m} ? OptionalIntArrayRef(IntArrayRef(*{m})) : std::nullopt"),
    "ScalarType": ("DType", "{m}"),
    "ScalarType?": ("std::optional<DType>", "{m}"),
    "str": ("std::string", "std::string_view({m})"),
    "str?": ("std::optional<std::string>",
             "{m} ? std::optional<std::string_view>(*{m}) : std::nullopt"),
    "Tensor?[]": ("std::vector<std::optional<Tensor>>", "{m}"),
    "Device?": ("std::optional<Device>", "{m}"),
}
# how the wrapper stores an argument into the member
STORE_FROM = {
    "int[]": "DimVector({a})",
    "int[]?": "{a} ? std::optional<DimVector>(DimVector(*{a})) : std::nullopt",
    "str": "std::string({a})",
    "str?": "{a} ? std::optional<std::string>(std::string(*{a})) : std::nullopt",
}
DERIVED = {  # suffix -> (member type, expression on the tensor)
    "sizes": ("DimVector", "DimVector({t}.sizes())"),
    "strides": ("DimVector", "DimVector({t}.strides())"),
    "offset": ("int64_t", "{t}.storage_offset()"),
    "dtype": ("DType", "{t}.dtype()"),
    "device": ("Device", "{t}.device()"),
}


INDEX_ARGS = {"index", "indices", "mask", "condition"}


def uses(text, name):
    return re.search(r"(?<![\w.])" + re.escape(name) + r"\b(?!\s*\()", text) is not None


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


class AutogradOp:
    def __init__(self, op, derivatives, view, inherited, node_name=None, inplace_view=False, complex_ok=False,
                 forward=None):
        self.op = op
        self.forward = forward
        self.view = view
        self.inplace_view = inplace_view
        self.inplace = op.returns_self and op.name.endswith("_")
        # An in-place overload needs its own number: its name matches the out-of-place overload's.
        suffix = "Backward" + str(int(self.inplace) + int(bool(op.overload)))
        # the node's C++ type (unique per op) and the name grad_fn shows (PyTorch's where `node:` says)
        self.node = camel(op.name) + (camel(op.overload) if op.overload else "") + suffix
        self.display = node_name or self.node
        self.formulas = []  # (arg, formula) in argument order
        for a in op.args:
            if a.name in derivatives:
                self.formulas.append((a, derivatives[a.name].strip()))
        # (index, mask and condition tensors are integers or bools: they carry no complex value)
        value_names = [a.name for a in op.args if a.type.startswith("Tensor") and a.name not in INDEX_ARGS] + list(
            op.ret_names or ["result"])
        self.complex_ok = complex_ok or not any(uses(f, n) for _, f in self.formulas for n in value_names)
        unknown = set(derivatives) - {a.name for a in op.args}
        if unknown:
            raise SystemExit(f"gen_autograd: {op.name}: derivatives for unknown arguments {sorted(unknown)}")
        if op.ret_names:
            self.out_names = op.ret_names
            self.out_types = op.ret_types
        else:
            self.out_names = ["result"]
            self.out_types = [op.ret.replace("(a!)", "")]

    # which formulas (by slot index) use a name
    def users(self, name):
        return [i for i, (_, f) in enumerate(self.formulas) if uses(f, name)]


def slot_expr(aop, i):
    """C++ expression: is formula i's input gradient needed (in the node)."""
    a, _ = aop.formulas[i]
    if a.type == "Tensor[]":
        return f"any_needed({slot_base(aop, i)}, {a.name}_n)"
    return f"needs_input_grad({slot_base(aop, i)})"


def slot_base(aop, i):
    parts = ["0"]
    for a, _ in aop.formulas[:i]:
        parts.append(f"{a.name}_n" if a.type == "Tensor[]" else "1")
    s = " + ".join(p for p in parts if p != "0")
    return s or "0"


def gen_node(aop):
    op = aop.op
    members, apply_locals, saves_before, saves_after = [], [], [], []
    saved_names = []  # (name, is a list) of the SavedVariable members
    releases = []
    all_text = " ".join(f for _, f in aop.formulas)
    # list sizes
    for a, _ in aop.formulas:
        if a.type == "Tensor[]":
            members.append(f"size_t {a.name}_n = 0;")
            saves_before.append(f"node->{a.name}_n = {a.name}.size();")
    for a in op.args:
        is_tensor = a.type in ("Tensor", "Tensor?", "Tensor[]")
        if is_tensor:
            for suf, (mt, expr) in DERIVED.items():
                nm = f"{a.name}_{suf}"
                if not uses(all_text, nm):
                    continue
                if a.type == "Tensor[]":
                    members.append(f"std::vector<{mt}> {nm};")
                    saves_before.append(f"for (const Tensor& t_ : {a.name}) node->{nm}.push_back({expr.format(t='t_')});")
                elif a.type == "Tensor?":
                    members.append(f"{mt} {nm}{{}};")
                    saves_before.append(f"if ({a.name}) node->{nm} = {expr.format(t='(*' + a.name + ')')};")
                else:
                    members.append(f"{mt} {nm};")
                    saves_before.append(f"node->{nm} = {expr.format(t=a.name)};")
            user_slots = aop.users(a.name)
            if not user_slots:
                continue
            cond = " || ".join(slot_expr(aop, i).replace("needs_input_grad", "node->needs_input_grad")
                               .replace("any_needed", "node->any_needed") for i in user_slots)
            saved_names.append((a.name, a.type == "Tensor[]"))
            if a.type == "Tensor[]":
                members.append(f"std::vector<SavedVariable> {a.name}_;")
                saves_before.append(f"if ({cond}) for (const Tensor& t_ : {a.name}) node->{a.name}_.emplace_back(t_, false);")
                releases.append(f"{a.name}_.clear();")
            else:
                members.append(f"SavedVariable {a.name}_;")
                val = a.name if a.type == "Tensor" else f"{a.name}.value_or(Tensor())"
                if aop.inplace and a.name == op.args[0].name:
                    # the value before the in-place op (a differentiable copy, for double backward)
                    saves_before.append(f"if ({cond}) node->{a.name}_ = SavedVariable({val}.clone(), false);")
                else:
                    saves_before.append(f"if ({cond}) node->{a.name}_ = SavedVariable({val}, false);")
                releases.append(f"{a.name}_.reset();")
        else:
            if not uses(all_text, a.name):
                continue
            mt, local = STORE[a.type]
            members.append(f"{mt} {a.name}_;")
            frm = STORE_FROM.get(a.type, "{a}").format(a=a.name)
            saves_before.append(f"node->{a.name}_ = {frm};")
            ltype = "auto"
            apply_locals.append(f"{ltype} {a.name} = {local.format(m=a.name + '_')};")
    for i, (nm, ty) in enumerate(zip(aop.out_names, aop.out_types)):
        if not uses(all_text, nm):
            continue
        saved_names.append((nm, ty == "Tensor[]"))
        if ty == "Tensor[]":
            members.append(f"std::vector<SavedVariable> {nm}_;")
            saves_after.append(f"for (const Tensor& t_ : {'result' if not op.ret_names else nm}) node->{nm}_.emplace_back(t_, true);")
            releases.append(f"{nm}_.clear();")
        else:
            members.append(f"SavedVariable {nm}_;")
            src = "self" if aop.inplace else ("result" if not op.ret_names else f"std::get<{i}>(result)")
            saves_after.append(f"node->{nm}_ = SavedVariable({src}, true);")
            releases.append(f"{nm}_.reset();")

    # apply
    body = []
    multi = len(aop.out_names) > 1 or aop.out_types[0] == "Tensor[]"
    body.append("tensor_list grad_inputs(next_edges.size());")
    if multi:
        body.append("bool any_grad_ = false;")
        body.append("for (auto& g_ : grads) any_grad_ = any_grad_ || g_.defined();")
        body.append("if (!any_grad_) return grad_inputs;")
    else:
        body.append("const Tensor& grad = grads[0];")
        body.append("if (!grad.defined()) return grad_inputs;")
    body.extend(apply_locals)
    for i, (a, f) in enumerate(aop.formulas):
        unpack = []
        for b in op.args:
            if b.type == "Tensor" and uses(f, b.name):
                unpack.append(f"Tensor {b.name} = {b.name}_.unpack(this);")
            elif b.type == "Tensor?" and uses(f, b.name):
                unpack.append(f"std::optional<Tensor> {b.name}; if ({b.name}_.defined()) {b.name} = {b.name}_.unpack(this);")
            elif b.type == "Tensor[]" and uses(f, b.name):
                unpack.append(f"tensor_list {b.name}; for (auto& s_ : {b.name}_) {b.name}.push_back(s_.unpack(this));")
        for nm, ty in zip(aop.out_names, aop.out_types):
            if uses(f, nm):
                if ty == "Tensor[]":
                    unpack.append(f"tensor_list {nm}; for (auto& s_ : {nm}_) {nm}.push_back(s_.unpack(this));")
                else:
                    unpack.append(f"Tensor {nm} = {nm}_.unpack(this);")
        base = slot_base(aop, i)
        if a.type == "Tensor[]":
            assign = (f"tensor_list r_ = {f}; for (size_t k_ = 0; k_ < r_.size() && k_ < {a.name}_n; ++k_) "
                      f"grad_inputs[{base} + k_] = std::move(r_[k_]);")
        else:
            assign = f"grad_inputs[{base}] = {f};"
        body.append(f"if ({slot_expr(aop, i)}) {{ {' '.join(unpack)} {assign} }}")
    body.append("return grad_inputs;")
    rel = ""
    if releases:
        rel = "  void release_variables() override { " + " ".join(releases) + " }\n"
    # saved outputs hear of their tangents (forward mode over the backward formulas)
    tangent_cases = []
    for i, (nm, ty) in enumerate(zip(aop.out_names, aop.out_types)):
        if not uses(all_text, nm):
            continue
        if ty == "Tensor[]":
            tangent_cases.append(f"if (nr < {nm}_.size()) {nm}_[nr].set_tangent(t);")
        else:
            tangent_cases.append(f"if (nr == {i}) {nm}_.set_tangent(t);")
    if tangent_cases:
        rel += ("  void on_output_tangent(uint32_t nr, const Tensor& t) override { "
                + " ".join(tangent_cases) + " }\n")
    # grad_fn._saved_<name> / _raw_saved_<name> (torch's names: the inputs', and "result")
    if saved_names:
        cases = " ".join(f"if (n_ == \"{nm}\") return SavedVariableRef::of({nm}_);" for nm, _ in saved_names)
        rel += f"  SavedVariableRef saved_variable(std::string_view n_) override {{ {cases} return {{}}; }}\n"
    cls = (f"struct {aop.node} final : Node {{\n"
           f"  std::string name() const override {{ return \"{aop.display}\"; }}\n"
           f"  tensor_list apply(tensor_list&& grads) override {{\n    " + "\n    ".join(body) + "\n  }\n"
           f"{rel}"
           f"  bool any_needed(size_t b, size_t n) const {{ for (size_t i = 0; i < n; ++i) if (needs_input_grad(b + i)) return true; return false; }}\n"
           + "".join(f"  {m}\n" for m in members) + "};\n")
    return cls, saves_before, saves_after


def gen_wrapper(aop, saves_before, saves_after, fw_dispatch):
    op = aop.op
    params = op.params(op.args, False)
    call_args = ", ".join(a.name for a in op.args)
    diff_args = [a for a, _ in aop.formulas]
    rg = ", ".join(a.name for a in diff_args)
    edges = []
    for a in diff_args:
        edges.append(f"add_edges(node->next_edges, {a.name});" if a.type == "Tensor[]"
                     else f"add_edge(node->next_edges, {a.name});")
    self_name = op.args[0].name if op.args else None
    out_multi = bool(op.ret_names)
    outs_list = (["result"] if not out_multi and aop.out_types[0] != "Tensor[]" else None)
    view_mark = nograd_mark = ""
    if aop.view:
        if aop.out_types[0] == "Tensor[]":
            view_mark = f"for (const Tensor& t_ : result) set_view_of(t_, {self_name});"
            nograd_mark = f"for (const Tensor& t_ : result) mark_no_grad_view(t_, {self_name});"
        else:
            view_mark = f"set_view_of(result, {self_name});"
            nograd_mark = f"mark_no_grad_view(result, {self_name});"
    lines = [fw_dispatch]
    if getattr(op, "autocast", None) and not aop.inplace:
        # in an autocast region, also when a composite calls the op from C++ (einsum's matrix
        # products): the arguments cast by the op's policy, then this wrapper again, excluded
        policy = {"lower": "Lower", "fp32": "Fp32", "promote": "Promote"}[op.autocast]
        lines.insert(0, f"if (autocast::active()) return autocast::call(autocast::Policy::{policy}, "
                        f"[&](const auto&... a_) -> {op.cpp_ret} {{ return kindle::{op.name}(a_...); }}, {call_args});")
    complex_check = []
    if not aop.complex_ok:
        targs = ", ".join(f"&{a.name}" for a in op.args if a.type == "Tensor")
        if targs:
            complex_check.append(f'check_complex_grad("{op.name}", {{{targs}}});')
    list_sizes = [f"const size_t {a.name}_n = {a.name}.size(); (void){a.name}_n;" for a in diff_args if a.type == "Tensor[]"]
    if aop.inplace:
        lines.append(f"if (!GradMode::is_enabled() || !any_requires_grad({rg})) {{ "
                     f"check_inplace({self_name}, \"{op.name}\"); "
                     f"NoGradGuard g_; native_{op.name}({call_args}); return {self_name}; }}")
        lines.append(f"check_inplace({self_name}, \"{op.name}\");")
        lines.extend(complex_check)
        lines.append(f"auto node = std::make_shared<{aop.node}>();")
        lines.append(f"node->next_edges.reserve({len(diff_args)});")
        lines.extend(edges)
        lines.extend(list_sizes)
        lines.extend(saves_before)
        lines.append(f"{{ NoGradGuard g_; native_{op.name}({call_args}); }}")
        lines.append(f"{'set_output' if aop.inplace_view else 'rebase_history'}({self_name}, node);")
        lines.extend(saves_after)
        lines.append(f"return {self_name};")
    else:
        # Fast path: nothing to record. Grad mode is switched off inside the kernel so that views
        # the implementation makes internally are not tracked.
        lines.append(f"if (!GradMode::is_enabled() || !any_requires_grad({rg})) {{ "
                     + (f"bool track_ = GradMode::is_enabled(); {op.cpp_ret} result; "
                        f"{{ NoGradGuard g_; result = native_{op.name}({call_args}); }} "
                        f"if (track_) {{ {view_mark} }} else if (needs_grad({self_name})) {{ {nograd_mark} }} "
                        f"return result; }}" if aop.view
                        else f"NoGradGuard g_; return native_{op.name}({call_args}); }}"))
        lines.extend(complex_check)
        lines.append(f"auto node = std::make_shared<{aop.node}>();")
        lines.append(f"node->next_edges.reserve({len(diff_args)});")
        lines.extend(edges)
        lines.extend(list_sizes)
        lines.extend(saves_before)
        lines.append(f"{op.cpp_ret} result;")
        lines.append(f"{{ NoGradGuard g_; result = native_{op.name}({call_args}); }}")
        if aop.view:
            lines.append(view_mark)
        tensor_inputs = [a.name for a in op.args if a.type == "Tensor"]
        alias = " || ".join(f"t_.is_same({n})" for n in tensor_inputs) or "false"
        if aop.out_types[0] == "Tensor[]":
            lines.append("for (const Tensor& t_ : result) set_output(t_, node);")
        elif out_multi:
            for i in range(len(aop.out_names)):
                lines.append(f"set_output(std::get<{i}>(result), node);")
        else:
            # An op that returned one of its inputs unchanged records nothing (the input keeps its history).
            lines.append(f"{{ const Tensor& t_ = result; if ({alias}) return result; }}")
            lines.append("set_output(result, node);")
        lines.extend(saves_after)
        lines.append("return result;")
    return f"{op.cpp_ret} {op.name}({params}) {{\n  " + "\n  ".join(lines) + "\n}\n"



# ---- forward mode (csrc/autograd/forward_ad.h) ----
# `forward:` in an entry gives the tangents of the op's outputs:
#   element_wise  the Jacobian is diagonal (an element-wise op, broadcasting allowed): the tangent
#                 is the sum over inputs of the backward formula applied to the input's tangent
#                 (conjugated for complex numbers: see forward_ad::element_wise);
#   linear        the op is linear in its differentiable inputs: the tangent is the op applied to
#                 their tangents (zeros where an input has none);
#   an expression (or one per output name) over the arguments, the outputs and `<arg>_t`, the
#                 arguments' tangents (zeros where an input has none), or `<arg>_t_in` (undefined
#                 where an input has none: forward_ad::term and sum_terms skip those).
# Without one, the tangent comes from the backward formula by transposition (transposed_jvp):
# correct for every op, at about three times the op's cost.

def fw_params(aop):
    op = aop.op
    ps = [op.params(op.args, False)]
    for nm, ty in zip(aop.out_names, aop.out_types):
        ps.append(f"const tensor_list& {nm}" if ty == "Tensor[]" else f"const Tensor& {nm}")
    for a, _ in aop.formulas:
        ps.append(f"const tensor_list& {a.name}_t_in" if a.type == "Tensor[]" else f"const Tensor& {a.name}_t_in")
    return ", ".join(p for p in ps if p)


def derived_locals(aop, text):
    out = []
    for a in aop.op.args:
        if a.type != "Tensor":
            continue
        for suf, (mt, expr) in DERIVED.items():
            nm = f"{a.name}_{suf}"
            if uses(text, nm):
                out.append(f"{mt} {nm} = {expr.format(t=a.name)}; (void){nm};")
    return out


def materialized_tangents(aop, text=None):
    out = []
    for a, _ in aop.formulas:
        if text is not None and not uses(text, f"{a.name}_t"):
            continue
        if a.type == "Tensor[]":
            out.append(f"tensor_list {a.name}_t = forward_ad::tangents_or_zeros({a.name}, {a.name}_t_in); (void){a.name}_t;")
        elif a.type == "Tensor?":
            out.append(f"Tensor {a.name}_t = {a.name} ? forward_ad::tangent_or_zeros(*{a.name}, {a.name}_t_in) : Tensor(); "
                       f"(void){a.name}_t;")
        else:
            out.append(f"Tensor {a.name}_t = forward_ad::tangent_or_zeros({a.name}, {a.name}_t_in); (void){a.name}_t;")
    return out


def outputs_of(aop, var):
    """C++ expression: the op's outputs in `var` (its return value) as a tensor_list."""
    if aop.out_types[0] == "Tensor[]":
        return var
    if aop.op.ret_names:
        return "tensor_list{" + ", ".join(f"std::get<{i}>({var})" for i in range(len(aop.out_names))) + "}"
    return "tensor_list{" + var + "}"


def gen_tangents_fn(aop):
    """The function computing the output tangents from a `forward:` entry (None without one)."""
    op, fwd = aop.op, aop.forward
    if fwd is None:
        return None
    body = []
    multi_out = len(aop.out_names) > 1
    if fwd == "element_wise":
        if multi_out or aop.out_types[0] == "Tensor[]":
            raise SystemExit(f"gen_autograd: {op.name}: element_wise forward needs a single output")
        text = " ".join(f for _, f in aop.formulas)
        body.extend(derived_locals(aop, text))
        body.append("Tensor t_;")
        for a, f in aop.formulas:
            if a.type == "Tensor[]":
                raise SystemExit(f"gen_autograd: {op.name}: element_wise forward over a tensor list")
            body.append(f"t_ = forward_ad::add_terms(t_, forward_ad::element_wise({a.name}_t_in, "
                        f"[&](const Tensor& grad) -> Tensor {{ return {f}; }}));")
        body.append("return {t_};")
    elif fwd == "linear":
        body.extend(materialized_tangents(aop))
        diff = {a.name for a, _ in aop.formulas}
        args = []
        for a in op.args:
            if a.name in diff and a.type == "Tensor?":
                raise SystemExit(f"gen_autograd: {op.name}: linear forward over an optional tensor")
            args.append(f"{a.name}_t" if a.name in diff else a.name)
        body.append(f"auto r_ = kindle::{op.name}({', '.join(args)});")
        body.append(f"return {outputs_of(aop, 'r_')};")
    else:
        exprs = fwd if isinstance(fwd, dict) else {aop.out_names[0]: fwd}
        unknown = set(exprs) - set(aop.out_names)
        if unknown:
            raise SystemExit(f"gen_autograd: {op.name}: forward formulas for unknown outputs {sorted(unknown)}")
        body.extend(materialized_tangents(aop, " ".join(exprs.values())))
        body.extend(derived_locals(aop, " ".join(exprs.values())))
        vals = []
        for nm in aop.out_names:
            if nm in exprs:
                body.append(f"Tensor {nm}_tan_ = {exprs[nm].strip()};")
                vals.append(f"{nm}_tan_")
            else:
                vals.append("Tensor()")
        body.append("return {" + ", ".join(vals) + "};")
    return (f"static tensor_list {aop.node}_tangents({fw_params(aop)}) {{\n  "
            + "\n  ".join(body) + "\n}\n")


def gen_forward(aop):
    """(code of the forward-mode path, the line dispatching to it from the wrapper)."""
    op = aop.op
    params = op.params(op.args, False)
    call_args = ", ".join(a.name for a in op.args)
    diff = [a for a, _ in aop.formulas]
    fn = f"fw_{aop.node}"
    dispatch = (f"if (forward_ad::active() && forward_ad::any_tangent({', '.join(a.name for a in diff)})) "
                f"return {fn}({call_args});")
    tangents_fn = None if aop.inplace_view else gen_tangents_fn(aop)
    lines = ["forward_ad::Suspend s_;"]
    # the inputs' tangents, and all of them flattened (for the aliasing check)
    flat = []
    for a in diff:
        if a.type == "Tensor[]":
            lines.append(f"tensor_list {a.name}_t_ = forward_ad::tangents({a.name});")
            flat.append(f"for (auto& x_ : {a.name}_t_) in_t_.push_back(x_);")
        else:
            lines.append(f"Tensor {a.name}_t_ = forward_ad::tangent({a.name});")
            flat.append(f"in_t_.push_back({a.name}_t_);")
    lines.append("tensor_list in_t_;")
    lines.extend(flat)
    real_only = not aop.complex_ok and aop.forward != "linear"
    if real_only:
        lines.append(f'forward_ad::check_real("{op.name}", in_t_);')
        targs = ", ".join(f"&{a.name}" for a in op.args if a.type == "Tensor")
        if targs:
            lines.append(f'check_complex_grad("{op.name}", {{{targs}}});')
    if aop.forward is None:
        uses_self = True
    elif aop.forward == "element_wise":
        uses_self = any(uses(f, op.args[0].name) for _, f in aop.formulas)
    elif aop.forward == "linear":
        uses_self = False
    else:
        fx = aop.forward if isinstance(aop.forward, dict) else {"r": aop.forward}
        uses_self = any(uses(f, op.args[0].name) for f in fx.values())
    self_name = op.args[0].name if op.args else None
    if aop.inplace:
        if aop.inplace_view:
            rest = ", ".join([f"{self_name}_t_"] + [a.name for a in op.args[1:]])
            lines.append(f"kindle::{op.name}({call_args});")
            lines.append(f"if ({self_name}_t_.defined()) kindle::{op.name}({rest});")
            lines.append(f"return {self_name};")
        else:
            lines.append("Tensor old_;")
            if uses_self:
                lines.append(f"old_ = {self_name}.clone();")
            lines.append(f"kindle::{op.name}({call_args});")
            lines.append(f"const Tensor& before_ = old_.defined() ? old_ : {self_name};")
            subst = {self_name: "before_"}
            lines.append(tangent_call(aop, tangents_fn, subst, self_name))
            lines.append(f"forward_ad::update_inplace_tangent({self_name}, t_[0]);")
            lines.append(f"return {self_name};")
        ret = op.cpp_ret
    else:
        lines.insert(0, f"{op.cpp_ret} result; {{ forward_ad::Suspend s0_; result = kindle::{op.name}({call_args}); }}")
        if not op.ret_names and aop.out_types[0] != "Tensor[]":
            tensor_inputs = [a.name for a in op.args if a.type == "Tensor"]
            alias = " || ".join(f"result.is_same({n})" for n in tensor_inputs)
            if alias:
                lines.insert(1, f"if ({alias}) return result;")
        lines.append(tangent_call(aop, tangents_fn, {}, "result"))
        lines.append(f"tensor_list outs_ = {outputs_of(aop, 'result')};")
        lines.append(f"for (size_t i_ = 0; i_ < outs_.size() && i_ < t_.size(); ++i_) "
                     f"forward_ad::set_output_tangent(outs_[i_], t_[i_], in_t_, {'true' if aop.view else 'false'});")
        lines.append("return result;")
        ret = op.cpp_ret
    code = (tangents_fn or "") + f"static {ret} {fn}({params}) {{\n  " + "\n  ".join(lines) + "\n}\n"
    return code, dispatch


def tangent_call(aop, tangents_fn, subst, result_var):
    """`tensor_list t_ = ...;`: the output tangents, from the tangents function or by transposition.
    subst renames arguments (an in-place op's self before the op); result_var holds the output(s)."""
    op = aop.op
    diff = [a for a, _ in aop.formulas]
    args = [subst.get(a.name, a.name) for a in op.args]
    if tangents_fn is not None:
        if aop.inplace:
            outs = [result_var]
        elif aop.out_types[0] == "Tensor[]":
            outs = [result_var]
        elif op.ret_names:
            outs = [f"std::get<{i}>({result_var})" for i in range(len(aop.out_names))]
        else:
            outs = [result_var]
        tans = [f"{a.name}_t_" for a in diff]
        return f"tensor_list t_ = {aop.node}_tangents({', '.join(args + outs + tans)});"
    # transposition: the differentiable inputs in a flat list, and a function re-running the op
    build, rebuild = ["tensor_list ins_, tins_;"], ["size_t k_ = 0;"]
    call = []
    for a in op.args:
        src = subst.get(a.name, a.name)
        if a not in diff:
            call.append(src)
            continue
        if a.type == "Tensor[]":
            build.append(f"for (size_t j_ = 0; j_ < {src}.size(); ++j_) {{ ins_.push_back({src}[j_]); tins_.push_back({a.name}_t_[j_]); }}")
            rebuild.append(f"tensor_list {a.name}_x_(in_.begin() + k_, in_.begin() + k_ + {src}.size()); k_ += {src}.size();")
        elif a.type == "Tensor?":
            build.append(f"ins_.push_back({src} ? *{src} : Tensor()); tins_.push_back({a.name}_t_);")
            rebuild.append(f"std::optional<Tensor> {a.name}_x_; if (in_[k_].defined()) {a.name}_x_ = in_[k_]; ++k_;")
        else:
            build.append(f"ins_.push_back({src}); tins_.push_back({a.name}_t_);")
            rebuild.append(f"Tensor {a.name}_x_ = in_[k_++];")
        call.append(f"{a.name}_x_")
    if aop.inplace:
        self_name = op.args[0].name
        rebuild.append(f"{self_name}_x_ = {self_name}_x_.clone();")
        run = f"kindle::{op.name}({', '.join(call)}); return tensor_list{{{self_name}_x_}};"
    else:
        run = f"auto r_ = kindle::{op.name}({', '.join(call)}); return {outputs_of(aop, 'r_')};"
    lam = "[&](const tensor_list& in_) -> tensor_list { " + " ".join(rebuild) + " " + run + " }"
    return (" ".join(build) + f" tensor_list t_ = forward_ad::transposed_jvp(\"{op.name}\", ins_, tins_, {lam});")


def build(ops, entries):
    """Returns (native declarations, autograd source) for the ops with derivatives."""
    by_name = {}
    for op, e in zip(ops, entries):
        by_name[(op.name, op.overload)] = (op, e)
    aops = []
    for op, e in zip(ops, entries):
        der = e.get("derivatives")
        inherited = False
        if der is None and op.returns_self and op.name.endswith("_"):
            base = by_name.get((op.name[:-1], op.overload))
            if base and base[1].get("derivatives") is not None:
                der = base[1]["derivatives"]
                inherited = True
        if der is None:
            continue
        complex_ok = bool(e.get("complex") or (inherited and base[1].get("complex")))
        fwd = e.get("forward", base[1].get("forward") if inherited else None)
        aops.append(AutogradOp(op, der, bool(e.get("view")), inherited, None if inherited else e.get("node"),
                               bool(e.get("inplace_view")), complex_ok, fwd))
    decls, nodes, wrappers = [], [], []
    for aop in aops:
        op = aop.op
        decls.append(f"{op.cpp_ret} native_{op.name}({op.params(op.args, False)});")
        cls, before, after = gen_node(aop)
        nodes.append(cls)
        fw_code, fw_dispatch = gen_forward(aop)
        wrappers.append(fw_code + gen_wrapper(aop, before, after, fw_dispatch))
    return aops, decls, nodes, wrappers


NATIVE_H = """// Generated by tools/gen_autograd.py from csrc/ops/ops.yaml. Do not edit.
// The implementations of the ops that have derivatives; kindle::<op> wraps them with autograd.
#pragma once
#include "kindle/ops.h"

namespace kindle {{

{decls}

}}  // namespace kindle
"""

AUTOGRAD_CPP = """// Generated by tools/gen_autograd.py from csrc/ops/ops.yaml. Do not edit.
#include "autograd/formulas.h"
#include "autograd/forward_ad.h"
#include "kindle/autocast.h"
#include "native_ops.h"

namespace kindle {{
using namespace autograd;

namespace {{
{nodes}
}}  // namespace

{wrappers}
}}  // namespace kindle
"""
