"""The input/output signature of an exported graph, with torch.export.graph_signature's types.

An exported graph is functional in the sense torch.export defines: parameters, buffers and
constant tensors are graph inputs (placeholders) rather than attribute reads, and every input
and output is described by a spec saying what it is. Kindle's graphs keep in-place buffer
updates (batch norm's running statistics in training mode) as in-place calls, as torch's
pre-dispatch IR does, so no BUFFER_MUTATION outputs are produced.
"""
import dataclasses
from enum import Enum, auto
from types import MappingProxyType
from typing import Optional, Union

__all__ = ["ConstantArgument", "CustomObjArgument", "ExportBackwardSignature", "ExportGraphSignature", "InputKind",
           "InputSpec", "OutputKind", "OutputSpec", "SymIntArgument", "SymFloatArgument", "SymBoolArgument",
           "TensorArgument", "TokenArgument"]


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class TokenArgument:
    name: str


@dataclasses.dataclass
class SymIntArgument:
    name: str


@dataclasses.dataclass
class SymFloatArgument:
    name: str


@dataclasses.dataclass
class SymBoolArgument:
    name: str


@dataclasses.dataclass
class CustomObjArgument:
    name: str
    class_fqn: str
    fake_val: object = None


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: Union[int, float, bool, str, None]


_ARGUMENT_TYPES = (TensorArgument, TokenArgument, SymIntArgument, SymFloatArgument, SymBoolArgument,
                   CustomObjArgument, ConstantArgument)
_NAMED = (TensorArgument, SymIntArgument, SymFloatArgument, SymBoolArgument, CustomObjArgument, TokenArgument)


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    PARAMETER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: Optional[str]
    persistent: Optional[bool] = None

    def __post_init__(self):
        if self.kind == InputKind.BUFFER and self.persistent is None:
            raise AssertionError("Failed to specify persistent flag on BUFFER.")
        if not isinstance(self.arg, _ARGUMENT_TYPES):
            raise AssertionError(f"expected valid arg type, got {type(self.arg)}")

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: Optional[str]

    def __post_init__(self):
        if not isinstance(self.arg, _ARGUMENT_TYPES):
            raise AssertionError(f"expected valid arg type, got {self.arg}")

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportBackwardSignature:
    gradients_to_parameters: dict
    gradients_to_user_inputs: dict
    loss_output: str


def _frozen(items):
    return MappingProxyType(dict(items))


@dataclasses.dataclass
class ExportGraphSignature:
    """How the graph's placeholders and outputs relate to the original module: inputs are
    [*parameters, *buffers, *constant tensors, *flattened user inputs], outputs the flattened
    user outputs."""

    input_specs: list
    output_specs: list

    def _targets(self, kind, persistent=None):
        return tuple(s.target for s in self.input_specs if s.kind == kind and isinstance(s.target, str)
                     and (persistent is None or s.persistent is persistent))

    @property
    def parameters(self):
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self):
        return self._targets(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self):
        return self._targets(InputKind.BUFFER, persistent=False)

    @property
    def lifted_tensor_constants(self):
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def lifted_custom_objs(self):
        return self._targets(InputKind.CUSTOM_OBJ)

    @property
    def user_inputs(self):
        return tuple(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name
                     for s in self.input_specs if s.kind == InputKind.USER_INPUT)

    @property
    def user_outputs(self):
        return tuple(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name
                     for s in self.output_specs if s.kind in (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT))

    def _inputs_to(self, kind):
        return _frozen((s.arg.name, s.target) for s in self.input_specs
                       if s.kind == kind and isinstance(s.arg, _NAMED) and isinstance(s.target, str))

    @property
    def inputs_to_parameters(self):
        return self._inputs_to(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self):
        return self._inputs_to(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self):
        return self._inputs_to(InputKind.CONSTANT_TENSOR)

    @property
    def inputs_to_lifted_custom_objs(self):
        return self._inputs_to(InputKind.CUSTOM_OBJ)

    def _outputs_to(self, kind):
        return _frozen((s.arg.name, s.target) for s in self.output_specs if s.kind == kind)

    @property
    def buffers_to_mutate(self):
        return self._outputs_to(OutputKind.BUFFER_MUTATION)

    @property
    def parameters_to_mutate(self):
        return self._outputs_to(OutputKind.PARAMETER_MUTATION)

    @property
    def user_inputs_to_mutate(self):
        return self._outputs_to(OutputKind.USER_INPUT_MUTATION)

    @property
    def backward_signature(self):
        return None

    @property
    def assertion_dep_token(self):
        return None

    @property
    def input_tokens(self):
        return tuple(s.arg.name for s in self.input_specs if s.kind == InputKind.TOKEN)

    @property
    def output_tokens(self):
        return tuple(s.arg.name for s in self.output_specs if s.kind == OutputKind.TOKEN)

    def replace_all_uses(self, old, new):
        """Renames graph value `old` to `new` wherever a spec refers to it."""
        if not isinstance(old, str) or not isinstance(new, str):
            raise AssertionError("replace_all_uses expects node names (str)")
        for s in list(self.input_specs) + list(self.output_specs):
            if isinstance(s.arg, _NAMED) and s.arg.name == old:
                s.arg.name = new

    def get_replace_hook(self, replace_inputs=False):
        def hook(old, new, user):
            if user.op == "output" or (replace_inputs and old.op == "placeholder"):
                self.replace_all_uses(old.name, new)
        return hook

    def __str__(self):
        inputs = "\n".join(str(s) for s in self.input_specs)
        outputs = "\n".join(str(s) for s in self.output_specs)
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"
