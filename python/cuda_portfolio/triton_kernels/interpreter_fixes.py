"""Work-arounds for the Triton 3.6 interpreter (TRITON_INTERPRET=1: kernels run on CPU tensors in
numpy), applied when this package is imported under it; the compiled path never sees them."""
import inspect

import numpy as np


def fix_triton_36_interpreter():
    """Two bugs of the Triton 3.6 interpreter that our kernels hit (the compiled path is unaffected):
    scalars are 1-element arrays, so a loop with runtime bounds fails under numpy >= 2.4 (`int()` of
    a 1-d array), and tl.dot multiplies bf16 operands as their raw uint16 bits."""
    from triton.runtime import interpreter

    if getattr(interpreter, "_cuda_portfolio_fixed", False):
        return
    patch_tensor = interpreter._patch_lang_tensor
    if list(inspect.signature(patch_tensor).parameters) != ["tensor", "scope"]:
        return  # another interpreter layout (Triton < 3.5): these patches do not apply

    def patched_tensor(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    def as_float32(handle):
        if not handle.dtype.is_bf16():
            return handle
        bits = handle.data.astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), interpreter.tl.float32)

    create_dot = interpreter.InterpreterBuilder.create_dot

    def patched_dot(self, a, b, d, *args):
        return create_dot(self, as_float32(a), as_float32(b), d, *args)

    interpreter._patch_lang_tensor = patched_tensor
    interpreter.InterpreterBuilder.create_dot = patched_dot
    interpreter._cuda_portfolio_fixed = True

