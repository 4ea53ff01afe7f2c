"""The Triton split_row's form forced, for the tests that check each form where its rule (split_row_config, by rows
in flight) may pick the other."""
from unittest import mock


def split_row_forced(form: str):
    """A patch that makes the Triton split_row launch `form` ("held" or "streamed") wherever it can: the held form
    needs rows moved in whole 16-byte units, and off the GPU rows of one chunk."""
    from cuda_portfolio.triton_kernels import softmax as triton_softmax

    def pick(streamed, cols, dtype, direction, whole_units, device):
        held = triton_softmax.held_config(cols, dtype, direction)
        one_chunk = cols <= held.block_n
        return held if form == "held" and whole_units and (one_chunk or device.type == "cuda") else streamed

    return mock.patch.object(triton_softmax, "split_row_config", pick)
