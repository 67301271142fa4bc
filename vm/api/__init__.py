"""The front door: ``vm.load(path)`` opens any program file and returns a ``vm.Model``.

    model = vm.load("resnet18.pt")              # or .ir (compiled now) or .irbc
    model(x)  /  model(x=x)                     # by position or by input name
    model.inputs, model.outputs                 # NodeArg(name, type, dtype, shape), as ONNX Runtime
    model.run(None, {"x": x})                   # a list, as InferenceSession.run
    model.save("resnet18.irbc")

This room sits above both packages: opening a ``.pt`` or an ``.ir`` compiles it, so
``vm.api.open`` imports ``compiler`` (only then: opening an ``.irbc`` for the
interpreter imports nothing from it).  ``open.py`` reads a file of any kind (the kind
decided once, by ``vm.files.kinds``) into a program and its weights, for the API and both
command lines; ``model.py`` is the model object; ``signature.py`` the inputs and outputs
it lists; ``static.py`` the static runtime's front door (IR text compiled, a program
specialized for the weights it meets, before ``vm.static`` builds its module).
"""

from vm.api.model import Model, NodeArg
from vm.api.open import load

__all__ = ["Model", "NodeArg", "load"]
