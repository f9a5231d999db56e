"""The PyTorch frontend: `torch.export` programs become `nn` IR in `func.func @main`.

    module = from_torch(model, (x,))                          # export, decompose, import
    module = from_torch(exported_program)                     # torch.export.load("m.pt2")
    module = import_exported_program(ep, input_shapes={"x": (1, 3, 224, 224)})

`importer` walks the program's graph (its signature decides what is an input, a
parameter, a buffer, an output); `converters/` holds the table of ATen overload -> nn
converters; `pt2` reads `.pt2` files for byoc-opt and byoc-run. The `torch.compile`
backend, which drives `byoc.build`, sits above the driver: `byoc/tools/torch_backend.py`. torch itself is imported only when a program is imported.
"""

from byoc.frontend.torch.converters import CONVERTERS, SUPPORTED_OPS
from byoc.frontend.torch.errors import TorchImportError, UnsupportedTorchError
from byoc.frontend.torch.importer import from_torch, import_exported_program

__all__ = [
    "CONVERTERS",
    "SUPPORTED_OPS",
    "TorchImportError",
    "UnsupportedTorchError",
    "from_torch",
    "import_exported_program",
]
