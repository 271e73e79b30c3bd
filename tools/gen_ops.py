#!/usr/bin/env python3
"""Generates the C++ declarations, Tensor methods and Python bindings of every op in ops.yaml.

An entry is a schema in PyTorch's notation plus the variants it has (function: kindle.name;
method: Tensor.name; nn: kindle._C._nn.name, which kindle.nn.functional wraps):

    - func: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      variants: function, method

Outputs (into the build folder, never into git):
  kindle/ops.h            free functions `kindle::add(...)` and inline Tensor method bodies
  kindle/tensor_methods.inc  method declarations, included inside class Tensor
  bind_ops.cpp            nanobind bindings for kindle._C (functions and Tensor methods)
  native_ops.h, autograd_ops.cpp  the autograd layer (tools/gen_autograd.py)
  elementwise_codes.h, elementwise_ops.cpp  the elementwise op codes, dtype rules and plain ops
                          (tools/gen_kernels.py)
"""
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_autograd  # noqa: E402
import gen_kernels  # noqa: E402

# schema type -> (C++ parameter type, binding parameter type, how the binding passes it on)
TYPES = {
    "Tensor": ("const Tensor&", "const Tensor&", "{}"),
    "Tensor?": ("const std::optional<Tensor>&", "const std::optional<Tensor>&", "{}"),
    "Tensor[]": ("TensorList", "const ListArg<std::vector<Tensor>>&", "{}.items"),
    "Tensor?[]": ("const std::vector<std::optional<Tensor>>&", "const ListArg<std::vector<std::optional<Tensor>>>&",
                  "{}.items"),
    "Scalar": ("const Scalar&", "const Scalar&", "{}"),
    "Scalar?": ("const std::optional<Scalar>&", "const std::optional<Scalar>&", "{}"),
    "int": ("int64_t", "int64_t", "{}"),
    "int?": ("std::optional<int64_t>", "std::optional<int64_t>", "{}"),
    "int[]": ("IntArrayRef", "const DimList&", "{}.dims"),
    "int[]?": ("OptionalIntArrayRef", "const std::optional<DimList>&", "opt_dims({})"),
    "float": ("double", "double", "{}"),
    "float?": ("std::optional<double>", "std::optional<double>", "{}"),
    "bool": ("bool", "bool", "{}"),
    "bool?": ("std::optional<bool>", "std::optional<bool>", "{}"),
    "ScalarType": ("DType", "DType", "{}"),
    "ScalarType?": ("std::optional<DType>", "std::optional<DType>", "{}"),
    "Device?": ("std::optional<Device>", "std::optional<Device>", "{}"),
    "str": ("std::string_view", "const std::string&", "{}"),
    "str?": ("std::optional<std::string_view>", "const std::optional<std::string>&", "opt_sv({})"),
    "Generator?": ("const std::optional<Generator>&", "const std::optional<Generator>&", "{}"),
}
RETURNS = {
    "Tensor": "Tensor",
    "Tensor(a!)": "const Tensor&",
    "Tensor[]": "std::vector<Tensor>",
    "Scalar": "Scalar",
    "bool": "bool",
    "int": "int64_t",
    "float": "double",
}


class Arg:
    def __init__(self, text, kw_only):
        text = text.strip()
        m = re.fullmatch(r"(\S+)\s+(\w+)(?:=(.*))?", text)
        if not m:
            sys.exit(f"gen_ops: cannot parse argument '{text}'")
        self.type, self.name, self.default = m.group(1), m.group(2), m.group(3)
        self.inplace = self.type.endswith("(a!)")
        self.type = self.type.replace("(a!)", "")
        self.type = re.sub(r"\[\d+\]", "[]", self.type)  # int[1] -> int[]
        self.kw_only = kw_only
        if self.type not in TYPES:
            sys.exit(f"gen_ops: unknown type '{self.type}' in '{text}'")

    def cpp_type(self):
        return TYPES[self.type][0]

    def cpp_default(self):
        d = self.default
        if d is None:
            return None
        if d == "None":
            return "std::nullopt"
        if d in ("True", "False"):
            return d.lower()
        if d == "[]":
            return "{}"
        if d.startswith("["):
            return "{" + d[1:-1] + "}"
        if d.startswith("'") or d.startswith('"'):
            return '"' + d[1:-1] + '"'
        return d

    def py_default(self):
        d = self.default
        if d is None:
            return None
        if d == "None":
            return "nb::none()"
        if self.type == "int[]":
            return "DimList()" if d == "[]" else "DimList{" + d[1:-1] + "}"
        if self.type in ("str",):
            return "std::string(" + self.cpp_default() + ")"
        if self.type.startswith("Scalar"):
            return "Scalar(" + self.cpp_default() + ")"
        if self.type.startswith("float"):
            return "double(" + self.cpp_default() + ")"
        if self.type.startswith("int"):
            return "int64_t(" + self.cpp_default() + ")"
        return self.cpp_default()


def split_args(argstr):
    """Splits on the commas that are not inside [] (list defaults such as int[2] stride=[1, 1])."""
    parts, depth, cur = [], 0, ""
    for ch in argstr:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


class Op:
    def __init__(self, entry):
        func = entry["func"]
        m = re.fullmatch(r"(\w+)(?:\.(\w+))?\((.*)\)\s*->\s*(.+)", func.strip())
        if not m:
            sys.exit(f"gen_ops: cannot parse '{func}'")
        self.name, self.overload, argstr, self.ret = m.groups()
        self.ret = self.ret.strip()
        self.args = []
        kw = False
        for part in [p for p in split_args(argstr) if p.strip()]:
            if part.strip() == "*":
                kw = True
                continue
            self.args.append(Arg(part, kw))
        variants = entry.get("variants", "function")
        self.variants = {v.strip() for v in variants.split(",")}
        self.python = entry.get("python", True)
        self.varargs = entry.get("varargs")
        # The Tensor arguments a Python number converts to (a 0-d tensor); None: all of them.
        # PyTorch converts numbers only where it has a Scalar overload or for arithmetic.
        self.numbers = entry.get("numbers")
        self.aten = entry.get("aten", self.name)  # the name profiles show
        self.autocast = entry.get("autocast")  # CPU autocast policy: lower, fp32 or promote
        if self.autocast not in (None, "lower", "fp32", "promote"):
            sys.exit(f"gen_ops: {self.name}: autocast must be lower, fp32 or promote, got {self.autocast}")
        self.ret_names = None
        if self.ret.startswith("("):
            parts = [p.strip().split() for p in self.ret[1:-1].split(",")]
            self.ret_types = [p[0] for p in parts]
            self.ret_names = [p[1] if len(p) > 1 else f"r{i}" for i, p in enumerate(parts)]
            self.cpp_ret = "std::tuple<" + ", ".join(RETURNS[t] for t in self.ret_types) + ">"
        else:
            if self.ret not in RETURNS:
                sys.exit(f"gen_ops: unknown return '{self.ret}' in '{func}'")
            self.cpp_ret = RETURNS[self.ret]
        self.returns_self = self.ret == "Tensor(a!)"
        # vmap's batching rule family (kindle/func/_batching.py): an element-wise op broadcasts
        # its tensors; `vmap:` names another family where the schema alone does not say it.
        self.vmap = entry.get("vmap", "pointwise" if entry.get("forward") == "element_wise" else None)

    def params(self, args, with_defaults):
        out = []
        # C++ allows defaults only on a trailing run of parameters.
        can_default = [False] * len(args)
        ok = True
        for i in range(len(args) - 1, -1, -1):
            ok = ok and args[i].default is not None
            can_default[i] = ok
        for a, cd in zip(args, can_default):
            s = f"{a.cpp_type()} {a.name}"
            if with_defaults and cd:
                s += f" = {a.cpp_default()}"
            out.append(s)
        return ", ".join(out)


def gen(ops, entries, outdir):
    decls, method_decls, method_defs, binds = [], [], [], []
    into = gen_kernels.into_ops(ops, entries)
    # C++ only: a binary op whose second operand is a tensor also takes a number there (x.pow(2),
    # x.add_(1)), as libtorch has it, unless ops.yaml declares such an overload itself.
    number_second = {op.name for op in ops if len(op.args) > 1 and op.args[1].type.startswith("Scalar")}

    def scalar_overload(op):
        return (len(op.args) > 1 and op.args[0].type == "Tensor" and op.args[1].type == "Tensor"
                and op.args[1].name in ("other", "exponent") and op.name not in number_second)
    for op in ops:
        decls.append(f"{op.cpp_ret} {op.name}({op.params(op.args, True)});")
        if scalar_overload(op):
            rest = op.args[2:]
            sig = ", ".join([f"const Tensor& {op.args[0].name}", f"const Scalar& {op.args[1].name}"]
                            + ([op.params(rest, True)] if rest else []))
            call = ", ".join([op.args[0].name, f"scalar_to_tensor({op.args[1].name})"] + [a.name for a in rest])
            method_defs.append(f"inline {op.cpp_ret} {op.name}({sig}) {{ return {op.name}({call}); }}")
        if "method" in op.variants:
            rest = op.args[1:]
            method_decls.append(f"{op.cpp_ret} {op.name}({op.params(rest, True)}) const;")
            call = ", ".join(["*this"] + [a.name for a in rest])
            method_defs.append(
                f"inline {op.cpp_ret} Tensor::{op.name}({op.params(rest, False)}) const "
                f"{{ return kindle::{op.name}({call}); }}")
            if scalar_overload(op):
                tail = op.args[2:]
                sig = ", ".join([f"const Scalar& {op.args[1].name}"] + ([op.params(tail, True)] if tail else []))
                method_decls.append(f"{op.cpp_ret} {op.name}({sig}) const;")
                sig = ", ".join([f"const Scalar& {op.args[1].name}"] + ([op.params(tail, False)] if tail else []))
                call = ", ".join(["*this", f"scalar_to_tensor({op.args[1].name})"] + [a.name for a in tail])
                method_defs.append(f"inline {op.cpp_ret} Tensor::{op.name}({sig}) const "
                                   f"{{ return kindle::{op.name}({call}); }}")
        if not op.python:
            continue
        for variant in ("function", "method", "nn"):
            if variant not in op.variants:
                continue
            tensor_list_varargs = op.varargs and any(a.name == op.varargs and a.type == "Tensor[]" for a in op.args)
            if not tensor_list_varargs:
                binds.append(gen_binding(op, variant, into=op.name in into))
            if op.varargs:
                binds.append(gen_binding(op, variant, varargs=op.varargs))
    os.makedirs(os.path.join(outdir, "kindle"), exist_ok=True)
    write(os.path.join(outdir, "kindle", "ops.h"), OPS_H.format(
        decls="\n".join(decls), method_defs="\n".join(method_defs)))
    write(os.path.join(outdir, "kindle", "tensor_methods.inc"),
          "// Generated by tools/gen_ops.py from csrc/ops/ops.yaml. Do not edit.\n"
          + "\n".join(method_decls) + "\n")
    schemas = []  # for vmap's batching rules: each bound op's arguments and rule family
    for op in ops:
        if not op.python:
            continue
        args = ", ".join(f'{{"{a.name}", "{a.type}", {str(a.kw_only).lower()}}}' for a in op.args)
        schemas.append(f'  {{"{op.name}", "{op.vmap or ""}", {op.returns_self and "true" or "false"}, {{{args}}}}},')
    write(os.path.join(outdir, "bind_ops.cpp"), BIND_CPP.format(binds="\n".join(binds), schemas="\n".join(schemas)))
    aops, ndecls, nodes, wrappers = gen_autograd.build(ops, entries)
    write(os.path.join(outdir, "native_ops.h"), gen_autograd.NATIVE_H.format(decls="\n".join(ndecls)))
    write(os.path.join(outdir, "autograd_ops.cpp"),
          gen_autograd.AUTOGRAD_CPP.format(nodes="\n".join(nodes), wrappers="\n".join(wrappers)))
    codes_h, elementwise_cpp, into_h = gen_kernels.build(ops, entries, {a.op.name for a in aops})
    write(os.path.join(outdir, "elementwise_codes.h"), codes_h)
    write(os.path.join(outdir, "elementwise_into.h"), into_h)
    write(os.path.join(outdir, "elementwise_ops.cpp"), elementwise_cpp)


def gen_binding(op, variant, varargs=None, into=False):
    args = op.args
    is_method = variant == "method"
    params, pass_args, arg_specs = [], [], []
    kw_emitted = False
    for i, a in enumerate(args):
        btype, how = TYPES[a.type][1], TYPES[a.type][2]
        if i == 0 and (is_method or (op.returns_self and a.type == "Tensor")):
            params.append("nb::handle_t<Tensor> self_obj")
            pass_args.append("self")
            if not is_method:
                arg_specs.append(f'nb::arg("{"input" if a.name == "self" else a.name}")')
            continue
        pyname = "input" if (a.name == "self" and not is_method) else a.name
        if a.name == varargs:
            params.append(f"nb::args {a.name}")
            conv = "args_to_dims" if a.type == "int[]" else "args_to_tensors"
            pass_args.append(f"{conv}({a.name})" + (".dims" if a.type == "int[]" else ""))
            arg_specs.append(f'nb::arg("{pyname}")')
            kw_emitted = True  # what follows *args is keyword-only already
            continue
        # TensorArg (bind_common.h): a Python number or NumPy array converts where numbers are
        # allowed (elsewhere the spec below says noconvert); it keeps its Python object
        if a.type in ("Tensor", "Tensor?"):
            btype, how = {"Tensor": ("const TensorArg&", "{}.get()"),
                          "Tensor?": ("const std::optional<TensorArg>&", "opt_tensor({})")}[a.type]
        params.append(f"{btype} {a.name}")
        pass_args.append(how.format(a.name))
        if a.kw_only and not kw_emitted:
            arg_specs.append("nb::kw_only()")
            kw_emitted = True
        spec = f'nb::arg("{pyname}")'
        if a.type in ("Tensor", "Tensor?") and op.numbers is not None and a.name not in op.numbers:
            spec += ".noconvert()"  # a Python number here is a TypeError, as in PyTorch
        if a.type in ("Tensor?", "Scalar?", "int?", "int[]?", "float?", "bool?", "ScalarType?",
                      "Device?", "str?", "Generator?"):
            spec += ".none()"
        d = a.py_default()
        if d is not None:
            spec += f" = {d}"
        arg_specs.append(spec)
    # a factory without a device argument makes its tensor on the default device (kindle.device(...)
    # as a context manager, set_default_device), as torch's factories do; *_like ops follow their input
    if variant != "method" and not any(a.type in ("Tensor", "Tensor?", "Tensor[]") for a in args):
        pass_args = [f"factory_device({p})" if a.name == "device" else p for a, p in zip(args, pass_args)]
    # every op called from Python is a profiler event (kindle/profiler.h: one load while off);
    # its tensor arguments are described for record_shapes (other arguments show as [], as in torch)
    described = []
    for a, p in zip(args, pass_args):
        described.append(p if a.type in ("Tensor", "Tensor?", "Tensor[]") and a.name != varargs else "0")
    body = f"kindle::{op.name}({', '.join(pass_args)})"
    if op.autocast:  # kindle/autocast.h: the arguments cast under the op's policy in an autocast region
        policy = {"lower": "Lower", "fp32": "Fp32", "promote": "Promote"}[op.autocast]
        body = (f"kindle::autocast::call(kindle::autocast::Policy::{policy}, [&](const auto&... a_) -> "
                f"decltype(auto) {{ return kindle::{op.name}(a_...); }}, {', '.join(pass_args)})")
    call = (f"kindle::profiler::call(\"aten::{op.aten}\", [&]() -> decltype(auto) {{ "
            f"return {body}; }}" + "".join(", " + d for d in described) + ")")
    takes_handle = is_method or (op.returns_self and op.args and op.args[0].type == "Tensor")
    pre = "const Tensor& self = *nb::inst_ptr<Tensor>(self_obj); " if takes_handle else ""
    # out=: every function returning new tensors also writes into given ones, as in PyTorch
    pair = op.ret_names is not None and len(op.ret_names) == 2 and all(t == "Tensor" for t in op.ret_types)
    has_out = (variant == "function" and (op.ret == "Tensor" or pair) and not op.returns_self
               and not any(a.name == "out" for a in op.args))
    factory = variant != "method" and any(a.name == "device" for a in op.args)
    extra = []
    if has_out:
        params.append("nb::handle out")
        extra.append('nb::arg("out").none() = nb::none()')
    if factory:  # torch's layout / pin_memory / memory_format keywords
        params += ["nb::handle layout", "bool pin_memory", "nb::handle memory_format"]
        extra += ['nb::arg("layout").none() = nb::none()', 'nb::arg("pin_memory") = false',
                  'nb::arg("memory_format").none() = nb::none()']
        pre += f'check_factory_options(layout, memory_format, "{op.name}"); '
        if op.ret == "Tensor":
            like = ", &static_cast<const Tensor&>(self)" if op.name.endswith("_like") else ""  # preserve_format follows the input
            call = f'apply_memory_format({call}, memory_format, "{op.name}"{like})'
    if extra and not kw_emitted:
        arg_specs.append("nb::kw_only()")
    arg_specs += extra
    if has_out and pair:
        names = ", ".join(f'"{n}"' for n in op.ret_names)
        body = (f'{pre}if (out.is_none()) return to_named_tuple("{op.name}", {{{names}}}, {call}); '
                f'return write_out(out, "{op.name}", {{{names}}}, {call}, "{op.name}");')
    elif has_out:
        direct = ""
        if into and not op.autocast:  # out= computed in place (a copy pass and a temporary less)
            tensors = [p for a, p in zip(args, pass_args) if a.type == "Tensor"]
            into_call = (f"kindle::profiler::call(\"aten::{op.aten}\", [&]() -> const Tensor& {{ "
                         f"kindle::{op.name}_into({', '.join(pass_args)}, *o_); return *o_; }}"
                         + "".join(", " + d for d in described) + ")")
            direct = (f'if (const Tensor* o_ = out_in_place(out, {{{", ".join("&" + t for t in tensors)}}})) '
                      f'{{ {into_call}; return nb::borrow(out); }} ')
        body = (f'{pre}if (out.is_none()) return nb::cast({call}); {direct}'
                f'return write_out(out, {call}, "{op.name}");')
    elif op.returns_self and takes_handle:
        body = f"{pre}{call}; return nb::borrow(self_obj);"
        ret_policy = ""
    elif op.ret_names:
        names = ", ".join(f'"{n}"' for n in op.ret_names)
        body = f'{pre}return to_named_tuple("{op.name}", {{{names}}}, {call});'
    elif op.ret == "Tensor[]":
        body = f"{pre}return nb::tuple(nb::cast({call}));"
    elif is_method and op.ret == "Tensor" and not has_out:
        body = f"{pre}return self_or_new(self_obj, {call});"
    else:
        body = f"{pre}return {call};"
    target = "cls" if is_method else ("nn" if variant == "nn" else "m")
    specs = "".join(", " + s for s in arg_specs)
    # __torch_function__ (python/torch_function.h): with an overriding argument (or in a
    # TorchFunctionMode: every binding, factories too) the call is rebuilt from the arguments as
    # func(*positional, **keywords) and handed to kindle.overrides
    sources, rebuild = [], []
    for i, a in enumerate(args):
        pyname = "input" if (a.name == "self" and not is_method) else a.name
        if i == 0 and takes_handle:
            value = "self_obj"
            sources.append("self_obj.ptr()")
        elif a.name == varargs:
            rebuild.append(f"c_.spread({a.name});")
            sources.append(f"{a.name}.ptr()")
            continue
        elif a.type == "Tensor":
            value = f"nb::handle({a.name}.src)"
            sources.append(f"{a.name}.src")
        elif a.type == "Tensor?":
            value = f"py_source({a.name})"
            sources.append(f"py_source({a.name}).ptr()")
        elif a.type in ("Tensor[]", "Tensor?[]"):
            value = f"nb::handle({a.name}.src)"
            sources.append(f"{a.name}.src")
        elif a.type in ("int[]", "int[]?"):  # as given: an int stays an int
            value = f"py_source({a.name})"
        else:
            value = f"nb::cast({a.name})"
        positional = not a.kw_only and not (varargs and any(b.name == varargs for b in args[:i]))
        rebuild.append(f"c_.arg({value});" if positional else f'c_.kwarg("{pyname}", {value});')
    if has_out:
        rebuild.append("c_.out(out);")
    if factory:
        rebuild += ['c_.kwarg("layout", layout);', 'c_.kwarg("pin_memory", nb::cast(pin_memory));',
                    'c_.kwarg("memory_format", memory_format);']
    where = "t" if is_method else ("n" if variant == "nn" else "m")
    tf = (f"if (torch_function_hint()) [[unlikely]] {{ if (override_in({{{', '.join(sources)}}})) {{ "
          f"TorchFunctionCall c_; {' '.join(rebuild)} "
          f"return c_.dispatch(torch_function_target('{where}', \"{op.name}\")); }} }} ")
    return (f'  {target}.def("{op.name}", []({", ".join(params)}) -> nb::object {{ {tf}{wrap_return(body)} }}'
            f'{specs});')


def wrap_return(body):
    """The body with each of its own `return X;` (not those of lambdas inside it) as
    `return to_py(X);`: the binding returns nb::object, so that its __torch_function__ branch
    can return whatever the override returned (to_py: nb::cast, with None for an undefined tensor)."""
    out, depth, i = [], 0, 0
    while i < len(body):
        c = body[i]
        if c in "{(":
            depth += 1
        elif c in "})":
            depth -= 1
        if depth == 0 and body.startswith("return ", i):
            j, d = i + len("return "), 0
            while not (body[j] == ";" and d == 0):
                d += body[j] in "{(" or -(body[j] in "})")
                j += 1
            out.append("return to_py(" + body[i + len("return "):j] + ");")
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def write(path, text):
    # Leave an unchanged file alone so that the build does not recompile what depends on it.
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


OPS_H = """// Generated by tools/gen_ops.py from csrc/ops/ops.yaml. Do not edit.
#pragma once
#include "kindle/tensor.h"
#include "kindle/random.h"

namespace kindle {{

{decls}

{method_defs}

}}  // namespace kindle
"""

BIND_CPP = """// Generated by tools/gen_ops.py from csrc/ops/ops.yaml. Do not edit.
#include "elementwise_into.h"
#include "kindle/autocast.h"
#include "kindle/profiler.h"
#include "python/bind_common.h"
#include "python/torch_function.h"

namespace kindle::python {{
namespace {{
struct SchemaArg {{
  const char* name;
  const char* type;
  bool kw_only;
}};
struct Schema {{
  const char* name;
  const char* vmap;  // the batching rule family ("" where the schema decides)
  bool inplace;
  std::vector<SchemaArg> args;
}};
}}  // namespace

void bind_generated_ops(nb::module_& m, nb::class_<Tensor>& cls) {{
  nb::module_ nn = m.def_submodule("_nn", "torch.nn.functional's ops (wrapped by kindle.nn.functional)");
{binds}
  // _op_schemas: name -> [(vmap family, returns self, ((arg, type, keyword only), ...)) per overload]
  static const Schema schemas[] = {{
{schemas}
  }};
  nb::dict table;
  for (const Schema& s : schemas) {{
    nb::list args;
    for (const SchemaArg& a : s.args) args.append(nb::make_tuple(a.name, a.type, a.kw_only));
    nb::str key(s.name);
    if (!table.contains(key)) table[key] = nb::list();
    nb::borrow<nb::list>(table[key]).append(nb::make_tuple(s.vmap, s.inplace, nb::tuple(args)));
  }}
  m.attr("_op_schemas") = table;
}}

}}  // namespace kindle::python
"""

if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        entries = yaml.safe_load(f)
    gen([Op(e) for e in entries], entries, sys.argv[2])
