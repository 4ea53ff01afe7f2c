"""CPU tier: a model of the streamed split_row's producer/consumer protocol cannot deadlock.

csrc/softmax/softmax_split_row_stream_sm90a.cu, per block of a persistent grid: a producer takes job
tickets (row, slice) in order and pushes the jobs' passes, chunk by chunk, into an S-stage ring; the
consumers take the passes in ring order. Pass 1 folds a slice and publishes its statistics; pass 2
first waits until every slice of the row has published (the exchange), then reads the slice again.
With one slice per row a job's pass 2 follows its pass 1. With several, the passes run one out of step
(pass 1 of job k, then pass 2 of job k - 1), and the producer takes ticket k + 1 only once its
consumers are past job k - 1's exchange. The workspace resets itself: the draw of the launch's last
ticket zeroes the ticket counter; the row counters only count arrivals; each block's producer counts
the block's exit once it has drawn its end ticket and its consumers are past their last exchange, and
the consumers of the last block out zero every row counter and the exit counter when they reach the
end marker. This model runs the blocks under random interleavings and checks that every block reaches
the end of its stream with every counter back at zero, and that no row counter is touched after the
reset. The negative control drops the producer's wait for the exchange, as v10 did: a producer whose
slice fits the ring can then queue the same row's next slice behind the one waiting for it, and some
schedule deadlocks (or the exit, counted too early, resets a row still exchanging), so the test can
fail. (A model of the design, not of the PTX: a change to the kernel's stream order or exchange belongs
here too.)
"""
import random
import unittest

GRID = 132


def run_protocol(rows, slices, chunks_per_slice, stages, seed, wait_for_exchange=True, grid=GRID, run_to_block=False):
    """True when every block of a `grid`-block launch finishes; False when no agent can move (deadlock).
    AssertionError when a counter is touched after its reset or left nonzero. Each round visits the agents
    in a random order, one move each, or (run_to_block) as many moves as each can make."""
    rnd = random.Random(seed)
    jobs, next_ticket = rows * slices, 0
    arrivals, exits, reset = [0] * rows, 0, False
    last_out = None  # the block whose producer counted the launch's last exit
    lagged = slices > 1
    exchanged = set()  # (row, slice): the consumers holding that job are past its exchange
    rings = [[] for _ in range(grid)]
    queued = [[] for _ in range(grid)]  # the producer's items not yet in the ring (or waits, exits)
    pending = [None] * grid             # lagged: the job whose pass 2 follows the next job's pass 1
    exchanges_passed = [0] * grid       # the `exchanged` mbarrier's completed phases
    exchanges_queued = [0] * grid       # pass 2s of multi-slice jobs the producer has queued
    producer_done, finished = [False] * grid, [False] * grid

    def passes(job, pass_):
        return [(job, pass_, i) for i in range(chunks_per_slice)]

    def step(agent):
        """One move of one agent (a block's producer thread or its consumer warps); False if it cannot move."""
        nonlocal next_ticket, arrivals, exits, reset, last_out
        b = agent % grid
        if agent < grid:  # the producer thread of block b
            if producer_done[b]:
                return False
            if not queued[b]:
                ticket, next_ticket = next_ticket, next_ticket + 1
                if ticket == jobs + grid - 1:  # the last ticket the launch hands out
                    next_ticket = 0
                end = ticket >= jobs
                job = None if end else divmod(ticket, slices)
                if job is not None:
                    queued[b] += passes(job, 0) + ([] if lagged else passes(job, 1))
                if pending[b] is not None:
                    queued[b] += passes(pending[b], 1)
                    exchanges_queued[b] += 1
                    if wait_for_exchange:
                        queued[b].append(("await", exchanges_queued[b]))
                if end:
                    queued[b] += (["exit"] if lagged else []) + ["end"]
                elif lagged:
                    pending[b] = job
            item = queued[b][0]
            if isinstance(item, tuple) and item[0] == "await":
                if exchanges_passed[b] < item[1]:
                    return False  # its consumers are not past that exchange yet
                queued[b].pop(0)
            elif item == "exit":  # count_exit: this block is done with the workspace
                queued[b].pop(0)
                exits += 1
                if exits == grid:
                    last_out = b
            else:
                if len(rings[b]) >= stages:
                    return False
                rings[b].append(queued[b].pop(0))
                producer_done[b] = item == "end"
            return True
        else:  # the consumer warps of block b
            if finished[b] or not rings[b]:
                return False
            item = rings[b][0]
            if item == "end":
                finished[b] = True
                if b == last_out:  # zero_workspace
                    arrivals, exits, reset = [0] * rows, 0, True
            else:
                (row, slice_), pass_, i = item
                if lagged and pass_ == 1 and i == 0 and (row, slice_) not in exchanged:
                    assert not reset, f"row {row}: exchange after the reset"
                    if arrivals[row] < slices:
                        return False  # the exchange: wait for the row's other slices
                    exchanged.add((row, slice_))
                    exchanges_passed[b] += 1
                if lagged and pass_ == 0 and i == chunks_per_slice - 1:
                    assert not reset, f"row {row}: arrival after the reset"
                    arrivals[row] += 1  # publish this slice's statistics
            rings[b].pop(0)
            return True

    while not all(finished):
        progressed = False
        for agent in rnd.sample(range(2 * grid), 2 * grid):
            while step(agent):
                progressed = True
                if not run_to_block:
                    break
        if not progressed:
            return False
    assert next_ticket == 0, "the ticket counter was not reset"
    assert not any(arrivals) and exits == 0, "row or exit counters left nonzero"
    assert slices == 1 or reset, "the workspace was never reset"
    return True


class SplitRowProtocolTest(unittest.TestCase):
    CASES = [  # rows, slices, 16 KiB chunks per slice, ring stages (forward 12, backward 6)
        (5, 27, 1, 12),    # 5x70000-like: 135 tickets, slices far shorter than the ring
        (37, 4, 8, 12),    # fp32 37x131072 forward: 148 tickets, 8-chunk slices
        (64, 6, 6, 6),     # session 6's hang: 1024x131072 backward at 6 slices, slice = ring
        (8, 16, 16, 12),   # fp32 32x1M forward: slices longer than the ring
        (1, GRID, 2, 12),  # one row over every block
        (32, 16, 16, 12),  # fp32 32x1M forward since slices are at most 256 KiB: 16 slices, rows straddle rounds
        (4, 128, 8, 6),    # fp32 4x4M backward since then: 128 slices of 8 chunks per operand
        (300, 1, 3, 6),    # one slice per row: no exchange
    ]

    def test_every_block_reaches_the_end(self):
        for rows, slices, chunks, stages in self.CASES:
            for seed in range(3):
                for run_to_block in (False, True):
                    with self.subTest(rows=rows, slices=slices, chunks=chunks, stages=stages, seed=seed,
                                      run_to_block=run_to_block):
                        self.assertTrue(run_protocol(rows, slices, chunks, stages, seed, run_to_block=run_to_block))

    def test_negative_control_without_the_exchange_wait_fails(self):
        """Without the wait a producer that runs ahead takes a third slice of the row whose exchange its consumers
        wait on, behind that exchange in its ring, and the launch deadlocks (or the exit, counted before the
        block's last exchange, resets the workspace under a row still exchanging). Run-to-block schedules catch
        it in every seed; random one-move schedules rarely let a producer run that far ahead."""
        def outcome(seed):
            try:
                return run_protocol(5, 27, 1, 12, seed, wait_for_exchange=False, run_to_block=True)
            except AssertionError:
                return False
        outcomes = [outcome(seed) for seed in range(10)]
        self.assertIn(False, outcomes,
                      "every schedule finished cleanly without the wait: the model cannot catch the bug")


if __name__ == "__main__":
    unittest.main()
