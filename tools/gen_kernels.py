"""Generates the elementwise kernel families' op codes, their dtype rules and the plain ops that
call them, from the `kernel:` entries of ops.yaml (see the keys at the top of ops.yaml).

Outputs (into the build folder):
  elementwise_codes.h    enum UnaryOp / BinaryOp, each code's KernelRule (name, the dtype
                         classes it computes, promotion, output dtype, PyTorch's refusals)
  elementwise_ops.cpp    kindle::<op> and its in-place form for every `kernel:` op not marked
                         `manual: true`: a call of unary() / binary() (csrc/ops/elementwise.h)
"""
import sys

CLASSES = ("bool", "integral", "floating", "complex")
FAMILIES = {"unary": "UnaryOp", "binary": "BinaryOp"}
OUTPUTS = {None: "KernelOutput::Same", "bool": "KernelOutput::Bool", "real": "KernelOutput::Real"}
EXCEPTIONS = ("RuntimeError", "NotImplementedError", "TypeError", "ValueError")


def fail(msg):
    sys.exit(f"gen_kernels: {msg}")


class Code:
    """One op code of a family and what its kernel computes."""

    def __init__(self, op_name, family, code, spec):
        self.family, self.code, self.name = family, code, spec.get("name", op_name)
        dtypes = spec.get("dtypes")
        if not isinstance(dtypes, list) or not dtypes:
            fail(f"{op_name}: `dtypes:` must list dtype classes ({', '.join(CLASSES)}, all)")
        classes = set()
        for c in dtypes:
            if c == "all":
                classes |= {"bool", "integral", "floating"}
            elif c in CLASSES:
                classes.add(c)
            else:
                fail(f"{op_name}: unknown dtype class '{c}'")
        self.classes = classes
        self.promote = spec.get("promote")
        if self.promote not in (None, "float"):
            fail(f"{op_name}: promote must be 'float'")
        self.output = spec.get("output")
        if self.output not in OUTPUTS:
            fail(f"{op_name}: output must be bool or real")
        self.refuse = spec.get("refuse") or {}
        for c, msg in self.refuse.items():
            if c not in CLASSES or c in classes:
                fail(f"{op_name}: refuse names '{c}', which is not a class it refuses")
            if msg.split(":", 1)[0] not in EXCEPTIONS:
                fail(f"{op_name}: a refusal starts with its exception type ({', '.join(EXCEPTIONS)}): {msg}")

    def rule(self):
        bits = sum(1 << i for i, c in enumerate(CLASSES) if c in self.classes)
        refuse = ", ".join(cpp_str(self.refuse[c]) if c in self.refuse else "nullptr" for c in CLASSES)
        classes = " ".join(c for c in CLASSES if c in self.classes)
        return (f'  {{"{self.name}", {bits:#06b}, {str(self.promote == "float").lower()}, '
                f'{OUTPUTS[self.output]}, {{{refuse}}}}},  // {self.code}: {classes}')


def cpp_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build(ops, entries, native_names):
    """(elementwise_codes.h, elementwise_ops.cpp) texts."""
    codes = {f: {} for f in FAMILIES}  # family -> code -> Code, in the order of ops.yaml
    ops_by_name = {op.name: op for op in ops if op.overload is None}
    defs = []
    for op, e in zip(ops, entries):
        if "kernel" not in e:
            continue
        try:
            family, code = e["kernel"].split()
        except ValueError:
            fail(f"{op.name}: kernel must be '<family> <Code>', got '{e['kernel']}'")
        if family not in FAMILIES:
            fail(f"{op.name}: unknown kernel family '{family}'")
        mine = [(code, e)] + [(m["code"], m) for m in e.get("more_kernels", [])]
        for c, spec in mine:
            new = Code(op.name, family, c, spec)
            old = codes[family].get(c)
            if old and (old.classes, old.promote, old.output, old.refuse) != (
                    new.classes, new.promote, new.output, new.refuse):
                fail(f"{op.name}: {family} {c} is declared twice with different dtype rules")
            codes[family].setdefault(c, new)
        if e.get("manual"):
            continue
        defs += gen_op(op, family, code, ops_by_name.get(op.name + "_"), native_names)
    enums, tables = [], []
    for family, enum in FAMILIES.items():
        cs = list(codes[family].values())
        enums.append(f"enum class {enum} : uint8_t {{ {', '.join(c.code for c in cs)} }};")
        tables.append(f"inline constexpr KernelRule k{enum}Rules[] = {{\n" + "\n".join(c.rule() for c in cs) + "\n};\n"
                      f"inline const KernelRule& kernel_rule({enum} op) {{ return k{enum}Rules[int(op)]; }}\n"
                      f"inline const char* op_code_name({enum} op) {{ return k{enum}Rules[int(op)].name; }}")
    into = [d.split(" {")[0] + ";" for d in defs if d.startswith("void ")]
    return (CODES_H.format(enums="\n".join(enums), tables="\n\n".join(tables)),
            OPS_CPP.format(defs="\n".join(defs)), INTO_H.format(decls="\n".join(into)))


# Hand-written ops with an `<op>_into` form (ops/elementwise.cpp; declared in INTO_H).
MANUAL_INTO = {"add", "sub", "div"}


def into_ops(ops, entries):
    """The ops with an `<op>_into` form: those gen_op writes, and MANUAL_INTO."""
    return {op.name for op, e in zip(ops, entries) if "kernel" in e and not e.get("manual")} | MANUAL_INTO


def gen_op(op, family, code, inplace, native_names):
    """kindle::<op> (native_<op> where autograd wraps it) and its in-place form."""
    want = ["Tensor"] * (1 if family == "unary" else 2)
    if [a.type for a in op.args] != want or op.ret != "Tensor":
        fail(f"{op.name}: a generated {family} op takes {len(want)} tensor(s) and returns one; "
             "mark it `manual: true` and write it")
    names = [a.name for a in op.args]
    fn = FAMILIES[family].replace("Op", "").lower()
    enum = f"{FAMILIES[family]}::{code}"

    def prefix(name):
        return "native_" if name in native_names else ""
    params = ", ".join(f"const Tensor& {n}" for n in names)
    out = [f'Tensor {prefix(op.name)}{op.name}({params}) {{ return {fn}("{op.name}", {", ".join(names)}, {enum}); }}',
           f'void {op.name}_into({params}, const Tensor& out) {{ {fn}("{op.name}", {", ".join(names)}, {enum}, out); }}']
    if inplace is not None:
        if [a.type for a in inplace.args] != want:
            fail(f"{inplace.name}: expected the arguments of {op.name}")
        n = [a.name for a in inplace.args]
        out.append(f'const Tensor& {prefix(inplace.name)}{inplace.name}({", ".join(f"const Tensor& {x}" for x in n)}) '
                   f'{{ {fn}("{inplace.name}", {", ".join(n)}, {enum}, {n[0]}); return {n[0]}; }}')
    return out


CODES_H = """// Generated by tools/gen_kernels.py from csrc/ops/ops.yaml. Do not edit.
// The op codes of the elementwise kernel families and what each one computes. Plain data with
// no dependencies, so that device code compiled by another compiler (nvcc) reads the same table.
#pragma once
#include <cstdint>

namespace kindle {{

{enums}

// The dtype classes of ops.yaml's `dtypes:`.
enum class DTypeClass : uint8_t {{ Bool, Integral, Floating, Complex }};
constexpr uint8_t class_bit(DTypeClass c) {{ return uint8_t(1u << int(c)); }}
enum class KernelOutput : uint8_t {{ Same, Bool, Real }};

struct KernelRule {{
  const char* name;        // the op, in messages
  uint8_t dtypes;          // class_bit() of each class the kernel computes
  bool promote_float;      // bool and integer inputs compute in the default float dtype
  KernelOutput output;     // the result's dtype: the computation's, bool, or complex's real type
  const char* refuse[4];   // per DTypeClass: "Type: message", PyTorch's refusal, or nullptr
}};

{tables}

}}  // namespace kindle
"""

INTO_H = """// Generated by tools/gen_kernels.py from csrc/ops/ops.yaml. Do not edit.
// `<op>_into(inputs..., out)`: the elementwise op written straight into `out` (which has the
// broadcast shape; another dtype is cast to, as by an in-place op), for Python's out=.
#pragma once
#include <optional>
#include <string_view>

#include "kindle/scalar.h"
#include "kindle/tensor.h"

namespace kindle {{

{decls}
// hand-written (ops/elementwise.cpp)
void add_into(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out);
void sub_into(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out);
void div_into(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode, const Tensor& out);

}}  // namespace kindle
"""

OPS_CPP = """// Generated by tools/gen_kernels.py from csrc/ops/ops.yaml. Do not edit.
// The elementwise ops with nothing but their kernel code and dtype rule (ops.yaml `kernel:`).
#include "elementwise_into.h"
#include "native_ops.h"
#include "ops/elementwise.h"

namespace kindle {{

{defs}

}}  // namespace kindle
"""
